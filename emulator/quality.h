#ifndef EMULATOR_QUALITY_H_
#define EMULATOR_QUALITY_H_

// The op's optional quality inputs: input-channel smoothing (docs/contract.md section 12) and
// the low-rank branch (section 13), as steps the whole op (op.cc) composes. Off (empty spans),
// the op is the seed's, bit for bit.

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/operands.h"  // kLoraRank*: the contract's rule on r
#include "core/shape.h"
#include "emulator/op.h"

namespace h3 {

struct QualityInputs {
  absl::Span<const float> act_smooth;    // [K] or empty (section 12)
  absl::Span<const uint16_t> lora_down;  // bf16 [r, K] or empty (section 13)
  absl::Span<const uint16_t> lora_up;    // bf16 [N, r] or empty
};

// The options as OpInputs carries them (its act_smooth, lora_down, lora_up rows).
inline QualityInputs QualityOf(const OpInputs& in) {
  return QualityInputs{in.act_smooth, in.lora_down, in.lora_up};
}

// Sizes against the shape, r from lora_down (a multiple of 16 in 16..64; 0 when the branch is
// off), both lora operands or neither, and every value finite (sections 12, 13). Errors:
// InvalidArgument "<operand>: expected ..., got ...".
absl::Status ValidateQualityInputs(const OpShape& s, const QualityInputs& q, int64_t* rank);

// Section 12, one element: bf16(f32(x) * s), two roundings.
uint16_t SmoothElement(uint16_t x, float s);
// x' of `rows` rows of k elements: out[r*k + i] = SmoothElement(x[r*k + i], smooth[i]).
void SmoothRows(const uint16_t* x, int64_t rows, int64_t k, absl::Span<const float> smooth,
                uint16_t* out);

// Section 13 step 1: l[r*rank + j] = bf16(lambda_j) of row r of xs [rows, k] against lora_down
// [rank, k]. kExact: lambda = the exact sum rounded once; kFastF32: an f32 GEMM (rows holding a
// non-finite value take the exact sum, so NaN / Inf follow section 13.1's rule exactly).
void LowRankDown(const uint16_t* xs, int64_t rows, int64_t k, absl::Span<const uint16_t> down,
                 int64_t rank, GemmPath path, uint16_t* l);

// Section 13 step 2, in place: o[r*n + c] becomes v = o + sum_j l[r, j] * lora_up[c, j], the
// exact sum rounded once (kExact) or o + (an f32 GEMM's sum) (kFastF32; non-finite rows exact).
void LowRankUpInto(const uint16_t* l, int64_t rows, int64_t rank, absl::Span<const uint16_t> up,
                   int64_t n, GemmPath path, float* o);

// The whole op (RunOp) with the quality inputs: empty spans leave it the seed's op, bit for bit.
// The options come from `in`'s own rows (the operand table's path: RunOp(in, out) runs them
// too) or from `quality`; an option in both must be the same span. Validates everything first
// (ValidateOpInputs / Outputs, then ValidateQualityInputs).
absl::Status RunOpQuality(const OpInputs& in, const QualityInputs& quality, const OpOutputs& out,
                          GemmPath path = GemmPath::kFastF32);

}  // namespace h3

#endif  // EMULATOR_QUALITY_H_
