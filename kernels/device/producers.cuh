#ifndef H3_KERNELS_PRODUCERS_CUH_
#define H3_KERNELS_PRODUCERS_CUH_

// The fused kernel's producer warpgroup and the rings' set-up, shared by every kernel that
// consumes the rings (out_proj_kernel.cuh; the fast sm_90 kernel, sm90/fast_kernel.cuh).
// Warp 0 issues the TMA/bulk loads of the rings (loader.cuh); warps 1..3 quantize attn_out into
// act_q/act_sf in dynamically claimed units and publish per-(m-tile, chunk) ready flags
// (ready_flags.h).

#include <cuda.h>

#include <cstdint>

#include "kernels/device/loader.cuh"
#include "kernels/device/lowrank.cuh"
#include "kernels/device/params.h"
#include "kernels/device/ptx.cuh"
#include "kernels/device/quantize.cuh"
#include "kernels/device/ready_flags.h"
#include "kernels/device/rings.cuh"
#include "kernels/device/scheduler.cuh"
#include "kernels/device/staged_epilogue.cuh"
#include "kernels/device/variant.cuh"
#include "kernels/device/work_units.h"

namespace h3::kernels {

// Thread 0, before the CTA's first __syncthreads: every mbarrier of the rings, and the tensor
// maps prefetched.
template <class Cfg>
__device__ __forceinline__ void InitRings(SharedStorage<Cfg>& st, const CUtensorMap* tmap_aq,
                                          const CUtensorMap* tmap_asf, const CUtensorMap* tmap_wq) {
  for (int s = 0; s < Cfg::kAStages; ++s) {
    ptx::MbarInit(&st.full[s], 1);  // the loader's arrive.expect_tx
    // Every consumer thread arrives: mbarrier.arrive releases only the arriving thread's own
    // shared-memory reads, and each thread read the stage (WAR before the next TMA write).
    ptx::MbarInit(&st.empty[s], Cfg::kConsumerWarps * 32);
  }
  if constexpr (Cfg::Schedule::kOwnBRings) {
    for (int s = 0; s < SharedStorage<Cfg>::kBRingSlots; ++s) {
      ptx::MbarInit(&st.full_b[s], 1);
      ptx::MbarInit(&st.empty_b[s], Cfg::kConsumerWarps / Cfg::kGroups * 32);  // its group
    }
  }
  if constexpr (Cfg::Schedule::kSkewGate) {
    ptx::MbarInit(&st.gate[0], 1);  // the leader's publishing thread
    ptx::MbarInit(&st.gate[1], 1);
  }
  if constexpr (Cfg::Schedule::kStagedEpilogue) {  // staged_epilogue.cuh: every thread's own
    StagedStorage<Cfg>& staged = static_cast<StagedStorage<Cfg>&>(st);
    ptx::MbarInit(&staged.t_full, Cfg::kConsumerWarps * 32);
    ptx::MbarInit(&staged.t_empty, Cfg::kQuantWarps * 32);
  }
  ptx::FenceBarrierInit();
  ptx::PrefetchTensorMap(tmap_aq);
  ptx::PrefetchTensorMap(tmap_asf);
  ptx::PrefetchTensorMap(tmap_wq);
}

// One unit's blocks through the quantizer (warp-collective): the unit's blocks [b_begin, b_end)
// of each of its rows as one index space over rows, so that every lane has blocks in flight
// whatever the chunk width. kStreamed: attn_out read once (LoadBlock).
template <class Cfg, class Arch, class Variant, bool kStreamed = true, class Input>
__device__ __forceinline__ void QuantizeUnit(const OutProjParams& p, const WorkUnit& w, uint32_t u,
                                             const OsComputed& os_src, const Input& input,
                                             int lane, int blocks_per_row, int blocks_per_chunk) {
  constexpr int kBlocksInFlight = 4;  // per lane (memory-level parallelism)
  const int b_begin = w.chunk_begin * blocks_per_chunk;
  const int b_end_c = w.chunk_end * blocks_per_chunk;
  const int b_end = b_end_c < blocks_per_row ? b_end_c : blocks_per_row;
  const int nb = b_end - b_begin;
  const int total = static_cast<int>(w.row_end - w.row0) * nb;
  for (int i0 = lane; i0 < total; i0 += 32 * kBlocksInFlight) {
#pragma unroll
    for (int d = 0; d < kBlocksInFlight; ++d) {
      const int i = i0 + 32 * d;
      if (i < total) {
        Variant::Pause(PauseSite::kQuantizerBlock, u * 4096u + static_cast<uint32_t>(i));
        const int64_t row = w.row0 + i / nb;
        const int b = b_begin + i % nb;
        QuantizeBlockFromGlobal<Arch, kStreamed>(
            p.attn_out + row * p.k + b * Cfg::kSfVec, os_src, p.act_q + row * (p.k / 2) + b * 8,
            p.act_sf + row * blocks_per_row + b, input, b * Cfg::kSfVec);
      }
    }
  }
}

// Producer warps 1..3: claim units (a row group x one or all k-chunks), quantize, publish
// (Variant: variant.cuh; the product's hooks are empty). A staged instance's warps drain a
// written t tile between units (staged_epilogue.cuh Drainer: never while holding a unit).
template <class Cfg, class Arch, class Variant>
__device__ __forceinline__ void QuantizerLoop(const OutProjParams& p, float act_gs,
                                              Drainer<Cfg, Variant>* drain = nullptr) {
  if (!Variant::Quantizes()) return;
  const int lane = threadIdx.x & 31;
  const UnitsOf<Cfg, Variant> units = CallUnits<Cfg, Variant>(p);
  const OsComputed os_src{MakeQuantParams(act_gs)};  // one division per block: no table in smem
  const typename Variant::Input input(p.act_smooth);   // section 12 where the Variant smooths
  const int blocks_per_row = p.k / Cfg::kSfVec;
  const int blocks_per_chunk = ChunkElems(p.k) / Cfg::kSfVec;
  if constexpr (Variant::kBranch && Variant::kBranchDown) {
    if (threadIdx.x == 32 * (Cfg::kLoadWarp + 1)) PrefetchLoraDown(p);  // a quantizer warp
  }
  for (;;) {
    if constexpr (kStagedOf<Cfg, Variant>) drain->Poll(p);
    const uint32_t u = ClaimUnit(p.ready_flags);
    if (u >= units.count) break;
    const WorkUnit w = units.Unit(u);
    if constexpr (Variant::kBranch && Variant::kBranchDown) {
      // The branch's units (work_units.h Kind, lowrank.cuh). The front's (group, chunk) pairs,
      // which the first tiles wait for, are quantized alone (blocks in flight) and published;
      // after all of them come their down-projections (attn_out read again), which the tiles need
      // only at their last stage. Every later unit is quantized and down-projected from the same
      // registers (attn_out read once), then published. The partial sums follow the down-
      // projection either way (the GEMM needs only the codes; l has its own word, ready_flags.h).
      static_assert(Variant::kPublish, "a branch Variant publishes every unit");
      const UnitKind kind = units.Kind(u);
      if (kind == UnitKind::kQuantize) {
        PrefetchUnitRows(p, w);
        // Read again by its down-only unit: not evict-first.
        QuantizeUnit<Cfg, Arch, Variant, false>(p, w, u, os_src, input, lane, blocks_per_row,
                                                blocks_per_chunk);
        Variant::Pause(PauseSite::kQuantizerPublish, u);
        PublishUnit(p.ready_flags, w.row0 / Cfg::kBM, w.chunk_begin, w.chunk_end);
        continue;
      }
      float acc[kMaxRankTiles][4] = {};
      if (kind == UnitKind::kDown) {
        BranchDownUnit<Arch, Variant, false>(p, w, u, os_src, input, acc);
      } else {
        BranchDownUnit<Arch, Variant, true>(p, w, u, os_src, input, acc);
        Variant::Pause(PauseSite::kQuantizerPublish, u);
        PublishUnit(p.ready_flags, w.row0 / Cfg::kBM, w.chunk_begin, w.chunk_end);
      }
      BranchFinishUnit<kUnitRows<Cfg, Variant>, Variant>(p, w, units.chunks, acc);
      continue;
    }
    // A branch Variant without the down-projection (the bench's timing variants): the front's
    // down-only units have nothing to do.
    if (units.Kind(u) == UnitKind::kDown) continue;
    QuantizeUnit<Cfg, Arch, Variant>(p, w, u, os_src, input, lane, blocks_per_row,
                                     blocks_per_chunk);
    Variant::Pause(PauseSite::kQuantizerPublish, u);
    if constexpr (Variant::kPublish) {
      PublishUnit(p.ready_flags, w.row0 / Cfg::kBM, w.chunk_begin, w.chunk_end);
    }
  }
}

// The producer warpgroup (warps 0..3, all four before any lane diverges): hands registers to the
// consumers, then loads (warp 0, one lane) or quantizes (warps 1..3); last, all 128 threads
// leave the ready flags zero for the next call (ready_flags.h ResetAtExit).
template <class Cfg, class Arch, class Variant>
__device__ __forceinline__ void RunProducers(const OutProjParams& p, const CUtensorMap* tmap_aq,
                                             const CUtensorMap* tmap_asf,
                                             const CUtensorMap* tmap_wq, SharedStorage<Cfg>& st,
                                             float act_gs) {
  if constexpr (Cfg::kSetMaxNReg) ptx::SetMaxNRegDec<Cfg::kProducerRegs>();
  if ((threadIdx.x >> 5) == Cfg::kLoadWarp) {
    if ((threadIdx.x & 31) == 0) Loader<Cfg, Variant>(p, tmap_aq, tmap_asf, tmap_wq, st).Run();
  } else if constexpr (kStagedOf<Cfg, Variant>) {
    // Every CTA's quantizer warps drain their CTA's tiles, quantizing or not (the stress test's
    // CTAs that claim no unit).
    Drainer<Cfg, Variant> drain(st, p);
    QuantizerLoop<Cfg, Arch, Variant>(p, act_gs, &drain);
    drain.Finish(p);
  } else {
    QuantizerLoop<Cfg, Arch, Variant>(p, act_gs);
  }
  const int64_t branch_words = Variant::kBranch ? BranchWords(p.m, Cfg::kBM) : 0;
  ResetAtExit(p.ready_flags, ReadyFlagWords(p.m, Cfg::kBM) + branch_words,
              Cfg::kProducerWarps * 32);
}

}  // namespace h3::kernels

#endif  // H3_KERNELS_PRODUCERS_CUH_
