#ifndef H3_KERNELS_LOADER_CUH_
#define H3_KERNELS_LOADER_CUH_

// Producer warp 0 of the fused kernel: the TMA / bulk loads that fill the rings (rings.cuh), each
// A stage after its k-chunk is quantized, and with the low-rank branch a tile's last A stage after
// its m-tile's l is written (ready_flags.h).

#include <cuda.h>

#include <cstdint>

#include "kernels/device/bounded_wait.cuh"
#include "kernels/device/params.h"
#include "kernels/device/ptx.cuh"
#include "kernels/device/ready_flags.h"
#include "kernels/device/rings.cuh"
#include "kernels/device/scheduler.cuh"
#include "kernels/device/variant.cuh"
#include "kernels/device/work_units.h"

namespace h3::kernels {

// The load warp's walk of one ring over this CTA's tiles, k-step by k-step.
template <class Cfg, int kRingStages>
struct RingWalk {
  TileScheduler<Cfg> sched;
  int ks = 0;
  RingPos<kRingStages> pos;
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
// polls the A ring (quantizer ready flag, then a free slot) and each group's own B ring (the
// schedule's kOwnBRings: skewed), and issues what it can, so a group that is behind (its B ring
// full) never holds up the other. A round that issued nothing sleeps in a suspending try_wait on
// a full ring's next slot (woken when it frees, or after a hint to poll the others), or briefly
// while the quantizer is behind: a spinning poll would take issue slots from the consumer warps
// of its sub-partition. The hint is short while a B ring waits too: when one group runs alone
// (the other in its epilogue, holding A slots), its B ring refills every alone stage (~0.5 us on
// the RTX 5090) and must not wait behind an A slot that frees only when the other group is back.
enum class RingState { kDone, kIssued, kWaitReady, kWaitSlot };

template <class Cfg, class Variant>
struct Loader {
  static constexpr uint32_t kIdleNs = 256, kIdleShortNs = 64;
  const OutProjParams& p;
  const CUtensorMap *tmap_aq, *tmap_asf, *tmap_wq;
  SharedStorage<Cfg>& st;
  UnitsOf<Cfg, Variant> units;
  int ksteps, chunk_elems;
  int64_t sfb_group_bytes;  // one 128-row group of weight scales: K/16/4 * 512 (K/16 % 16 == 0)
  RingWalk<Cfg, Cfg::kAStages> a;
  RingWalk<Cfg, Cfg::kStages> b0, b1;  // kOwnBRings: each group's B ring
  SfaPos<Cfg> sfa;
  int ready_mt = -1, ready_chunk = -1;  // the newest (m-tile, chunk) seen complete
  int l_ready_mt = -1;  // the branch's: the newest m-tile seen with its l written

  __device__ __forceinline__ Loader(const OutProjParams& params, const CUtensorMap* aq,
                                    const CUtensorMap* asf, const CUtensorMap* wq,
                                    SharedStorage<Cfg>& storage)
      : p(params),
        tmap_aq(aq),
        tmap_asf(asf),
        tmap_wq(wq),
        st(storage),
        units(CallUnits<Cfg, Variant>(params)),
        ksteps(params.k / Cfg::kBK),
        chunk_elems(ChunkElems(params.k)),
        sfb_group_bytes(static_cast<int64_t>(params.k / Cfg::kSfVec / 4) * 512),
        a(params.m, params.n),
        b0(params.m, params.n),
        b1(params.m, params.n) {}

  // 128-row weight-scale groups of ring `ring`'s part of n-tile nt that exist (N may end in half a
  // 256-row tile: the lockstep ring then loads B rows TMA fills with zeros, and fewer scales).
  __device__ __forceinline__ int SfbGroups(int ring, int nt) const {
    const int first = RingRow0<Cfg>(ring, nt) / 128;
    const int left = p.n / 128 - first;
    return left < Cfg::kGroupBN / 128 ? left : Cfg::kGroupBN / 128;
  }
  // Ring `ring`'s B codes and weight scales of k-step ks of n-tile nt, completing on `bar`.
  __device__ __forceinline__ void LoadB(int ring, int stage, uint64_t* bar, int ks, int nt) const {
    const int row0 = RingRow0<Cfg>(ring, nt);
    ptx::TmaLoad2D(st.B(ring, stage), tmap_wq, bar, ks * Cfg::kRowBytes, row0);
    const int groups = SfbGroups(ring, nt);
    for (int gi = 0; gi < groups; ++gi) {
      ptx::BulkLoad(st.Sfb(ring, stage) + gi * Cfg::kSfbGroupBytes,
                    p.o_weight_sf + (row0 / 128 + gi) * sfb_group_bytes +
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
  // (m-tile, chunk) is checked until complete once, by the first tile of this CTA that needs it),
  // with the branch a tile's last stage also once its m-tile's l is written, and its slot is free.
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
    if constexpr (Variant::kBranch && Variant::kBranchDown) {
      // A tile's last stage waits for its rows' l (lowrank.cuh), which the consumers read once
      // they have consumed it; the groups' sums finish under the tile's earlier stages.
      if (a.ks == ksteps - 1 && mt != l_ready_mt) {
        if (!BranchReady(p.ready_flags, p.m, mt, units.GroupsInMTile(mt))) {
          return RingState::kWaitReady;
        }
        l_ready_mt = mt;
      }
    }
    const int stage = a.pos.stage;
    if (!ptx::MbarTest(&st.empty[stage], a.pos.phase ^ 1u)) return RingState::kWaitSlot;
    Variant::Pause(PauseSite::kLoaderStage, static_cast<uint32_t>(a.ks));
    if (Variant::Withholds(Handoff::kFill, kRingA, mt, nt, a.ks)) {  // the stage never fills
      sfa.Advance();
      a.Next(ksteps);
      return RingState::kIssued;
    }
    if (a.ks == 0) PrefetchResidual(mt, nt);
    // The first stage of an activation-scale box also loads the box (config.cuh kSfaSlots).
    const bool box = sfa.sub == 0;
    const int sfb_missing = Cfg::Schedule::kOwnBRings
                                ? 0
                                : (Cfg::kSfbGroups - SfbGroups(0, nt)) * Cfg::kSfbGroupBytes;
    uint64_t* full = &st.full[stage];
    ptx::MbarArriveExpectTx(full,
                            Cfg::kAStageBytes - sfb_missing + (box ? Cfg::kSfaBoxTxBytes : 0));
    ptx::TmaLoad2D(st.a[stage], tmap_aq, full, a.ks * Cfg::kRowBytes, mt * Cfg::kBM);
    if (box) {
      ptx::TmaLoad2D(st.sfa[sfa.slot], tmap_asf, full, a.ks * Cfg::kSfaRowBytes, mt * Cfg::kBM);
    }
    sfa.Advance();
    if constexpr (!Cfg::Schedule::kOwnBRings) LoadB(0, stage, full, a.ks, nt);
    a.Next(ksteps);
    return RingState::kIssued;
  }
  // kOwnBRings: one stage of consumer group `ring`'s B ring if its slot is free; tiles without that
  // N half (half a tile at the end of N) are skipped, as the group's consumers skip them.
  __device__ __forceinline__ RingWalk<Cfg, Cfg::kStages>& WalkB(int ring) {
    static_assert(Cfg::kGroups <= 2, "b0, b1");
    return ring == 0 ? b0 : b1;
  }
  __device__ __forceinline__ RingState TryB(int ring) {
    RingWalk<Cfg, Cfg::kStages>& w = WalkB(ring);
    if (!w.sched.Valid()) return RingState::kDone;
    const int nt = w.sched.nt;
    if (RingRow0<Cfg>(ring, nt) >= p.n) {
      w.ks = 0;
      w.sched.Next();
      return RingState::kIssued;  // progress: poll again at once
    }
    const int slot = ring * Cfg::kStages + w.pos.stage;
    if (!ptx::MbarTest(&st.empty_b[slot], w.pos.phase ^ 1u)) return RingState::kWaitSlot;
    if (!Variant::Withholds(Handoff::kFill, kRingB0 + ring, w.sched.mt, nt, w.ks)) {
      ptx::MbarArriveExpectTx(&st.full_b[slot], Cfg::kBStageBytes);
      LoadB(ring, w.pos.stage, &st.full_b[slot], w.ks, nt);
    }
    w.Next(ksteps);
    return RingState::kIssued;
  }
  // What the load warp waits for after a round that issued nothing (bounded_wait.cuh).
  __device__ __forceinline__ WaitSite Waiting(RingState sa, int b_waiting) const {
    if constexpr (Variant::kBranch && Variant::kBranchDown) {
      // TryA waits for l only once every chunk of the stage is ready.
      const bool waiting_l = ready_chunk >= a.ks * Cfg::kBK / chunk_elems;
      if (sa == RingState::kWaitReady && waiting_l) {
        const uint32_t written =
            ptx::LdAcquireGpu(p.ready_flags + BranchReadyWord(p.m, kWorkTileM, a.sched.mt));
        return {WaitKind::kBranchReady, static_cast<int>(written),
                static_cast<int>(units.GroupsInMTile(a.sched.mt)), a.sched.mt, a.sched.nt,
                Variant::kLoaderBound};
      }
    }
    if (sa == RingState::kWaitReady) {
      return {WaitKind::kChunkReady, ready_chunk + 1, 0, a.sched.mt, a.sched.nt,
              Variant::kLoaderBound};
    }
    if (sa == RingState::kWaitSlot) {
      return {WaitKind::kSlotA, a.pos.stage, static_cast<int>(a.pos.phase ^ 1u), a.sched.mt,
              a.sched.nt, Variant::kLoaderBound};
    }
    const RingWalk<Cfg, Cfg::kStages>& w = b_waiting == 0 ? b0 : b1;
    return {WaitKind::kSlotB, b_waiting, w.pos.stage, w.sched.mt, w.sched.nt,
            Variant::kLoaderBound};
  }
  __device__ __forceinline__ void Run() {
    uint64_t idle_since = 0;  // %globaltimer at the first round without progress; 0 otherwise
    for (;;) {
      const RingState sa = TryA();
      bool active = sa != RingState::kDone, issued = sa == RingState::kIssued;
      int b_waiting = -1;  // the first B ring waiting for a slot
      if constexpr (Cfg::Schedule::kOwnBRings) {
#pragma unroll
        for (int ring = 0; ring < Cfg::kGroups; ++ring) {
          const RingState sb = TryB(ring);
          active = active || sb != RingState::kDone;
          issued = issued || sb == RingState::kIssued;
          if (sb == RingState::kWaitSlot && b_waiting < 0) b_waiting = ring;
        }
      }
      if (!active) break;
      if (issued) {
        idle_since = 0;
        continue;
      }
      const uint64_t now = ptx::GlobalTimerNs();
      if (idle_since == 0) {
        idle_since = now;
      } else if (now - idle_since > p.wait_limit_ns * Variant::kLoaderBound) {
        GiveUpWaiting(p, Waiting(sa, b_waiting), now - idle_since);
      }
      if (sa == RingState::kWaitSlot) {
        ptx::MbarTryWaitFor(&st.empty[a.pos.stage], a.pos.phase ^ 1u,
                            b_waiting >= 0 ? kIdleShortNs : kIdleNs);
      } else if (sa == RingState::kWaitReady) {
        __nanosleep(64);
      } else if constexpr (Cfg::Schedule::kOwnBRings) {  // A done: only B rings left, all full
        RingWalk<Cfg, Cfg::kStages>& w = WalkB(b_waiting);
        ptx::MbarTryWaitFor(&st.empty_b[b_waiting * Cfg::kStages + w.pos.stage],
                            w.pos.phase ^ 1u, kIdleNs);
      }
    }
  }
};

}  // namespace h3::kernels

#endif  // H3_KERNELS_LOADER_CUH_
