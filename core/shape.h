#ifndef H3_CORE_SHAPE_H_
#define H3_CORE_SHAPE_H_

// The operator's shapes (docs/contract.md section 1): the MiniMax-H3 constants and the rule every
// backend accepts at least. Backends may accept fewer shapes (the GPU kernel tiles N and K) and
// then say so in their own errors.

#include <cstdint>

#include "absl/status/status.h"

namespace h3 {

// MiniMax-H3 attention output projection: N = hidden size, K = 56 heads x 128,
// G = 3 noise levels x 3 modalities (docs/contract.md section 1).
inline constexpr int64_t kH3N = 5376, kH3K = 7168, kH3G = 9;

// Elements per block scale (NVFP4: block-16 UE4M3 scales, docs/contract.md section 3).
inline constexpr int64_t kScaleBlock = 16;
// k of one block-scaled mma.m16n8k64 (docs/contract.md section 7): the contract's K granularity.
inline constexpr int64_t kMmaK = 64;

struct OpShape {
  int64_t m = 0;
  int64_t n = kH3N;
  int64_t k = kH3K;
  int64_t g = kH3G;
};

// m >= 0, n >= 1, k > 0 && k % 64 == 0 (one mma.m16n8k64 k step), g >= 1. Errors name the
// dimension and the operand it comes from: "shape.k (the columns K of attn_out [M, K]) must be
// ...".
absl::Status ValidateShape(const OpShape& shape);

}  // namespace h3

#endif  // H3_CORE_SHAPE_H_
