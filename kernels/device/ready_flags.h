#ifndef H3_KERNELS_READY_FLAGS_H_
#define H3_KERNELS_READY_FLAGS_H_

// The ready-flag protocol of the fused kernel, whole: how the quantizer warps tell the TMA load
// warps (of any CTA) that an m-tile of act_q/act_sf is complete.
//
// Buffer ("ready flags"): ReadyFlagWords(m, BM) + BranchWords(m, BM) uint32 words of global
// memory per call (the second part used by the low-rank branch's instances alone), all zero when
// the kernel starts: zeroed by the host API on the launch's stream right before the
// launch (out_proj.cc), or left zero by the previous call's kernel on that stream (ResetAtExit;
// out_proj.h ready_flags_zeroed). Calls never share one at the same time, and any call can be
// captured into a CUDA graph:
//   word kClaimCounter                      the next quantizer unit to claim (work_units.h)
//   word kStallClaim                        0 until a thread gives up waiting (bounded_wait.cuh)
//   word kExitCounter                       CTAs finished (ResetAtExit)
//   word kFlagsOffset + mt * kMaxChunks + c finished row groups of k-chunk c of m-tile mt
//                                           (ready when it reaches WorkUnits::GroupsInMTile)
//   word ReadyFlagWords(m, BM) + group      the low-rank branch's instances only: units of an
//                                           8-row group (kBranchUnitRows) that finished their
//                                           down-projection (BranchCounterWord)
//   word ... + BranchGroups(m) + mt         the branch's instances only: row groups of m-tile mt
//                                           whose l is written (BranchReadyWord; ready at
//                                           GroupsInMTile). The host sizes the buffer with these
//                                           words for every call (BranchWords)
//
// Protocol (PTX memory consistency model, "Proxies" and release/acquire patterns):
//   quantizer warp: ClaimUnit -> quantize (generic st.global of act_q/act_sf) -> PublishUnit:
//                   fence.proxy.async.global + membar.gl by every lane, __syncwarp, then one
//                   red.release.gpu.add per chunk of the unit (lane c: chunk c);
//   load warp:      ChunkReady (polled) before the first stage of each chunk of a tile:
//                   ld.acquire.gpu of the flag until complete, then fence.proxy.async.global
//                   before the TMA (async proxy) reads act_q/act_sf.
//   branch instances (lowrank.cuh BranchDownUnit, BranchFinishUnit): a unit quantizes and
//                   down-projects its chunk, then publishes it (the front's units only quantize
//                   and publish; later units of their own down-project them, work_units.h
//                   Kind), then stores its partial sums;
//                   with more than one chunk, every lane membar.gl, __syncwarp, one lane's
//                   atomicAdd on its group's counter, and the lane that reads chunks - 1 (the
//                   group's last unit) membar.gl (acquire) before a __syncwarp; with one chunk
//                   the unit is its group's last, its own stores ordered by the membar.gl and
//                   __syncwarp. The last unit's warp reads the group's partials (ld.global.cg),
//                   writes l and publishes it (PublishBranchGroup): every lane membar.gl,
//                   __syncwarp, one lane's red.release.gpu on BranchReadyWord(mt). The load warp
//                   issues a tile's last A stage only after BranchReady's ld.acquire.gpu of that
//                   word reads GroupsInMTile; its mbarrier arrive (release.cta) -> the consumers'
//                   wait (acquire.cta) -> their ld.global.cg of l. The consumers never read the
//                   flags themselves.
//   producer warps, last (the only warps that use the flags; a thread of any warp that gives
//                   up waiting sets kStallClaim, then traps): ResetAtExit (the branch's
//                   instances: over BranchWords too): they meet on named
//                   barrier kExitBarrier, then thread 0 fences (membar.gl) and counts the CTA out
//                   (atomicAdd); in the CTA whose count completes the grid, thread 0 fences again
//                   and, past a second meeting, the producers zero every word the grid wrote.
//                   Each CTA's flag accesses precede its count (barrier, then fence: release);
//                   the last count precedes the zeroing (fence: acquire, then barrier), so no
//                   flag is zeroed before its last reader has read it, and the buffer is all zero
//                   when the kernel completes. The consumer warps take no part (no join of the
//                   two register budgets after setmaxnreg).
// Units are claimed in increasing order and a claimed unit is always finished by its claimer,
// which waits on nothing, so every m-tile becomes ready whatever subset of the grid is resident.
// A staged config's quantizer warps also drain their CTA's t tile (staged_epilogue.cuh): between
// units they only test its barrier, and they block on it only after ClaimUnit ran past the last
// unit, so they never block while holding a claimed, unpublished unit, and the above holds.
// A thread that gives up waiting traps (stall.h): the context is lost, and with it any buffer
// left dirty. ResetAtExit's barriers wait only for producers, whose own waits are bounded (the
// loader's, bounded_wait.cuh; the quantizers wait on nothing but, in a staged config, the
// bounded t_full wait): they cannot hang silently.
// The host needs only the layout constants (no CUDA headers); the device functions follow.

#include <cstdint>

#include "kernels/device/work_units.h"

#if defined(__CUDACC__)
#include "kernels/device/ptx.cuh"
#endif

namespace h3::kernels {

inline constexpr int kClaimCounter = 0;
inline constexpr int kStallClaim = 1;  // the first thread to give up waiting (stall.h) sets it
inline constexpr int kExitCounter = 2;  // CTAs counted out by ResetAtExit
// ResetAtExit's named barrier (0 is __syncthreads', 1 the fast sm_90 kernel's consumers').
inline constexpr uint32_t kExitBarrier = 2;
inline constexpr int kFlagsOffset = 32;  // the counters sit in their own 128-byte line
static_assert(kMaxChunks <= 32, "PublishUnit: one lane per chunk");

// Words of the buffer for m rows in m-tiles of tile_m rows: kMaxChunks flags per m-tile.
H3_HD constexpr int64_t ReadyFlagWords(int64_t m, int64_t tile_m) {
  return kFlagsOffset + (m + tile_m - 1) / tile_m * kMaxChunks;
}
H3_HD int64_t FlagWord(int64_t m_tile, int chunk) {
  return kFlagsOffset + m_tile * kMaxChunks + chunk;
}
// The low-rank branch's words, after the flags: an arrival counter per kBranchUnitRows-row group
// of M, then an l-ready count per m-tile. Not in ReadyFlagWords (the plain instances never touch
// them); the host's buffer size counts them (out_proj.cc OutProjReadyFlagBytes).
H3_HD constexpr int64_t BranchGroups(int64_t m) {
  return (m + kBranchUnitRows - 1) / kBranchUnitRows;
}
H3_HD constexpr int64_t BranchWords(int64_t m, int64_t tile_m) {
  return BranchGroups(m) + (m + tile_m - 1) / tile_m;
}
H3_HD int64_t BranchCounterWord(int64_t m, int64_t tile_m, int64_t group) {
  return ReadyFlagWords(m, tile_m) + group;
}
H3_HD int64_t BranchReadyWord(int64_t m, int64_t tile_m, int64_t m_tile) {
  return ReadyFlagWords(m, tile_m) + BranchGroups(m) + m_tile;
}

#if defined(__CUDACC__)

// Claims the next quantizer unit for the calling warp (lane 0 claims, all lanes get it).
__device__ __forceinline__ uint32_t ClaimUnit(uint32_t* ready_flags) {
  uint32_t u = 0;
  if ((threadIdx.x & 31) == 0) u = atomicAdd(ready_flags + kClaimCounter, 1u);
  return __shfl_sync(0xFFFFFFFFu, u, 0);
}

// Warp-collective, after the warp's generic stores of one unit (a row group of m-tile `m_tile`,
// chunks [chunk_begin, chunk_end)): the stores are read by other CTAs' TMA (async proxy).
__device__ __forceinline__ void PublishUnit(uint32_t* ready_flags, int64_t m_tile, int chunk_begin,
                                            int chunk_end) {
  ptx::FenceProxyAsyncGlobal();
  __threadfence();
  __syncwarp();
  const int c = chunk_begin + static_cast<int>(threadIdx.x & 31);
  if (c < chunk_end) ptx::RedReleaseGpuAdd(ready_flags + FlagWord(m_tile, c), 1u);
}

// Warp-collective, after the warp's generic stores of l for one row group of m-tile `m_tile`
// (the branch's instances): l is read by the consumers of other CTAs after their load warp saw it.
__device__ __forceinline__ void PublishBranchGroup(uint32_t* ready_flags, int64_t m,
                                                   int64_t m_tile) {
  __threadfence();
  __syncwarp();
  if ((threadIdx.x & 31) == 0) {
    ptx::RedReleaseGpuAdd(ready_flags + BranchReadyWord(m, kWorkTileM, m_tile), 1u);
  }
}

// One thread, polled (never blocks): true once m-tile `m_tile`'s `groups` row groups have l
// written (the branch's instances); the consumers' reads after the stage it gates see them.
__device__ __forceinline__ bool BranchReady(const uint32_t* ready_flags, int64_t m, int64_t m_tile,
                                            uint32_t groups) {
  return ptx::LdAcquireGpu(ready_flags + BranchReadyWord(m, kWorkTileM, m_tile)) >= groups;
}

// One thread, polled (never blocks): true once chunk `chunk` of m-tile `m_tile` has `groups`
// finished row groups; its async-proxy reads (TMA) issued after a true see them.
__device__ __forceinline__ bool ChunkReady(const uint32_t* ready_flags, int64_t m_tile, int chunk,
                                           uint32_t groups) {
  if (ptx::LdAcquireGpu(ready_flags + FlagWord(m_tile, chunk)) < groups) return false;
  ptx::FenceProxyAsyncGlobal();  // acquire, then the async-proxy reads
  return true;
}

// Collective of the producer warps (threads [0, threads) of the CTA), their last step: counts
// the CTA out; the grid's last CTA zeroes words [0, words) (ReadyFlagWords of the call, plus
// BranchWords in the branch's instances: every word the grid wrote).
__device__ __forceinline__ void ResetAtExit(uint32_t* ready_flags, int64_t words,
                                            uint32_t threads) {
  bool last = false;
  ptx::BarrierSync(kExitBarrier, threads);  // every producer is done with the flags
  if (threadIdx.x == 0) {
    __threadfence();
    const uint32_t ctas = gridDim.x * gridDim.y * gridDim.z;
    last = atomicAdd(ready_flags + kExitCounter, 1u) == ctas - 1u;
    if (last) __threadfence();
  }
  if (ptx::BarrierOr(kExitBarrier, threads, last)) {
    for (int64_t i = threadIdx.x; i < words; i += threads) ready_flags[i] = 0u;
  }
}
#endif  // defined(__CUDACC__)

}  // namespace h3::kernels

#endif  // H3_KERNELS_READY_FLAGS_H_
