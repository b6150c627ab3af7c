#ifndef H3_KERNELS_OUT_PROJ_KERNEL_CUH_
#define H3_KERNELS_OUT_PROJ_KERNEL_CUH_

// The fused persistent NVFP4 out-projection kernel (docs/contract.md sections 3 and 6), device
// code only; its host launcher is launch.cuh.
//
// Warp roles (config.cuh): warps 0..3 are the producers (producers.cuh: the load warp fills the
// rings, three warps quantize attn_out and publish ready flags); warps 4..11 (two consumer
// warpgroups) run the block-scaled MMAs (mainloop.cuh) and the fused epilogue (epilogue.cuh),
// skewed a few stages apart (Cfg::kSkewed) so that one's epilogue runs under the other's MMAs.
//
// Template parameters: Cfg (config.cuh, a tiles.h entry), Arch (arch.cuh: the target's policy)
// and Variant: whether the quantizers publish, whether both consumer groups issue MMAs, what a
// finished tile's accumulators go to. The product instantiates Product; only testonly targets
// instantiate others (the bench's timing variants, the stall test's kernel).

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/bounded_wait.cuh"
#include "kernels/epilogue.cuh"
#include "kernels/mainloop.cuh"
#include "kernels/params.h"
#include "kernels/producers.cuh"
#include "kernels/ptx.cuh"
#include "kernels/rings.cuh"
#include "kernels/scheduler.cuh"
#include "kernels/variant.cuh"
#include "kernels/warp_acc.cuh"

namespace h3::kernels {

// Skewed, the trailing group at the start of its tile t (the CTA's t-th): waits until the leading
// group is kSkewStages stages (or the whole tile) into tile t, i.e. for phase t / 2 of gate
// t % 2 (config.cuh: never lapped). Timing only: the rings' mbarriers order every shared-memory
// access, this keeps the groups apart. Deadlock-free: the leader reaches that lead on A stages
// the trailer no longer holds (config.cuh kSkewStages).
template <class Variant>
__device__ __forceinline__ void SkewGate(uint64_t (&gate)[2], uint32_t t, const OutProjParams& p,
                                         int mt, int nt) {
  const int g = static_cast<int>(t & 1), phase = static_cast<int>((t >> 1) & 1);
  MbarWaitBounded(&gate[g], phase, p,
                  {WaitKind::kSkewGate, g, phase, mt, nt, Variant::kGateBound});
}

// One tile's stages, one ConsumeStage each. A warp whose tile lies beyond N (half a tile at the
// end of N) only keeps the rings' pace; a skewed group without an N half in this tile (has_b
// false) touches only the A ring. One thread of the leading group (publish) arrives on the tile's
// gate kSkewStages stages in (SkewGate). Variant: the stall test's withheld hand-offs and bounds.
template <class Cfg, class Arch, class Variant>
__device__ __forceinline__ void ConsumeTileStages(const OutProjParams& p, int mt, int nt,
                                                  SharedStorage<Cfg>& st,
                                                  RingPos<Cfg::kAStages>& ra,
                                                  RingPos<Cfg::kStages>& rb, SfaPos<Cfg>& sfa,
                                                  int ksteps, int group, int warp_m, int warp_n,
                                                  bool has_b, bool active, uint64_t* publish,
                                                  WarpAcc<Cfg>& acc) {
  const int n_base = (warp_n * Cfg::kWarpTileN) % Cfg::kGroupBN;  // in the ring's B tile
  const int publish_at = (Cfg::kSkewStages < ksteps ? Cfg::kSkewStages : ksteps) - 1;
  for (int ks = 0; ks < ksteps; ++ks) {
    MbarWaitBounded(&st.full[ra.stage], ra.phase, p,
                    {WaitKind::kFullA, ra.stage, static_cast<int>(ra.phase), mt, nt,
                     Variant::kConsumerBound});
    const int slot_b = group * Cfg::kStages + rb.stage;
    if (Cfg::kSkewed && has_b) {
      MbarWaitBounded(&st.full_b[slot_b], rb.phase, p,
                      {WaitKind::kFullB, slot_b, static_cast<int>(rb.phase), mt, nt,
                       Variant::kConsumerBound});
    }
    if (active) {
      const int sb = Cfg::kSkewed ? rb.stage : ra.stage;
      ConsumeStage<Cfg, Arch>(st.a[ra.stage], st.B(group, sb), sfa.Row0(st), st.Sfb(group, sb),
                              warp_m * Cfg::kWarpTileM, n_base, acc);
    }
    sfa.Advance();
    if (!Variant::Withholds(Handoff::kRelease, kRingA, mt, nt, ks)) {
      ptx::MbarArrive(&st.empty[ra.stage]);
    }
    ra.Advance();
    if (Cfg::kSkewed && has_b) {
      if (!Variant::Withholds(Handoff::kRelease, kRingB0 + group, mt, nt, ks)) {
        ptx::MbarArrive(&st.empty_b[slot_b]);
      }
      rb.Advance();
    }
    if (publish != nullptr && ks == publish_at &&
        !Variant::Withholds(Handoff::kGateArrive, kRingA, mt, nt, ks)) {
      ptx::MbarArrive(publish);
    }
  }
}

// Consumer warps: MMA over the rings, then the epilogue straight from registers.
template <class Cfg, class Arch, class Variant>
__device__ __forceinline__ void ConsumerLoop(const OutProjParams& p, SharedStorage<Cfg>& st,
                                             float alpha) {
  const int cw = (threadIdx.x >> 5) - Cfg::kProducerWarps;
  // Lockstep: warp (m, n) = (cw / kWarpsN, cw % kWarpsN). Skewed: warpgroup `group` = cw / 4
  // owns the warp columns [group, group + 1) * kWarpsN / kGroups, as a kWarpsM x
  // (kWarpsN / kGroups) grid.
  constexpr int kGroupWarps = Cfg::kConsumerWarps / Cfg::kGroups;
  constexpr int kGroupWarpsN = Cfg::kWarpsN / Cfg::kGroups;
  const int group = Cfg::kSkewed ? cw / kGroupWarps : 0;
  const int local = cw % kGroupWarps;
  const int warp_m = local / kGroupWarpsN;
  const int warp_n = group * kGroupWarpsN + local % kGroupWarpsN;
  const bool publisher = Cfg::kSkewed && cw == 0 && (threadIdx.x & 31) == 0;
  const bool mma_on = Variant::kEveryGroupMma || cw < Cfg::kConsumerWarps / 2;
  TileScheduler<Cfg> sched(p.m, p.n);
  const int ksteps = p.k / Cfg::kBK;
  RingPos<Cfg::kAStages> ra;
  RingPos<Cfg::kStages> rb;
  SfaPos<Cfg> sfa;
  for (uint32_t t = 0; sched.Valid(); sched.Next(), ++t) {
    const int col0 = sched.nt * Cfg::kBN + warp_n * Cfg::kWarpTileN;  // this warp's first column
    if (Cfg::kSkewed && group == 1) {
      Variant::Pause(PauseSite::kTrailerTile, t);
      SkewGate<Variant>(st.gate, t, p, sched.mt, sched.nt);
    }
    WarpAcc<Cfg> acc;
    acc.Zero();
    const bool has_b = !Cfg::kSkewed || RingRow0<Cfg>(group, sched.nt) < p.n;
    ConsumeTileStages<Cfg, Arch, Variant>(p, sched.mt, sched.nt, st, ra, rb, sfa, ksteps, group,
                                          warp_m, warp_n, has_b, mma_on && col0 < p.n,
                                          publisher ? &st.gate[t & 1] : nullptr, acc);
    if (col0 >= p.n) continue;
    const int64_t row0 = static_cast<int64_t>(sched.mt) * Cfg::kBM + warp_m * Cfg::kWarpTileM;
    Variant::template Epilogue<Cfg, Arch>(acc, row0, col0, p, alpha);
  }
}

// alpha = 1 (/) (act_gs (x) w_gs) (contract section 6).
__device__ __forceinline__ float EpilogueAlpha(const OutProjParams& p, float act_gs) {
  const float w_gs = p.w_gs_dev != nullptr ? *p.w_gs_dev : p.w_gs;
  return __fdiv_rn(1.0f, __fmul_rn(act_gs, w_gs));
}

template <class Cfg, class Arch, class Variant>
__device__ __forceinline__ void RunOutProj(const CUtensorMap* tmap_aq, const CUtensorMap* tmap_asf,
                                           const CUtensorMap* tmap_wq, const OutProjParams& p) {
  extern __shared__ uint8_t smem_raw[];
  SharedStorage<Cfg>& st = AlignedSmem<SharedStorage<Cfg>>(smem_raw);
  if (threadIdx.x == 0) InitRings<Cfg>(st, tmap_aq, tmap_asf, tmap_wq);
  __syncthreads();
  const float act_gs = *p.act_gs;
  if ((threadIdx.x >> 5) < Cfg::kProducerWarps) {
    RunProducers<Cfg, Arch, Variant>(p, tmap_aq, tmap_asf, tmap_wq, st, act_gs);
  } else {
    if constexpr (Cfg::kSetMaxNReg) ptx::SetMaxNRegInc<Cfg::kConsumerRegs>();
    ConsumerLoop<Cfg, Arch, Variant>(p, st, EpilogueAlpha(p, act_gs));
  }
}

template <class Cfg, class Arch, class Variant>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    OutProjKernel(const __grid_constant__ CUtensorMap tmap_aq,
                  const __grid_constant__ CUtensorMap tmap_asf,
                  const __grid_constant__ CUtensorMap tmap_wq,
                  const __grid_constant__ OutProjParams p) {
  if constexpr (Arch::kCompiledHere) {
    RunOutProj<Cfg, Arch, Variant>(&tmap_aq, &tmap_asf, &tmap_wq, p);
  } else {
    __trap();  // another target's instance: the launcher runs the device's own (launch.cuh)
  }
}

}  // namespace h3::kernels

#endif  // H3_KERNELS_OUT_PROJ_KERNEL_CUH_
