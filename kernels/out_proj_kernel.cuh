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

// The rings in shared memory (config.cuh): A stage s; B / weight-scale stage s of ring g (the
// lockstep config has one ring, g = 0, whose stages are the A ring's).
template <class Cfg>
struct Rings {
  uint8_t* smem;
  // mbarriers (config.cuh kBarOffset), addressed from smem so that only one pointer stays live:
  //   Full(s) / Empty(s): A ring (lockstep: the ring), the loader's arrive.expect_tx / every
  //   consumer thread; FullB(i) / EmptyB(i), i = g * kStages + s: B ring g (skewed), the loader /
  //   group g's threads; Gate(i), i = 0, 1: the skew gates (SkewGate).
  __device__ __forceinline__ explicit Rings(uint8_t* base) : smem(base) {}
  __device__ __forceinline__ uint64_t* Bar(int i) const {
    return reinterpret_cast<uint64_t*>(smem + Cfg::kBarOffset) + i;
  }
  __device__ __forceinline__ uint64_t* Full(int s) const { return Bar(s); }
  __device__ __forceinline__ uint64_t* Empty(int s) const { return Bar(Cfg::kAStages + s); }
  __device__ __forceinline__ uint64_t* FullB(int i) const { return Bar(2 * Cfg::kAStages + i); }
  __device__ __forceinline__ uint64_t* EmptyB(int i) const {
    return Bar(2 * Cfg::kAStages + Cfg::kBRingBars + i);
  }
  __device__ __forceinline__ uint64_t* Gate(int i) const {
    return Bar(2 * Cfg::kAStages + 2 * Cfg::kBRingBars + i);
  }
  __device__ __forceinline__ uint8_t* A(int s) const {
    return smem + Cfg::kAOffset + s * Cfg::kATileBytes;
  }
  __device__ __forceinline__ uint8_t* B(int g, int s) const {
    return smem + Cfg::kBOffset + (g * Cfg::kStages + s) * Cfg::kBRingTileBytes;
  }
  __device__ __forceinline__ uint8_t* Sfb(int g, int s) const {
    return smem + Cfg::kSfbOffset + (g * Cfg::kStages + s) * Cfg::kSfbRingTileBytes;
  }
};

// A position in a ring of kDepth stages: the stage and the parity of its current phase.
template <int kDepth>
struct RingPos {
  int stage = 0;
  uint32_t phase = 0;
  __device__ __forceinline__ void Advance() {
    if (++stage == kDepth) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

// The load warp's walk of one ring over this CTA's tiles, k-step by k-step.
template <class Cfg, int kDepth>
struct RingWalk {
  TileScheduler<Cfg> sched;
  int ks = 0;
  RingPos<kDepth> pos;
  __device__ __forceinline__ RingWalk(int64_t m, int n) : sched(m, n) {}
  __device__ __forceinline__ void Next(int ksteps) {
    pos.Advance();
    if (++ks == ksteps) {
      ks = 0;
      sched.Next();
    }
  }
};

// Producer warp 0, one elected lane: fills the rings. It never blocks on one ring: each round
// polls the A ring (quantizer ready flag, then a free slot) and, skewed, each group's B ring, and
// issues what it can, so a group that is behind (its B ring full) never holds up the other. A
// round that issued nothing sleeps in a suspending try_wait on a full ring's next slot (woken when
// it frees, or after a hint to poll the others), or briefly while the quantizer is behind: a
// spinning poll would take issue slots from the consumer warps of its sub-partition. The hint is
// short while a B ring waits too: when one group runs alone (the other in its epilogue, holding
// A slots), its B ring refills every alone stage (~0.5 us on the RTX 5090) and must not wait
// behind an A slot that frees only when the other group is back.
enum class RingState { kDone, kIssued, kWaitReady, kWaitSlot };

template <class Cfg>
struct Loader {
  static constexpr uint32_t kIdleNs = 256, kIdleShortNs = 64;
  const KernelParams& p;
  const CUtensorMap *tmap_aq, *tmap_asf, *tmap_wq;
  Rings<Cfg> rings;
  WorkUnits<Cfg::kQuantRows> units;
  int ksteps, chunk_elems;
  int64_t sfb_group_bytes;  // one 128-row group of weight scales: K/16/4 * 512 (K/16 % 16 == 0)
  RingWalk<Cfg, Cfg::kAStages> a;
  RingWalk<Cfg, Cfg::kStages> b0, b1;  // skewed: each group's B ring
  SfaPos<Cfg> sfa;
  int ready_mt = -1, ready_chunk = -1;  // the newest (m-tile, chunk) seen complete

  __device__ __forceinline__ Loader(const KernelParams& params, const CUtensorMap* aq,
                                    const CUtensorMap* asf, const CUtensorMap* wq, uint8_t* smem)
      : p(params),
        tmap_aq(aq),
        tmap_asf(asf),
        tmap_wq(wq),
        rings(smem),
        units(CallUnits<Cfg>(params)),
        ksteps(params.k / Cfg::kBK),
        chunk_elems(ChunkElems(params.k)),
        sfb_group_bytes(static_cast<int64_t>(params.k / Cfg::kSfVec / 4) * 512),
        a(params.m, params.n),
        b0(params.m, params.n),
        b1(params.m, params.n) {}

  // 128-row weight-scale groups of ring g's part of n-tile nt that exist (N may end in half a
  // 256-row tile: the lockstep ring then loads B rows TMA fills with zeros, and fewer scales).
  __device__ __forceinline__ int SfbGroups(int g, int nt) const {
    const int g0 = (nt * Cfg::kBN + g * Cfg::kGroupBN) / 128;
    const int left = p.n / 128 - g0;
    return left < Cfg::kGroupBN / 128 ? left : Cfg::kGroupBN / 128;
  }
  // Ring g's B codes and weight scales of k-step ks of n-tile nt, completing on `bar`.
  __device__ __forceinline__ void LoadB(int g, int stage, uint64_t* bar, int ks, int nt) const {
    const int row0 = nt * Cfg::kBN + g * Cfg::kGroupBN;
    ptx::TmaLoad2D(rings.B(g, stage), tmap_wq, bar, ks * Cfg::kRowBytes, row0);
    const int groups = SfbGroups(g, nt);
    for (int gi = 0; gi < groups; ++gi) {
      ptx::BulkLoad(rings.Sfb(g, stage) + gi * Cfg::kSfbGroupBytes,
                    p.w_sf + (row0 / 128 + gi) * sfb_group_bytes +
                        static_cast<int64_t>(ks) * Cfg::kSfbGroupBytes,
                    Cfg::kSfbGroupBytes, bar);
    }
  }
  // The tile's residual [kBM rows that exist][its columns] into L2 now, so the epilogue after
  // this tile's k-loop finds it there instead of waiting on DRAM (perf_model: the v2 ladder's
  // residual prefetch). A hint only: results do not depend on it.
  __device__ __forceinline__ void PrefetchResidual(int mt, int nt) const {
    if (!p.prefetch_residual) return;
    const int64_t row0 = static_cast<int64_t>(mt) * Cfg::kBM;
    const int64_t rows = p.m - row0 < Cfg::kBM ? p.m - row0 : Cfg::kBM;
    const uint16_t* src = p.residual + row0 * p.n + static_cast<int64_t>(nt) * Cfg::kBN;
    const int cols = p.n - nt * Cfg::kBN < Cfg::kBN ? p.n - nt * Cfg::kBN : Cfg::kBN;
    for (int64_t r = 0; r < rows; ++r) ptx::BulkPrefetchL2(src + r * p.n, cols * 2);
  }

  // One A stage (lockstep: the whole stage) if its k-chunk is quantized (ready_flags.h; each
  // (m-tile, chunk) is checked until complete once, by the first tile of this CTA that needs it)
  // and its slot is free.
  __device__ __forceinline__ RingState TryA() {
    if (!a.sched.Valid()) return RingState::kDone;
    const int mt = a.sched.mt, nt = a.sched.nt;
    const int chunk = a.ks * Cfg::kBK / chunk_elems;
    if (mt != ready_mt) {
      ready_mt = mt;
      ready_chunk = -1;
    }
    while (ready_chunk < chunk) {
      if (!ChunkReady(p.ready_flags, mt, ready_chunk + 1, units.GroupsInMTile(mt))) {
        return RingState::kWaitReady;
      }
      ++ready_chunk;
    }
    const int stage = a.pos.stage;
    if (!ptx::MbarTest(rings.Empty(stage), a.pos.phase ^ 1u)) return RingState::kWaitSlot;
    if (a.ks == 0) PrefetchResidual(mt, nt);
    // The first stage of an activation-scale box also loads the box (config.cuh kSfaSlots).
    const bool box = sfa.sub == 0;
    const int sfb_missing =
        Cfg::kSkewed ? 0 : (Cfg::kSfbGroups - SfbGroups(0, nt)) * Cfg::kSfbGroupBytes;
    ptx::MbarArriveExpectTx(rings.Full(stage),
                            Cfg::kAStageBytes - sfb_missing + (box ? Cfg::kSfaBoxTxBytes : 0));
    ptx::TmaLoad2D(rings.A(stage), tmap_aq, rings.Full(stage), a.ks * Cfg::kRowBytes,
                   mt * Cfg::kBM);
    if (box) {
      ptx::TmaLoad2D(rings.smem + Cfg::kSfaOffset + sfa.slot * Cfg::kSfaSlotBytes, tmap_asf,
                     rings.Full(stage), a.ks * Cfg::kSfaRowBytes, mt * Cfg::kBM);
    }
    sfa.Advance();
    if constexpr (!Cfg::kSkewed) LoadB(0, stage, rings.Full(stage), a.ks, nt);
    a.Next(ksteps);
    return RingState::kIssued;
  }
  // Skewed: one stage of group g's B ring if its slot is free; tiles without an N half g (half a
  // tile at the end of N) are skipped, as group g's consumers skip them.
  __device__ __forceinline__ RingWalk<Cfg, Cfg::kStages>& WalkB(int g) {
    static_assert(Cfg::kGroups <= 2, "b0, b1");
    return g == 0 ? b0 : b1;
  }
  __device__ __forceinline__ RingState TryB(int g) {
    RingWalk<Cfg, Cfg::kStages>& w = WalkB(g);
    if (!w.sched.Valid()) return RingState::kDone;
    const int nt = w.sched.nt;
    if (nt * Cfg::kBN + g * Cfg::kGroupBN >= p.n) {
      w.ks = 0;
      w.sched.Next();
      return RingState::kIssued;  // progress: poll again at once
    }
    const int slot = g * Cfg::kStages + w.pos.stage;
    if (!ptx::MbarTest(rings.EmptyB(slot), w.pos.phase ^ 1u)) return RingState::kWaitSlot;
    ptx::MbarArriveExpectTx(rings.FullB(slot), Cfg::kBStageBytes);
    LoadB(g, w.pos.stage, rings.FullB(slot), w.ks, nt);
    w.Next(ksteps);
    return RingState::kIssued;
  }
  __device__ __forceinline__ void Run() {
    for (;;) {
      const RingState sa = TryA();
      RingState sb[Cfg::kGroups];
      bool active = sa != RingState::kDone, issued = sa == RingState::kIssued;
      if constexpr (Cfg::kSkewed) {
#pragma unroll
        for (int g = 0; g < Cfg::kGroups; ++g) {
          sb[g] = TryB(g);
          active = active || sb[g] != RingState::kDone;
          issued = issued || sb[g] == RingState::kIssued;
        }
      }
      if (!active) break;
      if (issued) continue;
      if (sa == RingState::kWaitSlot) {
        bool b_waits = false;
        if constexpr (Cfg::kSkewed) {
#pragma unroll
          for (int g = 0; g < Cfg::kGroups; ++g) b_waits = b_waits || sb[g] == RingState::kWaitSlot;
        }
        ptx::MbarTryWaitFor(rings.Empty(a.pos.stage), a.pos.phase ^ 1u,
                            b_waits ? kIdleShortNs : kIdleNs);
      } else if (sa == RingState::kWaitReady) {
        __nanosleep(64);
      } else if constexpr (Cfg::kSkewed) {  // A done: only B rings left, all full
        const int g = sb[0] == RingState::kWaitSlot ? 0 : 1;
        RingWalk<Cfg, Cfg::kStages>& w = WalkB(g);
        ptx::MbarTryWaitFor(rings.EmptyB(g * Cfg::kStages + w.pos.stage), w.pos.phase ^ 1u,
                            kIdleNs);
      }
    }
  }
};

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
      const bool has_b = !Cfg::kSkewed || nt * Cfg::kBN + group * Cfg::kGroupBN < p.n;
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
