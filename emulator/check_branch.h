#ifndef EMULATOR_CHECK_BRANCH_H_
#define EMULATOR_CHECK_BRANCH_H_

// The checker's part for the low-rank branch (docs/contract.md section 13): the binary32 values
// section 13.1 admits for each of the branch's sums, as sets computed in exact arithmetic, and
// out's envelope from v's set. check.cc composes them per element (ComputeOutEnvelope).

#include <cstdint>

#include "absl/types/span.h"
#include "emulator/gemm.h"

namespace h3 {

// The exact dyadic rational mant * 2^exp, mant odd (or 0, the value 0): equal values have equal
// fields. A float's has at most 24 bits, a product of two floats' at most 48.
struct Dyadic {
  int64_t mant = 0;
  int exp = 0;
};
Dyadic DyadicOf(float f);  // f finite
Dyadic DyadicProduct(Dyadic a, Dyadic b);

// A set of binary32 values: NaN, -Inf, +Inf, and every finite value in [lo, hi] (lo <= hi; a
// zero end stands for both zeros).
struct ValueSet {
  bool nan = false, neg_inf = false, pos_inf = false;
  bool finite = false;
  float lo = 0.0f, hi = 0.0f;
};
// One value (the two zeros count as one: section 13.1 leaves a zero sum's sign free).
bool IsOneValue(const ValueSet& s);

// One term of a sum: its possible values, the finite ones as the exact reals [lo, hi].
struct TermSet {
  bool nan = false, neg_inf = false, pos_inf = false;
  bool finite = false;
  Dyadic lo, hi;
};

// Section 13.1 for a sum of T = t terms, each taking any value of its set independently: every
// value the contract admits for some choice of the terms lies in the result. Non-finite rule
// exactly; the exact case (every term a point) gives one value; the general case the binary32
// values of [Smin - B, Smax + B], B at the largest A; the range rule (A >= 2^127 possible)
// every value, NaN and both infinities included.
ValueSet SumSet(absl::Span<const TermSet> terms, int64_t t);

// l = bf16(lambda) over lambda's set (monotone), as f32 values.
ValueSet Bf16Of(const ValueSet& lambda);
// o = acc * alpha over acc's interval (section 6: alpha > 0, +0 or +Inf).
ValueSet OOf(const AccInterval& acc, float alpha);
// A term of a sum from a set of f32 values: v's o, or l * u for a finite u (the up-projection).
TermSet TermOf(const ValueSet& s);
TermSet ProductTerm(const ValueSet& l, float u);

// The envelope of bf16 candidates in the total order of check.h: the lowest and highest non-NaN
// ones, hi = 0x7FFF when any is NaN (0x7FFF both when all are).
void EnvelopeOfCandidates(const uint16_t* cand, int count, uint16_t* lo, uint16_t* hi);

// out's envelope for an in-range element whose v ranges over `v`: the epilogue (monotone in v,
// section 8) at the finite ends, at +-0 when they enclose zero, and at each infinity and NaN
// the set holds.
void OutOfVSet(const ValueSet& v, uint16_t gate, uint16_t residual, uint16_t* lo, uint16_t* hi);

// Section 13 for one in-range row: x' [k] (section 12's smoothed row, or attn_out's), acc's
// interval per column [n = acc.size()], lora_down [rank, k], lora_up [n, rank]; writes the
// envelope lo, hi [n] and exact [n] (1 where v's set is one value).
void BranchRowEnvelope(const uint16_t* xs, int64_t k, absl::Span<const uint16_t> down,
                       absl::Span<const uint16_t> up, int64_t rank,
                       absl::Span<const AccInterval> acc, float alpha, const uint16_t* gate,
                       const uint16_t* residual, uint16_t* lo, uint16_t* hi, uint8_t* exact);

}  // namespace h3

#endif  // EMULATOR_CHECK_BRANCH_H_
