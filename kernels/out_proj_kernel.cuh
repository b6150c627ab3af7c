#ifndef H3_KERNELS_OUT_PROJ_KERNEL_CUH_
#define H3_KERNELS_OUT_PROJ_KERNEL_CUH_

// The fused persistent NVFP4 out-projection kernel (docs/contract.md sections 3 and 6), device
// code only; its host launcher is out_proj_launch.cu.
//
// Warp roles (config.cuh): warp 0 issues the TMA/bulk loads of a multi-stage ring; warps 1..3
// quantize attn_out into act_q/act_sf in dynamically claimed units and publish per-m-tile ready
// flags (ready_flags.h); warps 4..11 (two consumer warpgroups) run the block-scaled MMAs
// (mainloop.cuh, mma.cuh) and the fused epilogue (epilogue.cuh).

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/config.cuh"
#include "kernels/epilogue.cuh"
#include "kernels/mainloop.cuh"
#include "kernels/ptx.cuh"
#include "kernels/quantize.cuh"
#include "kernels/ready_flags.h"
#include "kernels/scheduler.cuh"
#include "kernels/sm90/staged_mainloop.cuh"  // Hopper validation (Cfg::kSm90Staged) only

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
  bool vec16_epilogue;     // gate, residual and out 16-byte aligned: StoreTileVec16
};

// The call's quantizer unit map (work_units.h): the front is the first wave's m-tiles.
template <class Cfg>
__device__ __forceinline__ WorkUnits<Cfg::kQuantRows> CallUnits(const KernelParams& p) {
  const TileScheduler<Cfg> sched(p.m, p.n);
  return WorkUnits<Cfg::kQuantRows>(p.m, p.k,
                                    FrontMTiles(gridDim.x, sched.num_n_tiles, sched.num_m_tiles));
}

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

// Where the next stage's activation scales live (config.cuh kSfaSlots): a slot of the scale
// ring and the stage's place in that slot's box. The load warp and every consumer advance one in
// the same order, one stage at a time.
template <class Cfg>
struct SfaPos {
  int slot = 0, sub = 0;
  __device__ __forceinline__ const uint8_t* Row0(const uint8_t* smem) const {
    return smem + Cfg::kSfaOffset + slot * Cfg::kSfaSlotBytes + sub * Cfg::kSfaRowBytes;
  }
  __device__ __forceinline__ void Advance() {
    if (++sub == Cfg::kSfaStagesPerBox) {
      sub = 0;
      if (++slot == Cfg::kSfaSlots) slot = 0;
    }
  }
};

// Producer warp 0, one elected lane: fill the ring.
template <class Cfg>
__device__ __forceinline__ void LoadLoop(const KernelParams& p, const CUtensorMap* tmap_aq,
                                         const CUtensorMap* tmap_asf, const CUtensorMap* tmap_wq,
                                         uint8_t* smem, uint64_t* full, uint64_t* empty) {
  TileScheduler<Cfg> sched(p.m, p.n);
  const WorkUnits<Cfg::kQuantRows> units = CallUnits<Cfg>(p);
  const int ksteps = p.k / Cfg::kBK;
  const int chunk_elems = ChunkElems(p.k);
  // Bytes of one 128-row group of weight scales: round_up(K/16, 4) / 4 * 512 (K/16 % 16 == 0).
  const int64_t sfb_group_bytes = static_cast<int64_t>(p.k / Cfg::kSfVec / 4) * 512;
  const int n_groups = p.n / 128;  // 128-row weight-scale groups that exist
  int stage = 0;
  uint32_t phase = 0;
  SfaPos<Cfg> sfa;
  int ready_mt = -1, ready_chunk = -1;  // the newest (m-tile, chunk) seen complete
  for (; sched.Valid(); sched.Next()) {
    const int mt = sched.mt, nt = sched.nt;
    const uint32_t groups_ready = units.GroupsInMTile(mt);
    // Weight-scale groups of this tile: kSfbGroups, or fewer in a half tile at the end of N.
    const int g0 = nt * Cfg::kSfbGroups;
    const int sfb_groups = n_groups - g0 < Cfg::kSfbGroups ? n_groups - g0 : Cfg::kSfbGroups;
    const int sfb_missing_bytes = (Cfg::kSfbGroups - sfb_groups) * Cfg::kSfbGroupBytes;
    // The tile's residual [kBM rows that exist][kBN] into L2 now, so the epilogue after this
    // tile's k-loop finds it there instead of waiting on DRAM (perf_model: the v2 ladder's
    // residual prefetch). A hint only: results do not depend on it.
    if (p.prefetch_residual) {
      const int64_t row0 = static_cast<int64_t>(mt) * Cfg::kBM;
      const int64_t rows = p.m - row0 < Cfg::kBM ? p.m - row0 : Cfg::kBM;
      const uint16_t* src = p.residual + row0 * p.n + static_cast<int64_t>(nt) * Cfg::kBN;
      const int bytes = sfb_groups * 128 * 2;
      for (int64_t r = 0; r < rows; ++r) ptx::BulkPrefetchL2(src + r * p.n, bytes);
    }
    for (int ks = 0; ks < ksteps; ++ks) {
      // The stage's k-chunk of this m-tile must be quantized (ready_flags.h); each (m-tile,
      // chunk) is waited for once, by the first tile of this CTA that needs it.
      const int chunk = ks * Cfg::kBK / chunk_elems;
      if (mt != ready_mt || chunk > ready_chunk) {
        if (mt != ready_mt) ready_chunk = -1;
        for (int c = ready_chunk + 1; c <= chunk; ++c)
          WaitChunkReady(p.ready_flags, mt, c, groups_ready);
        ready_mt = mt;
        ready_chunk = chunk;
      }
      ptx::MbarWait(&empty[stage], phase ^ 1u);
      // The first stage of an activation-scale box also loads the box (config.cuh kSfaSlots).
      const bool box = sfa.sub == 0;
      ptx::MbarArriveExpectTx(
          &full[stage], Cfg::kStageBytes - sfb_missing_bytes + (box ? Cfg::kSfaBoxTxBytes : 0));
      ptx::TmaLoad2D(smem + Cfg::kAOffset + stage * Cfg::kATileBytes, tmap_aq, &full[stage],
                     ks * Cfg::kRowBytes, mt * Cfg::kBM);
      if (box) {
        ptx::TmaLoad2D(smem + Cfg::kSfaOffset + sfa.slot * Cfg::kSfaSlotBytes, tmap_asf,
                       &full[stage], ks * Cfg::kSfaRowBytes, mt * Cfg::kBM);
      }
      sfa.Advance();
      ptx::TmaLoad2D(smem + Cfg::kBOffset + stage * Cfg::kBTileBytes, tmap_wq, &full[stage],
                     ks * Cfg::kRowBytes, nt * Cfg::kBN);
      for (int gi = 0; gi < sfb_groups; ++gi) {
        ptx::BulkLoad(
            smem + Cfg::kSfbOffset + stage * Cfg::kSfbTileBytes + gi * Cfg::kSfbGroupBytes,
            p.w_sf + (g0 + gi) * sfb_group_bytes + static_cast<int64_t>(ks) * Cfg::kSfbGroupBytes,
            Cfg::kSfbGroupBytes, &full[stage]);
      }
      if (++stage == Cfg::kStages) {
        stage = 0;
        phase ^= 1u;
      }
    }
  }
}

// The SM120 consumer (also the faithful sm_90 build): one tile's stages, one ConsumeStage each.
// A warp whose tile lies beyond N (half a tile at the end of N) only keeps the ring's pace.
template <class Cfg>
__device__ __forceinline__ void ConsumeTileStages(uint8_t* smem, uint64_t* full, uint64_t* empty,
                                                  int& stage, uint32_t& phase, SfaPos<Cfg>& sfa,
                                                  int ksteps, int warp_m, int warp_n, bool active,
                                                  WarpAcc<Cfg>& acc) {
  for (int ks = 0; ks < ksteps; ++ks) {
    ptx::MbarWait(&full[stage], phase);
    if (active) {
      ConsumeStage<Cfg>(smem + Cfg::kAOffset + stage * Cfg::kATileBytes,
                        smem + Cfg::kBOffset + stage * Cfg::kBTileBytes, sfa.Row0(smem),
                        smem + Cfg::kSfbOffset + stage * Cfg::kSfbTileBytes,
                        warp_m * Cfg::kWarpTileM, warp_n * Cfg::kWarpTileN, acc);
    }
    sfa.Advance();
    ptx::MbarArrive(&empty[stage]);
    if (++stage == Cfg::kStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
}

// Consumer warps: MMA over the ring, then the fused epilogue straight from registers.
template <class Cfg>
__device__ __forceinline__ void ConsumerLoop(const KernelParams& p, uint8_t* smem, uint64_t* full,
                                             uint64_t* empty, const EpilogueArgs& e) {
  const int cw = (threadIdx.x >> 5) - Cfg::kProducerWarps;
  const int warp_m = cw / Cfg::kWarpsN, warp_n = cw % Cfg::kWarpsN;
  TileScheduler<Cfg> sched(p.m, p.n);
  const int ksteps = p.k / Cfg::kBK;
  int stage = 0;
  uint32_t phase = 0;
  SfaPos<Cfg> sfa;
  for (; sched.Valid(); sched.Next()) {
    const int mt = sched.mt, nt = sched.nt;
    const int col0 = nt * Cfg::kBN + warp_n * Cfg::kWarpTileN;  // this warp's first column
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
      sm90::ConsumeTile<Cfg>(smem, full, empty, stage, phase, ksteps, acc);
      sm90::FinishTile<Cfg>(acc);
#endif
    } else {
      ConsumeTileStages<Cfg>(smem, full, empty, stage, phase, sfa, ksteps, warp_m, warp_n,
                             col0 < p.n, acc);
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
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + Cfg::kBarOffset);
  uint64_t* empty = full + Cfg::kStages;
  const int warp = threadIdx.x >> 5;

  if (threadIdx.x == 0) {
    for (int s = 0; s < Cfg::kStages; ++s) {
      ptx::MbarInit(&full[s], 1);  // the loader's arrive.expect_tx
      // Every consumer thread arrives: mbarrier.arrive releases only the arriving thread's own
      // shared-memory reads, and each thread read the stage (WAR before the next TMA write).
      ptx::MbarInit(&empty[s], Cfg::kConsumerWarps * 32);
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
        LoadLoop<Cfg>(p, &tmap_aq, &tmap_asf, &tmap_wq, smem, full, empty);
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
    ConsumerLoop<Cfg>(p, smem, full, empty, e);
  }
}

}  // namespace h3::kernels

#endif  // H3_KERNELS_OUT_PROJ_KERNEL_CUH_
