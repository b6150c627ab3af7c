#ifndef H3_KERNELS_STAGED_EPILOGUE_CUH_
#define H3_KERNELS_STAGED_EPILOGUE_CUH_

// The staged epilogue (config.cuh StagedSchedule; perf_model Epilogue::kSmemStaged): the
// product's epilogue split at t = bf16(gate (x) o) (docs/contract.md section 6).
//   consumers   set-up and Apply of the policy as in the in-register epilogue (the same words
//               t; the set-up's loads, Epi::Early, issued before the tile's main loop), then
//               each thread waits for the t tile to be free (t_empty), writes its words
//               into it and arrives on t_full: the next tile's stages start without the residual
//               round trips and stores.
//   quantizers  the three quantizer warps drain tile j of their CTA once t_full says it is
//               written: per row < M, out = gated ? bf16(residual (+) t) : residual, with the
//               policy's staged hooks (epilogue.cuh GatedResidual), then arrive on t_empty. They
//               poll between units (never while holding a claimed, unpublished unit:
//               ready_flags.h) and, out of units, wait for the rest of their CTA's tiles.
// The arithmetic is the in-register epilogue's, operation for operation: t crosses shared memory
// as bits, and the add is the same AddResidualPair. out may be residual: each element has one
// writer (one lane of one drain), which reads it first (a batch's reads before its stores).
//
// Protocol (one t buffer; j = the CTA's tile counter, the same TileScheduler walk on both sides):
//   consumer thread, tile j: wait t_empty parity (j & 1) ^ 1 (phase j - 1: the drain of tile
//     j - 1; a fresh barrier passes parity 1 at once), st.shared its words, arrive t_full.
//   quantizer-warp thread, tile j: wait t_full parity j & 1, ld.shared its rows, arrive t_empty.
// t_full's phase j + 1 needs t_empty's phase j, which needs every draining thread: no side is
// ever two phases behind, so the parity tests are exact. Only the generic proxy touches t: the
// mbarriers' release (arrive) and acquire (test / try_wait) order it. Liveness: a drain waits on
// consumers, consumers on the load warp, the load warp on ready flags, which only warps that hold
// a unit and never block publish (every CTA's quantizer warps poll before claiming, and block on
// t_full only once ClaimUnit ran past the last unit).

#include <cstdint>
#include <type_traits>

#include "kernels/device/bounded_wait.cuh"
#include "kernels/device/epilogue_policy.cuh"
#include "kernels/device/params.h"
#include "kernels/device/ptx.cuh"
#include "kernels/device/rings.cuh"
#include "kernels/device/scheduler.cuh"
#include "kernels/device/stall.h"
#include "kernels/device/variant.cuh"
#include "kernels/device/warp_acc.cuh"

namespace h3::kernels {

// Whether an epilogue policy has the staged hooks of its own (Epi::kStageable, declared by Epi
// itself: Epi::StagedPolicy is Epi, so that a policy derived from a stageable one, inheriting
// hooks that may not match its own Combine / Store, runs the in-register path).
template <class Epi, class = void>
struct IsStageable : std::false_type {};
template <class Epi>
struct IsStageable<Epi, std::void_t<decltype(Epi::kStageable), typename Epi::StagedPolicy>>
    : std::bool_constant<Epi::kStageable && std::is_same_v<typename Epi::StagedPolicy, Epi>> {};

// Whether instance (Cfg, Variant) stages its epilogue: a staged config and a policy with the
// hooks. Otherwise (the bench's timing variants on a staged config) the in-register epilogue runs
// and nothing touches t.
template <class Cfg, class Variant>
inline constexpr bool kStagedOf =
    Cfg::Schedule::kStagedEpilogue && IsStageable<typename Variant::Epilogue>::value;

// Byte offset of 16-byte chunk c (8 columns) of row r in the t tile: the chunks of a row permuted
// by r's low 3 bits (odd rows by 4, then by (r >> 1) & 3), so that a consumer warp's 4-byte
// stores (8 rows, one chunk each), its 16-byte stores (8 lanes: 2 rows x 4 chunks) and a drain's
// 16-byte reads (8 chunks of one row) each hit 8 distinct 16-byte bank groups.
template <class Cfg>
__device__ __forceinline__ uint32_t StagedChunk(int r, int c) {
  constexpr int kRowBytes = StagedStorage<Cfg>::kTRowBytes;
  static_assert(kRowBytes / 16 >= 8, "the permutation stays within the row");
  return static_cast<uint32_t>(r * kRowBytes + ((c ^ (((r & 1) << 2) | ((r >> 1) & 3))) << 4));
}

// One warp tile's t words into the t tile (consumer side), kW words per access (the policy's
// access layout, epilogue_policy.cuh): row_local / col_local are the warp tile's origin in the
// CTA tile.
template <class Cfg, class Arch, class Epi, class Variant, int kW, class EarlyT>
__device__ __forceinline__ void StageWarpTile(const WarpAcc<Cfg>& acc, int64_t row_base,
                                              int col_base, const OutProjParams& p, float alpha,
                                              const EarlyT& early, uint32_t t_tile,
                                              uint32_t t_full, uint32_t t_empty, uint32_t j,
                                              int mt, int nt, int row_local, int col_local) {
  static_assert(Cfg::kNFrags % kW == 0, "whole accesses per row");
  constexpr int kAccesses = Cfg::kNFrags / kW;
  const EpilogueLane<kW> at(row_base, col_base);
  typename Epi::template Tile<Cfg, Arch, kW> tile(at, p, alpha, early);
  uint32_t t[Cfg::kMFrags][2][Cfg::kNFrags];  // [i][h][kW q + k], as EpilogueTile's
#pragma unroll
  for (int i = 0; i < Cfg::kMFrags; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int q = 0; q < kAccesses; ++q) {
        uint32_t w[kW] = {};
        tile.Apply(at, p, acc, i, h, q, w);
#pragma unroll
        for (int k = 0; k < kW; ++k) t[i][h][kW * q + k] = w[k];
      }
  Variant::Pause(PauseSite::kDrainTile, j);
  const uint32_t parity = (j & 1u) ^ 1u;
  MbarWaitBoundedAddr(t_empty, parity, p,
                      {WaitKind::kTEmpty, static_cast<int>(parity), static_cast<int>(j), mt, nt,
                       Variant::kConsumerBound});
  // Rows >= M are written too (never read): one code path, no divergence.
#pragma unroll
  for (int i = 0; i < Cfg::kMFrags; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = row_local + 16 * i + at.lrow + 8 * h;
#pragma unroll
      for (int q = 0; q < kAccesses; ++q) {
        if constexpr (kW == 4) {
          // The quad's 16 contiguous bytes of fragment group q: chunk (col_local + 32 q) / 8 + lcol.
          const int c = col_local / 8 + 4 * q + at.lcol;
          const uint32_t v[4] = {t[i][h][4 * q], t[i][h][4 * q + 1], t[i][h][4 * q + 2],
                                 t[i][h][4 * q + 3]};
          ptx::StShared128(t_tile + StagedChunk<Cfg>(r, c), v);
        } else {
          // The lane's pair of n fragment q: word lcol of chunk col_local / 8 + q.
          const int c = col_local / 8 + q;
          ptx::StShared32(t_tile + StagedChunk<Cfg>(r, c) + 4 * at.lcol, t[i][h][q]);
        }
      }
    }
  if (!Variant::Withholds(Handoff::kTFill, kRingA, mt, nt, 0)) ptx::MbarArriveAddr(t_full);
}

// The consumers' end of a tile in a staged instance (lowrank.cuh FinishWarpTile's sink): the
// t tile's addresses, where the warp tile lies in it, and what the policy loads ahead
// (Epi::Early: constructed with the sink, before the tile's main loop; row_base: the warp tile's
// first row).
template <class Cfg, class Variant>
struct StagedSink {
  using Early = typename Variant::Epilogue::template Early<Cfg>;
  uint32_t t_tile, t_full, t_empty;
  uint32_t j;  // the CTA's tile counter
  int mt, nt, row_local, col_local;
  Early early;

  __device__ __forceinline__ StagedSink(SharedStorage<Cfg>& base, uint32_t j_, int mt_, int nt_,
                                        int row_local_, int col_local_, int64_t row_base,
                                        const OutProjParams& p)
      : j(j_),
        mt(mt_),
        nt(nt_),
        row_local(row_local_),
        col_local(col_local_),
        early(row_base, static_cast<int>(threadIdx.x & 31) >> 2, p) {
    StagedStorage<Cfg>& st = static_cast<StagedStorage<Cfg>&>(base);
    t_tile = ptx::SmemAddr(st.t);
    t_full = ptx::SmemAddr(&st.t_full);
    t_empty = ptx::SmemAddr(&st.t_empty);
  }

  template <class C, class Arch, class Epi>
  __device__ __forceinline__ void Run(const WarpAcc<C>& acc, int64_t row0, int col0,
                                      const OutProjParams& p, float alpha) const {
    static_assert(Epi::kVec16, "the staged hooks have the 16-byte path");
    if (p.vec16_epilogue) {
      StageWarpTile<C, Arch, Epi, Variant, 4>(acc, row0, col0, p, alpha, early, t_tile, t_full,
                                              t_empty, j, mt, nt, row_local, col_local);
    } else {
      StageWarpTile<C, Arch, Epi, Variant, 1>(acc, row0, col0, p, alpha, early, t_tile, t_full,
                                              t_empty, j, mt, nt, row_local, col_local);
    }
  }
};

// The quantizer warps' drain of the t tile (producer side). Empty, every call a no-op, where the
// instance does not stage (kStagedOf false).
template <class Cfg, class Variant, bool kOn = kStagedOf<Cfg, Variant>>
struct Drainer {
  __device__ __forceinline__ Drainer(SharedStorage<Cfg>&, const OutProjParams&) {}
  __device__ __forceinline__ void Poll(const OutProjParams&) {}
  __device__ __forceinline__ void Finish(const OutProjParams&) {}
};

template <class Cfg, class Variant>
struct Drainer<Cfg, Variant, true> {
  using Epi = typename Variant::Epilogue;
  // Rows are taken in pairs (one row per half-warp: 16 lanes x 16 bytes = a 128-column row),
  // pair p by quantizer warp p % kQuantWarps, kBatch pairs' reads in flight per lane.
  static constexpr int kPairs = Cfg::kBM / 2;
  static constexpr int kBatch = 4;
  static_assert(Cfg::kBN == 128, "a half-warp of 16-byte chunks covers a row");

  TileScheduler<Cfg> sched;
  uint32_t j = 0;
  uint32_t t_tile, t_full, t_empty;
  int q;  // this warp among the quantizer warps

  __device__ __forceinline__ Drainer(SharedStorage<Cfg>& base, const OutProjParams& p)
      : sched(p.m, p.n) {
    StagedStorage<Cfg>& st = static_cast<StagedStorage<Cfg>&>(base);
    t_tile = ptx::SmemAddr(st.t);
    t_full = ptx::SmemAddr(&st.t_full);
    t_empty = ptx::SmemAddr(&st.t_empty);
    q = ptx::WarpIdxUniform() - (Cfg::kLoadWarp + 1);
  }

  // Between units: drains the next tile if every lane sees it written (warp-collective).
  __device__ __forceinline__ void Poll(const OutProjParams& p) {
    if (!sched.Valid()) return;
    if (__all_sync(0xFFFFFFFFu, ptx::MbarTestAddr(t_full, j & 1u))) DrainNext(p);
  }

  // Out of units: every remaining tile of the CTA, waiting for each.
  __device__ __forceinline__ void Finish(const OutProjParams& p) {
    while (sched.Valid()) {
      MbarWaitBoundedAddr(t_full, j & 1u, p,
                          {WaitKind::kTFull, static_cast<int>(j & 1u), static_cast<int>(j),
                           sched.mt, sched.nt, Variant::kDrainBound});
      DrainNext(p);
    }
  }

 private:
  __device__ __forceinline__ void DrainNext(const OutProjParams& p) {
    Variant::Pause(PauseSite::kDrainTile, j);
    if (p.vec16_epilogue) {
      DrainRows<4>(p);
    } else {
      DrainRows<1>(p);
    }
    if (!Variant::Withholds(Handoff::kTDrain, kRingA, sched.mt, sched.nt, 0)) {
      ptx::MbarArriveAddr(t_empty);
    }
    sched.Next();
    ++j;
  }

  template <int kW>
  __device__ __forceinline__ void DrainRows(const OutProjParams& p) {
    const int lane = threadIdx.x & 31;
    const int chunk = lane & 15;
    const int col = sched.nt * Cfg::kBN + 8 * chunk;
    const int64_t row0 = static_cast<int64_t>(sched.mt) * Cfg::kBM;
    for (int p0 = q; p0 < kPairs; p0 += Cfg::kQuantWarps * kBatch) {
      uint32_t r[kBatch][4];
      bool gated[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int pair = p0 + Cfg::kQuantWarps * b;
        const int64_t row = row0 + 2 * pair + (lane >> 4);
        gated[b] = false;
#pragma unroll
        for (int k = 0; k < 4; ++k) r[b][k] = 0u;
        if (pair < kPairs && row < p.m) {
          gated[b] = Epi::Gated(p, row);
          Epi::template ReadStaged<kW>(p, row, col, r[b]);
        }
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const int pair = p0 + Cfg::kQuantWarps * b;
        const int lr = 2 * pair + (lane >> 4);
        const int64_t row = row0 + lr;
        if (pair < kPairs && row < p.m) {
          uint32_t t[4], o[4];
          ptx::LdShared128(t_tile + StagedChunk<Cfg>(lr, chunk), t);
#pragma unroll
          for (int k = 0; k < 4; ++k) o[k] = Epi::CombineStaged(gated[b], r[b][k], t[k]);
          Epi::template StoreStaged<kW>(p, row, col, o);
        }
      }
    }
  }
};

}  // namespace h3::kernels

#endif  // H3_KERNELS_STAGED_EPILOGUE_CUH_
