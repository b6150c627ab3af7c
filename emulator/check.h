#ifndef EMULATOR_CHECK_H_
#define EMULATOR_CHECK_H_

// Judging another backend's results against the contract.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "emulator/op.h"

namespace h3 {

// The set of `out` values the contract allows for element (m, n), as the
// closed interval [lo, hi] in the bf16 total order (-NaN < -Inf < ... < -0 <
// +0 < ... < +Inf < 0x7FFF). Computed from the exact accumulator and the
// section-8 bound, pushed through the monotone epilogue at both ends (and at
// +-0 when the accumulator interval contains zero). lo == hi where the exact
// accumulator is provably reproduced; NaN -> both 0x7FFF. Where one end is NaN
// and the other is not (e.g. +Inf residual + -Inf gate*o), hi is 0x7FFF, so
// the interval admits the NaN as well as the non-NaN values.
// With the low-rank branch (section 13.2; check_branch.h) the epilogue is pushed
// from v's admissible set instead: each lambda_j's by section 13.1 through bf16,
// o's from the accumulator's interval, v's by section 13.1 over all of them, in
// exact arithmetic. A sum that section 13.1's range rule leaves unspecified
// (A >= 2^127) may be any value, NaN and both infinities included: the envelope
// is then everything the epilogue gives for such a v (hi = 0x7FFF), not a refusal,
// since the inputs are valid.
// Rows whose gate index is out of range: lo == hi == residual.
struct OutEnvelope {
  int64_t m, n;                  // m = number of rows held (rows.size(), or M when all)
  std::vector<uint16_t> lo, hi;  // [m, n]
  std::vector<uint8_t> exact;    // [m, n]: 1 where the bound B is 0 (with the branch: where
                                 // v's admissible set is one value, either zero for a 0)
  std::vector<int64_t> row_ids;  // [m]: the op's row of each envelope row
};

// rows: the op rows to compute (empty = all). Validates like RunOp. With act_smooth (contract
// section 12) the envelope is that of x'; with the low-rank branch (section 13) it is section
// 13.2's interval, on x' too when both are given.
absl::StatusOr<OutEnvelope> ComputeOutEnvelope(const OpInputs& in, absl::Span<const int64_t> rows);

struct CompareReport {
  bool pass;
  int64_t checked, mismatches;
  int64_t max_ulp;             // ulp distance to the nearest end of the envelope
  std::string first_mismatch;  // "out[m=..,n=..]: got 0x.... want 0x.... (or
                               // [0x....,0x....])"
};

// got: the whole [M, n] out buffer; element (rows[i], j) is compared with
// envelope row i (rows empty = env.row_ids). A size problem fails the report
// with the reason in first_mismatch.
CompareReport CompareOut(const OutEnvelope& env, absl::Span<const uint16_t> got,
                         absl::Span<const int64_t> rows);

// Bit-exact comparison; reports the first differing (row, col) and both bytes.
// max_ulp is the largest |want - got| byte difference.
CompareReport CompareBytes(std::string_view what, absl::Span<const uint8_t> want,
                           absl::Span<const uint8_t> got, int64_t row_bytes);

// Position of a bf16 pattern in the total order above (0 = -NaN 0xFFFF ...).
inline int32_t Bf16OrderKey(uint16_t b) {
  return (b & 0x8000) ? static_cast<int32_t>(0x7FFF - (b & 0x7FFF))
                      : static_cast<int32_t>(0x8000 + b);
}

}  // namespace h3

#endif  // EMULATOR_CHECK_H_
