#ifndef H3_KERNELS_WARP_ACC_CUH_
#define H3_KERNELS_WARP_ACC_CUH_

// A consumer warp's f32 accumulators for its kWarpTileM x kWarpTileN tile, in the m16n8 C
// fragment layout (docs/contract.md section 7: row g + 8*(i>>1), column 2t + (i&1)).

namespace h3::kernels {

template <class Cfg>
struct WarpAcc {
  float v[Cfg::kMFrags][Cfg::kNFrags][4];  // [m16 frag][n8 frag][C fragment]
};

}  // namespace h3::kernels

#endif  // H3_KERNELS_WARP_ACC_CUH_
