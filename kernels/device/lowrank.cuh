#ifndef H3_KERNELS_LOWRANK_CUH_
#define H3_KERNELS_LOWRANK_CUH_

// The low-rank branch of docs/contract.md section 13 in the fused kernel (a Variant with
// kBranch, variant.cuh), in two halves that meet in global memory:
//   down-projection  the quantizer warp that claimed a unit (work_units.h: a row group x its
//                    k-chunks), right after quantizing it and before publishing it: the unit's
//                    partial sums lambda[row][j] over its k range, by bf16 mma.sync m16n8k16 on
//                    x' (section 12's, smoothed in registers like the quantizer's) and lora_down,
//                    stored to p.lora_partial. Plain stores, no atomics: deterministic.
//   up-projection    each consumer warp, per finished warp tile, before the epilogue: lambda =
//                    the row's partials summed in chunk order, l = bf16(lambda), and
//                    v = o + l @ lora_up^T by mma.sync with C = o = acc (x) alpha; the epilogue
//                    then runs on v with alpha 1 (AccAsIs: v is not rescaled).
// Partials: p.lora_partial[slot][row][j] (f32, [NumChunks(k)][m][r]). A unit of a front m-tile
// (one chunk) writes slot = its chunk; any other unit (all chunks) writes slot 0. The epilogue of
// m-tile mt reads slots [0, front ? chunks : 1). Every slot it reads was written by a unit
// published before the tile's loads could start (ready_flags.h), so the consumer sees it through
// the chain: every lane's stores, its membar.gl and the warp's __syncwarp (PublishUnit) -> one
// lane's red.release.gpu per chunk (the units' reds on a flag form its release sequence) -> the
// load warp's ld.acquire.gpu -> the stage's mbarrier arrive (release.cta) -> the consumer's wait
// (acquire.cta). Unwritten slots (rows beyond M) are never read. Deterministic for a given
// device, config and grid: which m-tiles are front (one partial per chunk) depends on the grid.

#include <cstdint>

#include "kernels/device/epilogue_policy.cuh"
#include "kernels/device/mma.cuh"
#include "kernels/device/params.h"
#include "kernels/device/quantize.cuh"
#include "kernels/device/scheduler.cuh"
#include "kernels/device/warp_acc.cuh"
#include "kernels/device/work_units.h"

namespace h3::kernels {

__device__ __forceinline__ uint32_t LdgPair(const uint16_t* p) {
  return __ldg(reinterpret_cast<const uint32_t*>(p));
}

// x' of one bf16 pair at column k (k even): section 12 where act_smooth is given.
__device__ __forceinline__ uint32_t SmoothedPair(const OutProjParams& p, const uint16_t* x, int k) {
  const uint32_t w = LdgPair(x + k);
  if (p.act_smooth == nullptr) return w;
  const float2 s = __ldg(reinterpret_cast<const float2*>(p.act_smooth + k));
  return SmoothBf16Pair(w, s.x, s.y);
}

// The down-projection of one quantizer unit (warp-collective). The unit's rows (at most 8) are
// the m16 tile's rows g < 8; rows g + 8 are zero.
template <int kRows>
__device__ __forceinline__ void BranchDownUnit(const OutProjParams& p, const WorkUnit& w) {
  static_assert(kRows <= 8, "a unit's rows fit the first half of an m16 tile");
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int chunk_elems = ChunkElems(p.k);
  const int k_begin = w.chunk_begin * chunk_elems;
  const int k_end_c = w.chunk_end * chunk_elems;
  const int k_end = k_end_c < p.k ? k_end_c : p.k;
  const int slot = w.chunk_end - w.chunk_begin == 1 ? w.chunk_begin : 0;
  const int64_t row = w.row0 + g;
  const bool has_row = row < w.row_end;
  const uint16_t* x = p.attn_out + (has_row ? row : w.row0) * p.k;
  const int r = p.lora_rank;
  // Two n8 tiles (16 columns of lambda) a pass over the k range: the producers' register budget
  // (config.cuh kProducerRegs) holds their accumulators beside the quantizer's state.
  constexpr int kTiles = 2;
#pragma unroll 1
  for (int j0 = 0; j0 < r; j0 += 8 * kTiles) {
    float acc[kTiles][4] = {};
    const uint16_t* down = p.lora_down + static_cast<int64_t>(j0 + g) * p.k + 2 * t;
#pragma unroll 1
    for (int k0 = k_begin; k0 < k_end; k0 += 16) {
      uint32_t a[4] = {0u, 0u, 0u, 0u};
      if (has_row) {
        a[0] = SmoothedPair(p, x, k0 + 2 * t);
        a[2] = SmoothedPair(p, x, k0 + 2 * t + 8);
      }
#pragma unroll
      for (int nt = 0; nt < kTiles; ++nt) {
        const uint16_t* d = down + static_cast<int64_t>(8 * nt) * p.k + k0;
        const uint32_t b[2] = {LdgPair(d), LdgPair(d + 8)};
        MmaBf16(acc[nt], a, b);
      }
    }
    if (has_row) {
      float* dst = p.lora_partial + (static_cast<int64_t>(slot) * p.m + row) * r + j0 + 2 * t;
#pragma unroll
      for (int nt = 0; nt < kTiles; ++nt) {
        *reinterpret_cast<float2*>(dst + 8 * nt) = make_float2(acc[nt][0], acc[nt][1]);
      }
    }
  }
}

// l = bf16(lambda) of columns (j, j + 1) of `row`: lambda the sum of the row's `slots` partials
// in slot order (0 beyond M), packed low column first.
__device__ __forceinline__ uint32_t BranchActivationPair(const OutProjParams& p, int64_t row,
                                                         int j, int slots) {
  if (row >= p.m) return 0u;
  float lo = 0.f, hi = 0.f;
  for (int c = 0; c < slots; ++c) {
    // L2, not L1: written by other SMs in this launch.
    const float2 v = __ldcg(reinterpret_cast<const float2*>(
        p.lora_partial + (static_cast<int64_t>(c) * p.m + row) * p.lora_rank + j));
    lo = c == 0 ? v.x : __fadd_rn(lo, v.x);
    hi = c == 0 ? v.y : __fadd_rn(hi, v.y);
  }
  return F32x2ToBf16x2Rn(lo, hi);
}

// The up-projection of one warp tile (warp-collective), in place: acc (the contract's f32 sums,
// Arch-scaled) becomes v = (acc (x) alpha) + l @ lora_up^T (section 13 step 2), unscaled.
template <class Cfg, class Arch>
__device__ __forceinline__ void BranchUpTile(WarpAcc<Cfg>& acc, int64_t row_base, int col_base,
                                             const OutProjParams& p, float alpha, int slots) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int r = p.lora_rank;
#pragma unroll
  for (int i = 0; i < Cfg::kMFrags; ++i)
#pragma unroll
    for (int jn = 0; jn < Cfg::kNFrags; ++jn)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        acc.v[i][jn][e] = __fmul_rn(Arch::UnscaleAcc(acc.v[i][jn][e]), alpha);  // o, section 6
      }
  // One k16 step of l at a time (4 registers beside the accumulators: the consumers' budget,
  // config.cuh kConsumerRegs, holds no more), each MMA accumulating into o in place.
#pragma unroll
  for (int i = 0; i < Cfg::kMFrags; ++i) {
    const int64_t r0 = row_base + 16 * i + g, r1 = r0 + 8;
#pragma unroll 1
    for (int s = 0; s < r / 16; ++s) {
      const int j = 16 * s + 2 * t;
      const uint32_t a[4] = {BranchActivationPair(p, r0, j, slots),
                             BranchActivationPair(p, r1, j, slots),
                             BranchActivationPair(p, r0, j + 8, slots),
                             BranchActivationPair(p, r1, j + 8, slots)};
      const uint16_t* up = p.lora_up + static_cast<int64_t>(col_base + g) * r + j;
#pragma unroll
      for (int jn = 0; jn < Cfg::kNFrags; ++jn) {
        const uint16_t* u = up + static_cast<int64_t>(8 * jn) * r;
        const uint32_t b[2] = {LdgPair(u), LdgPair(u + 8)};
        MmaBf16(acc.v[i][jn], a, b);
      }
    }
  }
}

// The architecture policy with the accumulator taken as it is: the epilogue after BranchUpTile
// reads v, which is not Arch-scaled.
template <class Arch>
struct AccAsIs : Arch {
  __device__ __forceinline__ static float UnscaleAcc(float acc) { return acc; }
};

// A finished warp tile of m-tile mt through the Variant's epilogue, with the branch first where
// the Variant has it. The partials' slots of mt: every chunk's for a front m-tile, else the one
// (work_units.h; recomputed per tile rather than kept in registers across tiles).
template <class Cfg, class Arch, class Variant>
__device__ __forceinline__ void FinishWarpTile(WarpAcc<Cfg>& acc, int64_t row0, int col0,
                                               const OutProjParams& p, float alpha, int64_t mt) {
  if constexpr (Variant::kBranch) {
    // The partials' ordering (header) needs every unit published and every consumer warp
    // waiting on every A stage of its tile.
    static_assert(Variant::kPublish && Variant::kEveryGroupMma,
                  "a branch Variant publishes every unit and runs every group's stages");
    const WorkUnits<Cfg::kQuantRows> units = CallUnits<Cfg>(p);
    const int slots = mt * WorkUnits<Cfg::kQuantRows>::kGroupsPerMTile < units.front_groups
                          ? units.chunks
                          : 1;
    BranchUpTile<Cfg, Arch>(acc, row0, col0, p, alpha, slots);
    EpilogueTile<Cfg, AccAsIs<Arch>, typename Variant::Epilogue>(acc, row0, col0, p, 1.0f);
  } else {
    EpilogueTile<Cfg, Arch, typename Variant::Epilogue>(acc, row0, col0, p, alpha);
  }
}

}  // namespace h3::kernels

#endif  // H3_KERNELS_LOWRANK_CUH_
