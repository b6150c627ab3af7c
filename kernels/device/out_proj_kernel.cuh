#ifndef H3_KERNELS_OUT_PROJ_KERNEL_CUH_
#define H3_KERNELS_OUT_PROJ_KERNEL_CUH_

// The fused persistent NVFP4 out-projection kernel (docs/contract.md sections 3 and 6), device
// code only; its host launcher is launch.cuh.
//
// Warp roles (config.cuh): warps 0..3 are the producers (producers.cuh: the load warp fills the
// rings, three warps quantize attn_out and publish ready flags); warps 4..11 (two consumer
// warpgroups) run the block-scaled MMAs (mainloop.cuh) and the fused epilogue (the Variant's
// epilogue policy through epilogue_policy.cuh; the product's, GatedResidual, in epilogue.cuh),
// as the config's schedule says (config.cuh): in lockstep on one ring (LockstepSchedule, the
// default), or each on its N half a few stages apart (SkewedSchedule), so that one's epilogue
// runs under the other's MMAs.
//
// Template parameters: Cfg (config.cuh, a tiles.h entry), Arch (arch.cuh: the target's policy)
// and Variant (variant.cuh): the epilogue policy (Variant::Epilogue: what a finished tile's
// accumulators become), whether the quantizers publish, whether both consumer groups issue MMAs.
// The product instantiates Product; only testonly targets instantiate others (the bench's timing
// variants, the stall and stress tests' kernels).

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/device/bounded_wait.cuh"
#include "kernels/device/epilogue_policy.cuh"
#include "kernels/device/lowrank.cuh"
#include "kernels/device/mainloop.cuh"
#include "kernels/device/params.h"
#include "kernels/device/producers.cuh"
#include "kernels/device/ptx.cuh"
#include "kernels/device/rings.cuh"
#include "kernels/device/scheduler.cuh"
#include "kernels/device/staged_epilogue.cuh"
#include "kernels/device/variant.cuh"
#include "kernels/device/warp_acc.cuh"

namespace h3::kernels {

// kSkewGate: the trailing group at the start of its tile t (the CTA's t-th) waits until the leading
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

// A consumer warp's ring addresses in shared memory (stage 0 of each ring; b, sfb, full_b: its
// group's B ring), taken once per kernel so that a stage's addresses are one multiply-add each.
// A stage's empty barrier is its full barrier plus a fixed offset (kEmptyOffset, kEmptyBOffset).
template <class Cfg>
struct ConsumerRings {
  using Storage = SharedStorage<Cfg>;
  static constexpr uint32_t kEmptyOffset = offsetof(Storage, empty) - offsetof(Storage, full);
  static constexpr uint32_t kEmptyBOffset = offsetof(Storage, empty_b) - offsetof(Storage, full_b);
  uint32_t a, b, sfa, sfb;  // code tiles and scales
  // The A ring's full barriers (lockstep: the ring's); kOwnBRings: the group's B ring's.
  uint32_t full, full_b;
  __device__ __forceinline__ ConsumerRings(Storage& st, int group) {
    a = ptx::SmemAddr(st.a[0]);
    b = ptx::SmemAddr(st.B(group, 0));
    sfa = ptx::SmemAddr(st.sfa[0]);
    sfb = ptx::SmemAddr(st.Sfb(group, 0));
    full = ptx::SmemAddr(&st.full[0]);
    full_b = ptx::SmemAddr(&st.full_b[Cfg::Schedule::kOwnBRings ? group * Cfg::kStages : 0]);
  }
  // Keeps them in registers (ptx::Opaque): not recomputed from the shared-memory base per stage.
  __device__ __forceinline__ void Pin() {
    for (uint32_t* x : {&a, &b, &sfa, &sfb, &full, &full_b}) ptx::Opaque(*x);
  }
};

// One tile's stages, one ConsumeStage each, kSfaStagesPerBox at a time (the stages of one
// activation-scale box: a tile is whole boxes, so every tile starts at a box, sfa.sub == 0).
// kMma false: a warp whose tile lies beyond N (half a tile at the end of N) only keeps the
// rings' pace; kHasB false: a group without an N half in this tile touches only the A
// ring. The thread whose publish_ks is a stage index (one thread of the leading group) arrives
// on the tile's gate (gate) after that stage (SkewGate). Variant: the stall test's withheld
// hand-offs and bounds.
template <class Cfg, class Arch, class Variant, bool kMma, bool kHasB>
__device__ __forceinline__ void ConsumeTileStages(const OutProjParams& p, int mt, int nt,
                                                  const ConsumerRings<Cfg>& rings,
                                                  const LaneOffsets<Cfg>& lo,
                                                  RingPos<Cfg::kAStages>& ra,
                                                  RingPos<Cfg::kStages>& rb, SfaPos<Cfg>& sfa,
                                                  int ksteps, int group, int publish_ks,
                                                  uint32_t gate, WarpAcc<Cfg>& acc) {
  constexpr bool kB = Cfg::Schedule::kOwnBRings && kHasB;  // its own B ring: wait, release
  // An A ring of a whole number of boxes' stages is at a box's first stage at every box start
  // (a tile is whole boxes, and the ring starts at stage 0): the box's stages are then a0 + sub
  // with one phase, and the ring advances once per box.
  constexpr int kBox = Cfg::kSfaStagesPerBox;
  constexpr bool kBoxA = Cfg::kAStages % kBox == 0;
  for (int ks = 0; ks < ksteps; ks += kBox) {
    const uint32_t sfa_box = rings.sfa + sfa.slot * Cfg::kSfaSlotBytes;
    const int a0 = ra.stage;
    const uint32_t phase_a0 = ra.phase;
    auto stage = [&](int sub) {
      const int sa = kBoxA ? a0 + sub : ra.stage;
      const uint32_t phase_a = kBoxA ? phase_a0 : ra.phase;
      const uint32_t full_a = rings.full + 8 * sa;
      const uint32_t full_b = rings.full_b + 8 * rb.stage;
      // The A stage, then the B stage: one try of both on the way through; where either is not
      // complete yet, each bounded wait in turn (each reports as itself).
      if (!kB || !ptx::MbarTryWaitBoth(full_a, phase_a, full_b, rb.phase)) {
        MbarWaitBoundedAddr(full_a, phase_a, p,
                            {WaitKind::kFullA, sa, static_cast<int>(phase_a), mt, nt,
                             Variant::kConsumerBound});
        if constexpr (kB) {
          MbarWaitBoundedAddr(full_b, rb.phase, p,
                              {WaitKind::kFullB, group * Cfg::kStages + rb.stage,
                               static_cast<int>(rb.phase), mt, nt, Variant::kConsumerBound});
        }
      }
      if constexpr (kMma) {
        const int sb = Cfg::Schedule::kOwnBRings ? rb.stage : sa;
        ConsumeStage<Cfg, Arch>(rings.a + sa * Cfg::kATileBytes,
                                rings.b + sb * Cfg::kBRingTileBytes,
                                sfa_box + sub * Cfg::kSfaRowBytes,
                                rings.sfb + sb * Cfg::kSfbRingTileBytes, lo, acc);
      }
      if (!Variant::Withholds(Handoff::kRelease, kRingA, mt, nt, ks + sub)) {
        ptx::MbarArriveAddr(full_a + ConsumerRings<Cfg>::kEmptyOffset);
      }
      if constexpr (!kBoxA) ra.Advance();
      if constexpr (kB) {
        if (!Variant::Withholds(Handoff::kRelease, kRingB0 + group, mt, nt, ks + sub)) {
          ptx::MbarArriveAddr(full_b + ConsumerRings<Cfg>::kEmptyBOffset);
        }
        rb.Advance();
      }
      ptx::MbarArriveIf(ks + sub == publish_ks &&
                            !Variant::Withholds(Handoff::kGateArrive, kRingA, mt, nt, ks + sub),
                        gate);
    };
    // Native: the box's stages unrolled (compile-time offsets). The sm_90 emulation keeps one
    // stage's code (its emulated MMAs need the registers; the offsets cost it nothing).
    if constexpr (Arch::kNativeMma && kBoxA) {
#pragma unroll
      for (int sub = 0; sub < kBox; ++sub) stage(sub);
    } else {
#pragma unroll 1
      for (int sub = 0; sub < kBox; ++sub) stage(sub);
    }
    if constexpr (kBoxA) ra.template AdvanceBy<kBox>();
    sfa.AdvanceBox();
  }
}

// Consumer warps: MMA over the rings, then the Variant's epilogue straight from registers.
template <class Cfg, class Arch, class Variant>
__device__ __forceinline__ void ConsumerLoop(const OutProjParams& p, SharedStorage<Cfg>& st,
                                             float alpha) {
  const int cw = ptx::WarpIdxUniform() - Cfg::kProducerWarps;
  // One group: warp (m, n) = (cw / kWarpsN, cw % kWarpsN). Two (skewed): warpgroup `group` =
  // cw / 4 owns the warp columns [group, group + 1) * kWarpsN / kGroups, as a kWarpsM x
  // (kWarpsN / kGroups) grid.
  constexpr int kGroupWarps = Cfg::kConsumerWarps / Cfg::kGroups;
  constexpr int kGroupWarpsN = Cfg::kWarpsN / Cfg::kGroups;
  const int group = Cfg::kGroups > 1 ? cw / kGroupWarps : 0;
  const int local = cw % kGroupWarps;
  const int warp_m = local / kGroupWarpsN;
  const int warp_n = group * kGroupWarpsN + local % kGroupWarpsN;
  const bool publisher = Cfg::Schedule::kSkewGate && cw == 0 && (threadIdx.x & 31) == 0;
  const bool mma_on = Variant::kEveryGroupMma || cw < Cfg::kConsumerWarps / 2;
  // The warp tile's origin in the ring's B tile: a multiple of kWarpTileN (64-aligned 64-wide
  // tiles: LoadStageScales pairs weight-scale words).
  const int n_base = (warp_n * Cfg::kWarpTileN) % Cfg::kGroupBN;
  ConsumerRings<Cfg> rings(st, group);
  LaneOffsets<Cfg> lo(static_cast<int>(threadIdx.x & 31), warp_m * Cfg::kWarpTileM, n_base);
  if constexpr (Arch::kNativeMma) {  // the sm_90 emulation needs the registers (NOTES.md)
    rings.Pin();
    lo.Pin();
  }
  TileScheduler<Cfg> sched(p.m, p.n);
  const int ksteps = p.k / Cfg::kBK;
  RingPos<Cfg::kAStages> ra;
  RingPos<Cfg::kStages> rb;
  SfaPos<Cfg> sfa;
  for (uint32_t t = 0; sched.Valid(); sched.Next(), ++t) {
    const int col0 = sched.nt * Cfg::kBN + warp_n * Cfg::kWarpTileN;  // this warp's first column
    if (Cfg::Schedule::kSkewGate && group == 1) {
      Variant::Pause(PauseSite::kTrailerTile, t);
      SkewGate<Variant>(st.gate, t, p, sched.mt, sched.nt);
    }
    WarpAcc<Cfg> acc;
    acc.Zero();
    const bool has_b = !Cfg::Schedule::kOwnBRings || RingRow0<Cfg>(group, sched.nt) < p.n;
    const int publish_ks =
        publisher ? (Cfg::kSkewStages < ksteps ? Cfg::kSkewStages : ksteps) - 1 : -1;
    uint32_t gate = ptx::SmemAddr(&st.gate[t & 1]);
    ptx::Opaque(gate);
    // A staged instance's sink, before the main loop: it issues the epilogue's first loads.
    [[maybe_unused]] const auto sink = [&] {
      if constexpr (kStagedOf<Cfg, Variant>) {
        return StagedSink<Cfg, Variant>(
            st, t, sched.mt, sched.nt, warp_m * Cfg::kWarpTileM, warp_n * Cfg::kWarpTileN,
            static_cast<int64_t>(sched.mt) * Cfg::kBM + warp_m * Cfg::kWarpTileM, p);
      } else {
        return InRegisterSink();
      }
    }();
    if (mma_on && col0 < p.n) {  // then has_b: the warp's columns lie in its group's half
      ConsumeTileStages<Cfg, Arch, Variant, true, true>(p, sched.mt, sched.nt, rings, lo, ra, rb,
                                                        sfa, ksteps, group, publish_ks, gate, acc);
    } else if (has_b) {
      ConsumeTileStages<Cfg, Arch, Variant, false, true>(p, sched.mt, sched.nt, rings, lo, ra, rb,
                                                         sfa, ksteps, group, publish_ks, gate, acc);
    } else {
      ConsumeTileStages<Cfg, Arch, Variant, false, false>(
          p, sched.mt, sched.nt, rings, lo, ra, rb, sfa, ksteps, group, publish_ks, gate, acc);
    }
    if (col0 >= p.n) continue;
    const int64_t row0 = static_cast<int64_t>(sched.mt) * Cfg::kBM + warp_m * Cfg::kWarpTileM;
    if constexpr (kStagedOf<Cfg, Variant>) {
      FinishWarpTile<Cfg, Arch, Variant>(acc, row0, col0, p, alpha, sink);
    } else {
      FinishWarpTile<Cfg, Arch, Variant>(acc, row0, col0, p, alpha);
    }
  }
}

// alpha = 1 (/) (act_gs (x) w_gs) (contract section 6).
__device__ __forceinline__ float EpilogueAlpha(const OutProjParams& p, float act_gs) {
  const float w_gs = p.o_weight_global_scale != nullptr ? *p.o_weight_global_scale
                                                       : p.o_weight_global_scale_value;
  return __fdiv_rn(1.0f, __fmul_rn(act_gs, w_gs));
}

template <class Cfg, class Arch, class Variant>
__device__ __forceinline__ void RunOutProj(const CUtensorMap* tmap_aq, const CUtensorMap* tmap_asf,
                                           const CUtensorMap* tmap_wq, const OutProjParams& p) {
  extern __shared__ uint8_t smem_raw[];
  StorageOf<Cfg>& st = AlignedSmem<StorageOf<Cfg>>(smem_raw);
  if (threadIdx.x == 0) InitRings<Cfg>(st, tmap_aq, tmap_asf, tmap_wq);
  __syncthreads();
  const float act_gs = *p.act_global_scale;
  if (ptx::WarpIdxUniform() < Cfg::kProducerWarps) {
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
