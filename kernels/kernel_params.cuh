#ifndef H3_KERNELS_KERNEL_PARAMS_CUH_
#define H3_KERNELS_KERNEL_PARAMS_CUH_

// The fused kernel's launch parameters (filled by out_proj_launch.cu) and the call's quantizer
// unit map, shared by the kernel's warp roles (out_proj_kernel.cuh, loader.cuh).

#include <cstdint>

#include "kernels/scheduler.cuh"
#include "kernels/work_units.h"

namespace h3::kernels {

struct KernelParams {
  int64_t m;
  int n, k, g;
  const uint16_t* __restrict__ attn_out;
  const uint8_t* w_sf;
  float w_gs;
  const float* w_gs_dev;
  const float* act_gs;
  const uint16_t* gate;
  const int32_t* gate_index;
  const uint16_t* residual;
  uint16_t* out;
  uint8_t* act_q;
  uint8_t* act_sf;
  uint32_t* ready_flags;   // ready_flags.h
  bool prefetch_residual;  // residual 16-byte aligned: the load warp prefetches it to L2
  bool skip_epilogue;      // timing only (out_proj.h OutProjDebug): FoldTile instead of StoreTile
  bool one_group_mma;      // timing only (OutProjDebug::kOneGroupMma): warpgroup 1 skips MMAs
  bool vec16_epilogue;     // gate, residual and out 16-byte aligned: StoreTileVec16
};

// The call's quantizer unit map (work_units.h): the front is the first wave's m-tiles.
template <class Cfg>
__device__ __forceinline__ WorkUnits<Cfg::kQuantRows> CallUnits(const KernelParams& p) {
  const TileScheduler<Cfg> sched(p.m, p.n);
  return WorkUnits<Cfg::kQuantRows>(p.m, p.k,
                                    FrontMTiles(gridDim.x, sched.num_n_tiles, sched.num_m_tiles));
}

}  // namespace h3::kernels

#endif  // H3_KERNELS_KERNEL_PARAMS_CUH_
