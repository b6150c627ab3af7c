#ifndef H3_KERNELS_OUT_PROJ_KERNEL_CUH_
#define H3_KERNELS_OUT_PROJ_KERNEL_CUH_

// The fused persistent NVFP4 out-projection kernel (docs/contract.md sections 3 and 6), device
// code only; its host launcher is out_proj_launch.cu.
//
// Warp roles (config.cuh): warp 0 issues the TMA/bulk loads of the rings (one ring, or skewed: a
// shared activation ring and a weight ring per consumer group); warps 1..3 quantize attn_out into
// act_q/act_sf in dynamically claimed units and publish per-m-tile ready flags (ready_flags.h);
// warps 4..11 (two consumer warpgroups) run the block-scaled MMAs (mainloop.cuh, mma.cuh) and the
// fused epilogue (epilogue.cuh), skewed a few stages apart so that one's epilogue runs under the
// other's MMAs.

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/config.cuh"
#include "kernels/epilogue.cuh"
#include "kernels/kernel_params.cuh"
#include "kernels/loader.cuh"
#include "kernels/mainloop.cuh"
#include "kernels/ptx.cuh"
#include "kernels/quantize.cuh"
#include "kernels/ready_flags.h"
#include "kernels/rings.cuh"
#include "kernels/scheduler.cuh"
#include "kernels/sm90/staged_mainloop.cuh"  // Hopper validation (Cfg::kSm90Staged) only

namespace h3::kernels {

// Producer warps 1..3: claim units (a row group x one or all k-chunks), quantize, publish.
template <class Cfg>
__device__ __forceinline__ void QuantizerLoop(const KernelParams& p, float act_gs) {
  const int lane = threadIdx.x & 31;
  const WorkUnits<Cfg::kQuantRows> units = CallUnits<Cfg>(p);
  const OsComputed os_src{MakeQuantParams(act_gs)};  // one division per block: no table in smem
  const int blocks_per_row = p.k / Cfg::kSfVec;
  const int blocks_per_chunk = ChunkElems(p.k) / Cfg::kSfVec;
  constexpr int kDepth = 4;  // blocks in flight per lane (memory-level parallelism)
  for (;;) {
    const uint32_t u = ClaimUnit(p.ready_flags);
    if (u >= units.count) break;
    const WorkUnit w = units.Unit(u);
    // The unit's blocks [b_begin, b_end) of each of its rows, as one index space over rows so
    // that every lane has blocks in flight whatever the chunk width.
    const int b_begin = w.chunk_begin * blocks_per_chunk;
    const int b_end_c = w.chunk_end * blocks_per_chunk;
    const int b_end = b_end_c < blocks_per_row ? b_end_c : blocks_per_row;
    const int nb = b_end - b_begin;
    const int total = static_cast<int>(w.row_end - w.row0) * nb;
    for (int i0 = lane; i0 < total; i0 += 32 * kDepth) {
#pragma unroll
      for (int d = 0; d < kDepth; ++d) {
        const int i = i0 + 32 * d;
        if (i < total) {
          const int64_t row = w.row0 + i / nb;
          const int b = b_begin + i % nb;
          QuantizeBlockFromGlobal(p.attn_out + row * p.k + b * Cfg::kSfVec, os_src,
                                  p.act_q + row * (p.k / 2) + b * 8,
                                  p.act_sf + row * blocks_per_row + b);
        }
      }
    }
    PublishUnit(p.ready_flags, w.row0 / Cfg::kBM, w.chunk_begin, w.chunk_end);
  }
}

// Skewed, the trailing group at the start of its tile t (the CTA's t-th): waits until the leading
// group is kSkewStages stages (or the whole tile) into tile t, i.e. for phase t / 2 of gate
// t % 2 (config.cuh: never lapped). Timing only: the rings' mbarriers order every shared-memory
// access, this keeps the groups apart. Deadlock-free: the leader reaches that lead on A stages
// the trailer no longer holds (config.cuh kSkewStages). gate: the two gates, consecutive.
__device__ __forceinline__ void SkewGate(uint64_t* gate, uint32_t t) {
  ptx::MbarWait(&gate[t & 1], (t >> 1) & 1);
}

// The SM120 consumer (also the faithful sm_90 build): one tile's stages, one ConsumeStage each.
// A warp whose tile lies beyond N (half a tile at the end of N) only keeps the rings' pace; a
// skewed group without an N half in this tile (has_b false) touches only the A ring. One thread
// of the leading group (publish) arrives on the tile's gate kSkewStages stages in (SkewGate).
template <class Cfg>
__device__ __forceinline__ void ConsumeTileStages(const Rings<Cfg>& rings,
                                                  RingPos<Cfg::kAStages>& ra,
                                                  RingPos<Cfg::kStages>& rb, SfaPos<Cfg>& sfa,
                                                  int ksteps, int group, int warp_m, int warp_n,
                                                  bool has_b, bool active, uint64_t* publish,
                                                  WarpAcc<Cfg>& acc) {
  const int n_base = (warp_n * Cfg::kWarpTileN) % Cfg::kGroupBN;  // in the ring's B tile
  const int publish_at = (Cfg::kSkewStages < ksteps ? Cfg::kSkewStages : ksteps) - 1;
  for (int ks = 0; ks < ksteps; ++ks) {
    ptx::MbarWait(rings.Full(ra.stage), ra.phase);
    const int slot_b = group * Cfg::kStages + rb.stage;
    if (Cfg::kSkewed && has_b) ptx::MbarWait(rings.FullB(slot_b), rb.phase);
    if (active) {
      const int sb = Cfg::kSkewed ? rb.stage : ra.stage;
      ConsumeStage<Cfg>(rings.A(ra.stage), rings.B(group, sb), sfa.Row0(rings.smem),
                        rings.Sfb(group, sb), warp_m * Cfg::kWarpTileM, n_base, acc);
    }
    sfa.Advance();
    ptx::MbarArrive(rings.Empty(ra.stage));
    ra.Advance();
    if (Cfg::kSkewed && has_b) {
      ptx::MbarArrive(rings.EmptyB(slot_b));
      rb.Advance();
    }
    if (publish != nullptr && ks == publish_at) ptx::MbarArrive(publish);
  }
}

// Consumer warps: MMA over the rings, then the fused epilogue straight from registers.
template <class Cfg>
__device__ __forceinline__ void ConsumerLoop(const KernelParams& p, const Rings<Cfg>& rings,
                                             const EpilogueArgs& e) {
  const int cw = (threadIdx.x >> 5) - Cfg::kProducerWarps;
  // Lockstep: warp (m, n) = (cw / kWarpsN, cw % kWarpsN). Skewed: warpgroup g = cw / 4 owns the
  // warp columns [g, g + 1) * kWarpsN / kGroups, as a kWarpsM x (kWarpsN / kGroups) grid.
  constexpr int kGroupWarpsN = Cfg::kWarpsN / Cfg::kGroups;
  const int group = Cfg::kSkewed ? cw / (Cfg::kConsumerWarps / Cfg::kGroups) : 0;
  const int local = cw % (Cfg::kConsumerWarps / Cfg::kGroups);
  const int warp_m = local / kGroupWarpsN;
  const int warp_n = group * kGroupWarpsN + local % kGroupWarpsN;
  const bool publisher = Cfg::kSkewed && cw == 0 && (threadIdx.x & 31) == 0;
  // Timing only (OutProjDebug::kOneGroupMma): the second warpgroup keeps pace without MMAs.
  const bool mma_on = !(p.one_group_mma && cw >= Cfg::kConsumerWarps / 2);
  TileScheduler<Cfg> sched(p.m, p.n);
  const int ksteps = p.k / Cfg::kBK;
  RingPos<Cfg::kAStages> ra;
  RingPos<Cfg::kStages> rb;
  SfaPos<Cfg> sfa;
  for (uint32_t t = 0; sched.Valid(); sched.Next(), ++t) {
    const int mt = sched.mt, nt = sched.nt;
    const int col0 = nt * Cfg::kBN + warp_n * Cfg::kWarpTileN;  // this warp's first column
    if (Cfg::kSkewed && group == 1) SkewGate(rings.Gate(0), t);
    WarpAcc<Cfg> acc;
#pragma unroll
    for (int i = 0; i < Cfg::kMFrags; ++i)
#pragma unroll
      for (int j = 0; j < Cfg::kNFrags; ++j)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc.v[i][j][c] = 0.0f;
    if constexpr (Cfg::kSm90Staged) {
#if H3_NATIVE_BLOCK_SCALED_MMA
      __trap();  // a Hopper-only config: out_proj.cc never launches it on sm_12x
#else
      // Hopper validation, fast: the tile's stages as one stream of k-steps, then its wgmma
      // accumulator layout -> the warp-tile layout.
      static_assert(!Cfg::kSkewed, "the staged loop consumes one ring");
      sm90::ConsumeTile<Cfg>(rings.smem, rings.Full(0), rings.Empty(0), ra.stage, ra.phase, ksteps,
                             acc);
      sm90::FinishTile<Cfg>(acc);
#endif
    } else {
      const bool has_b = !Cfg::kSkewed || RingRow0<Cfg>(group, nt) < p.n;
      ConsumeTileStages<Cfg>(rings, ra, rb, sfa, ksteps, group, warp_m, warp_n, has_b,
                             mma_on && col0 < p.n, publisher ? rings.Gate(t & 1) : nullptr, acc);
    }
    if (col0 >= p.n) continue;
    const int64_t row0 = static_cast<int64_t>(mt) * Cfg::kBM + warp_m * Cfg::kWarpTileM;
    if (p.skip_epilogue) {
      FoldTile<Cfg>(acc, e);
    } else if (e.vec16) {
      StoreTileVec16<Cfg>(acc, row0, col0, e);
    } else {
      StoreTile<Cfg>(acc, row0, col0, e);
    }
  }
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    OutProjKernel(const __grid_constant__ CUtensorMap tmap_aq,
                  const __grid_constant__ CUtensorMap tmap_asf,
                  const __grid_constant__ CUtensorMap tmap_wq, const KernelParams p) {
  extern __shared__ uint8_t smem_raw[];
  // Realign by an offset from the shared array itself, so the compiler keeps knowing these
  // are shared-memory addresses (LDS, not generic LD).
  const uint32_t misalign = ptx::SmemAddr(smem_raw) & (Cfg::kSmemAlign - 1);
  uint8_t* smem = smem_raw + ((Cfg::kSmemAlign - misalign) & (Cfg::kSmemAlign - 1));
  const Rings<Cfg> rings(smem);
  const int warp = threadIdx.x >> 5;

  if (threadIdx.x == 0) {
    for (int s = 0; s < Cfg::kAStages; ++s) {
      ptx::MbarInit(rings.Full(s), 1);  // the loader's arrive.expect_tx
      // Every consumer thread arrives: mbarrier.arrive releases only the arriving thread's own
      // shared-memory reads, and each thread read the stage (WAR before the next TMA write).
      ptx::MbarInit(rings.Empty(s), Cfg::kConsumerWarps * 32);
    }
    for (int s = 0; s < Cfg::kBRingBars; ++s) {
      ptx::MbarInit(rings.FullB(s), 1);
      ptx::MbarInit(rings.EmptyB(s), Cfg::kConsumerWarps / Cfg::kGroups * 32);  // its group
    }
    if constexpr (Cfg::kSkewed) {
      ptx::MbarInit(rings.Gate(0), 1);  // the leader's publishing thread
      ptx::MbarInit(rings.Gate(1), 1);
    }
    ptx::FenceBarrierInit();
    ptx::PrefetchTensorMap(&tmap_aq);
    ptx::PrefetchTensorMap(&tmap_asf);
    ptx::PrefetchTensorMap(&tmap_wq);
  }
  __syncthreads();

  const float act_gs = *p.act_gs;
  if (warp < Cfg::kProducerWarps) {
    // The producer warpgroup (all 4 warps, before any lane diverges) hands registers over.
    if constexpr (Cfg::kSetMaxNReg) ptx::SetMaxNRegDec<Cfg::kProducerRegs>();
    if (warp == Cfg::kLoadWarp) {
      if ((threadIdx.x & 31) == 0) {
        Loader<Cfg>(p, &tmap_aq, &tmap_asf, &tmap_wq, smem).Run();
      }
    } else {
      QuantizerLoop<Cfg>(p, act_gs);
    }
  } else {
    if constexpr (Cfg::kSetMaxNReg) ptx::SetMaxNRegInc<Cfg::kConsumerRegs>();
    const float w_gs = p.w_gs_dev != nullptr ? *p.w_gs_dev : p.w_gs;
    EpilogueArgs e;
    e.m = p.m;
    e.n = p.n;
    e.g = p.g;
    e.alpha = __fdiv_rn(1.0f, __fmul_rn(act_gs, w_gs));  // alpha = 1 (/) (act_gs (x) w_gs)
    e.gate = p.gate;
    e.gate_index = p.gate_index;
    e.residual = p.residual;
    e.out = p.out;
    e.vec16 = p.vec16_epilogue;
    ConsumerLoop<Cfg>(p, rings, e);
  }
}

}  // namespace h3::kernels

#endif  // H3_KERNELS_OUT_PROJ_KERNEL_CUH_
