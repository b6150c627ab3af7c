#ifndef H3_HARNESS_TESTBED_COMPARE_H_
#define H3_HARNESS_TESTBED_COMPARE_H_

// A backend's result against the emulator, and the mismatch report: the one comparison of the
// kernel tests, the sweep and the benchmarks. The judge is the emulator's (emulator/check.h:
// CompareOut against the contract's envelope, CompareBytes for act_q/act_sf); this file maps its
// rows to the case's rows and keeps one report per run.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "emulator/check.h"
#include "harness/testbed/problem.h"

namespace h3::testbed {

// What a backend returned for the compared rows: row i of each array is the i-th compared row.
struct RunResult {
  std::vector<uint16_t> out;    // [rows, n] bf16
  std::vector<uint8_t> act_q;   // [rows, k/2]; empty when not returned (internal workspace)
  std::vector<uint8_t> act_sf;  // [rows, k/16] linear; likewise
};

// The first element that differs, in the case's coordinates, with both bit patterns.
struct Mismatch {
  std::string tensor;  // "out", "act_q", "act_sf", ...
  bool bf16 = true;    // out (bf16 patterns, column n) or bytes (byte within the row)
  int64_t row = 0;     // the case's row
  int64_t col = 0;
  uint32_t got = 0;
  uint32_t want_lo = 0, want_hi = 0;  // want_lo == want_hi: exactly one pattern allowed

  // "out[m=7,n=1]: got 0x3F83 want [0x3F80,0x3F82]", "act_q[m=3,byte=1]: got 0x05 want 0x04".
  std::string ToString() const;
};

// The verdict of one run: one or more comparisons folded together (counts add up, the first
// mismatch is kept).
struct Comparison {
  bool pass = true;
  std::string out_check;  // "bit-exact" (one allowed value everywhere), "bound", "none" (no rows)
  std::string act_check;  // "bit-exact", "n/a (internal workspace)", "none"
  int64_t checked = 0, mismatches = 0;
  int64_t max_ulp = 0;            // of out, to the nearest end of the envelope
  std::optional<Mismatch> first;  // the first mismatching element, when one was located
  std::string first_mismatch;     // label + first->ToString(), or why it failed; "" when passing

  // Fails with `why` (kept only when no earlier failure was recorded).
  void Fail(std::string why);
  // "<first_mismatch> (<mismatches> of <checked> mismatch, max ulp <max_ulp>)".
  std::string Summary() const;
};

// Folds the emulator's CompareOut(env, got) into `c`. `got` holds the envelope's rows in order
// ([env.m, env.n]); row i is the case's row case_rows[i]. `label` prefixes the first mismatch.
void JudgeOut(const OutEnvelope& env, absl::Span<const uint16_t> got,
              absl::Span<const int64_t> case_rows, absl::string_view label, Comparison& c);

// Folds the emulator's CompareBytes(what, want, got, row_bytes) into `c`; row i of want/got is
// the case's row case_rows[i].
void JudgeBytes(absl::string_view what, absl::Span<const uint8_t> want,
                absl::Span<const uint8_t> got, int64_t row_bytes,
                absl::Span<const int64_t> case_rows, absl::string_view label, Comparison& c);

// The emulator's answer for some rows of a problem.
struct Reference {
  OutEnvelope env;                     // the contract's allowed out values of those rows
  std::vector<uint8_t> act_q, act_sf;  // the quantizer's bytes of those rows (bit-exact)
  std::vector<int64_t> case_rows;      // the case's row of each (problem.rows[row])
  int64_t k = 0;                       // the problem's K (act row lengths)
  bool exact = false;                  // one allowed out value everywhere (bound 0)
};

// `rows`: rows of `p` (ascending, in [0, p.shape.m)); the case's rows come from p.rows.
absl::StatusOr<Reference> MakeReference(const Problem& p, absl::Span<const int64_t> rows);

struct JudgeOptions {
  bool exact_data = false;  // the data is built to be exact: an inexact envelope fails
  bool compare_act = true;  // act_q/act_sf were returned (caller workspace) and must match
  std::string label;        // prefix of the first mismatch, e.g. "fast path: "
};

// Judges a result (the reference's rows, in order) and folds the verdict into `c`: out against
// the envelope, act_q/act_sf bit for bit. No rows: "none", and any returned data fails.
void Judge(const Reference& ref, const RunResult& got, const JudgeOptions& options, Comparison& c);

// MakeReference(p, rows), then Judge: the whole check of one run.
absl::StatusOr<Comparison> CompareWithEmulator(const Problem& p, absl::Span<const int64_t> rows,
                                               const RunResult& got,
                                               const JudgeOptions& options = {});

}  // namespace h3::testbed

#endif  // H3_HARNESS_TESTBED_COMPARE_H_
