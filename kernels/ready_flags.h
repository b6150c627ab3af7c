#ifndef H3_KERNELS_READY_FLAGS_H_
#define H3_KERNELS_READY_FLAGS_H_

// The ready-flag protocol of the fused kernel, whole: how the quantizer warps tell the TMA load
// warps (of any CTA) that an m-tile of act_q/act_sf is complete.
//
// Buffer ("ready flags"): ReadyFlagWords(m, BM) uint32 words of global memory per call, zeroed
// by the host API on the launch's stream right before the launch (out_proj.cc), so calls never
// share one and any call can be captured into a CUDA graph:
//   word kClaimCounter                      the next quantizer unit to claim (work_units.h)
//   word kStallClaim                        0 until a thread gives up waiting (bounded_wait.cuh)
//   word kFlagsOffset + mt * kMaxChunks + c finished row groups of k-chunk c of m-tile mt
//                                           (ready when it reaches WorkUnits::GroupsInMTile)
//
// Protocol (PTX memory consistency model, "Proxies" and release/acquire patterns):
//   quantizer warp: ClaimUnit -> quantize (generic st.global of act_q/act_sf) -> PublishUnit:
//                   fence.proxy.async.global + membar.gl by every lane, __syncwarp, then one
//                   red.release.gpu.add per chunk of the unit (lane c: chunk c);
//   load warp:      ChunkReady (polled) before the first stage of each chunk of a tile:
//                   ld.acquire.gpu of the flag until complete, then fence.proxy.async.global
//                   before the TMA (async proxy) reads act_q/act_sf.
// Units are claimed in increasing order and a claimed unit is always finished by its claimer,
// which waits on nothing, so every m-tile becomes ready whatever subset of the grid is resident.
// The host needs only the layout constants (no CUDA headers); the device functions follow.

#include <cstdint>

#include "kernels/work_units.h"

#if defined(__CUDACC__)
#include "kernels/ptx.cuh"
#endif

namespace h3::kernels {

inline constexpr int kClaimCounter = 0;
inline constexpr int kStallClaim = 1;  // the first thread to give up waiting (stall.h) sets it
inline constexpr int kFlagsOffset = 32;  // the counter sits in its own 128-byte line
static_assert(kMaxChunks <= 32, "PublishUnit: one lane per chunk");

// Words of the buffer for m rows in m-tiles of tile_m rows: kMaxChunks flags per m-tile.
inline constexpr int64_t ReadyFlagWords(int64_t m, int64_t tile_m) {
  return kFlagsOffset + (m + tile_m - 1) / tile_m * kMaxChunks;
}
H3_HD int64_t FlagWord(int64_t m_tile, int chunk) {
  return kFlagsOffset + m_tile * kMaxChunks + chunk;
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

// One thread, polled (never blocks): true once chunk `chunk` of m-tile `m_tile` has `groups`
// finished row groups; its async-proxy reads (TMA) issued after a true see them.
__device__ __forceinline__ bool ChunkReady(const uint32_t* ready_flags, int64_t m_tile, int chunk,
                                           uint32_t groups) {
  if (ptx::LdAcquireGpu(ready_flags + FlagWord(m_tile, chunk)) < groups) return false;
  ptx::FenceProxyAsyncGlobal();  // acquire, then the async-proxy reads
  return true;
}
#endif  // defined(__CUDACC__)

}  // namespace h3::kernels

#endif  // H3_KERNELS_READY_FLAGS_H_
