#ifndef H3_KERNELS_SM90_FAST_KERNEL_CUH_
#define H3_KERNELS_SM90_FAST_KERNEL_CUH_

// Hopper validation only: the fast sm_90 kernel (Sm90Emulation::kFast). The SM120 kernel's
// producers (loader, quantizer: kernels/device/producers.cuh) and epilogue with the Sm90Emulated policy,
// and its own consumer loop: each k-step's tiles dequantized into registers and a shared staging
// tile and multiplied by wgmma (staged_mainloop.cuh). Exact to the same contract; its consumer
// loop is NOT the SM120 one (the faithful build runs that).

#include <cuda.h>

#include <cstdint>

#include "kernels/device/epilogue_policy.cuh"
#include "kernels/device/out_proj_kernel.cuh"
#include "kernels/device/params.h"
#include "kernels/device/producers.cuh"
#include "kernels/device/rings.cuh"
#include "kernels/device/scheduler.cuh"
#include "kernels/device/variant.cuh"
#include "kernels/sm90/arch.cuh"
#include "kernels/sm90/config.cuh"
#include "kernels/sm90/staged_mainloop.cuh"
#include "kernels/device/warp_acc.cuh"

namespace h3::kernels::sm90 {

// Consumer warps: each tile's stages as one stream of wgmma k-steps, the accumulators moved to
// the warp-tile layout, then the Variant's epilogue policy (the product's: GatedResidual). Both
// warpgroups' wgmmas read one staged B tile, so a Variant without kEveryGroupMma still runs them
// all.
template <class Variant>
__device__ __forceinline__ void FastConsumerLoop(const OutProjParams& p, Sm90Storage& st,
                                                 float alpha) {
  using Cfg = Sm90Config;
  const int cw = (threadIdx.x >> 5) - Cfg::kProducerWarps;
  const int warp_m = cw / Cfg::kWarpsN, warp_n = cw % Cfg::kWarpsN;
  TileScheduler<Cfg> sched(p.m, p.n);
  const int ksteps = p.k / Cfg::kBK;
  RingPos<Cfg::kStages> ring;
  for (; sched.Valid(); sched.Next()) {
    WarpAcc<Cfg> acc;
    acc.Zero();
    ConsumeTile<Cfg>(p, sched.mt, sched.nt, st.rings, ring.stage, ring.phase, ksteps, acc);
    FinishTile<Cfg>(acc);
    const int col0 = sched.nt * Cfg::kBN + warp_n * Cfg::kWarpTileN;
    if (col0 >= p.n) continue;
    const int64_t row0 = static_cast<int64_t>(sched.mt) * Cfg::kBM + warp_m * Cfg::kWarpTileM;
    FinishWarpTile<Cfg, Sm90Emulated, Variant>(acc, row0, col0, p, alpha);
  }
}

template <class Variant>
__global__ void __launch_bounds__(Sm90Config::kThreads, 1)
    FastKernel(const __grid_constant__ CUtensorMap tmap_aq,
               const __grid_constant__ CUtensorMap tmap_asf,
               const __grid_constant__ CUtensorMap tmap_wq,
               const __grid_constant__ OutProjParams p) {
  if constexpr (Sm90Emulated::kCompiledHere) {
    extern __shared__ uint8_t smem_raw[];
    Sm90Storage& st = AlignedSmem<Sm90Storage>(smem_raw);
    if (threadIdx.x == 0) InitRings<Sm90Config>(st.rings, &tmap_aq, &tmap_asf, &tmap_wq);
    __syncthreads();
    const float act_gs = *p.act_global_scale;
    if ((threadIdx.x >> 5) < Sm90Config::kProducerWarps) {
      RunProducers<Sm90Config, Sm90Emulated, Variant>(p, &tmap_aq, &tmap_asf, &tmap_wq, st.rings, act_gs);
    } else {
      FastConsumerLoop<Variant>(p, st, EpilogueAlpha(p, act_gs));
    }
  } else {
    __trap();  // sm_90a only: the launcher runs it on sm_90 devices alone (launch.cuh)
  }
}

}  // namespace h3::kernels::sm90

#endif  // H3_KERNELS_SM90_FAST_KERNEL_CUH_
