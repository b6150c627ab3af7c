#ifndef H3_KERNELS_WARP_ACC_CUH_
#define H3_KERNELS_WARP_ACC_CUH_

// A consumer warp's f32 accumulators for its kWarpTileM x kWarpTileN tile, in the m16n8 C
// fragment layout (docs/contract.md section 7: row g + 8*(c>>1), column 2t + (c&1), where
// g = lane / 4 and t = lane % 4).

namespace h3::kernels {

template <class Cfg>
struct WarpAcc {
  float v[Cfg::kMFrags][Cfg::kNFrags][4];  // [m16 frag][n8 frag][C fragment register c]

  __device__ __forceinline__ void Zero() {
#pragma unroll
    for (int i = 0; i < Cfg::kMFrags; ++i)
#pragma unroll
      for (int j = 0; j < Cfg::kNFrags; ++j)
#pragma unroll
        for (int c = 0; c < 4; ++c) v[i][j][c] = 0.0f;
  }
};

}  // namespace h3::kernels

#endif  // H3_KERNELS_WARP_ACC_CUH_
