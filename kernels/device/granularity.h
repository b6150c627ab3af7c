#ifndef H3_KERNELS_GRANULARITY_H_
#define H3_KERNELS_GRANULARITY_H_

// The shapes the GPU kernel tiles, published by the host API (out_proj.h) and checked against
// every build's config (out_proj_launch.cu static_asserts). Plain C++: nvcc and g++ both read it.

#include <cstdint>

namespace h3 {

inline constexpr int64_t kOutProjNMultiple = 128;  // N: whole CTA tiles
inline constexpr int64_t kOutProjKMultiple = 256;  // K: whole pipeline stages
// Rows of one CTA tile (every build): tests put their edge cases at its multiples.
inline constexpr int64_t kOutProjTileM = 128;
// The largest M: tensor-map rows are 32-bit and m-tile indices int; far above any M whose
// attn_out fits in a GPU's memory (2^31 rows of K = 7168 bf16 are 30 TB).
inline constexpr int64_t kOutProjMaxM = (int64_t{1} << 31) - 1;

}  // namespace h3

#endif  // H3_KERNELS_GRANULARITY_H_
