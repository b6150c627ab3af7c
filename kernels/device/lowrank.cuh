#ifndef H3_KERNELS_LOWRANK_CUH_
#define H3_KERNELS_LOWRANK_CUH_

// The low-rank branch of docs/contract.md section 13 in the fused kernel (a Variant with
// kBranch, variant.cuh), in two halves that meet in global memory:
//   down-projection  the quantizer warp that claimed a unit (work_units.h: kBranchUnitRows = 8
//                    rows x one k-chunk, kChunkUnits), by bf16 mma.sync m16n8k16 with lora_down
//                    as A (16 of the r ranks) and x' as B (the unit's 8 rows: every MMA row and
//                    column used), x' section 12's, as the quantizer sees it (BranchDownUnit).
//                    A unit is quantized and down-projected from the same registers (attn_out
//                    read once), then published; but the front's units, which the first tiles
//                    wait for, are quantized alone (blocks in flight) and published, and their
//                    down-projections, reading attn_out again, are units of their own after all
//                    of them (work_units.h Kind, producers.cuh QuantizerLoop). Then
//                    the unit stores its partial sums lambda[row][j] over its chunk to
//                    p.lora_partial[chunk]. The group's last unit to arrive (its counter,
//                    ready_flags.h) adds the group's partials in chunk order and writes
//                    l = bf16(lambda) to p.lora_act, once per row.
//   up-projection    each consumer warp, per finished warp tile, before the epilogue: its rows' l
//                    and v = o + l @ lora_up^T by mma.sync with C = o = acc (x) alpha; the
//                    epilogue then runs on v with alpha 1 (AccAsIs: v is not rescaled).
// Ordering: the writer of a group's l then counts the group on its m-tile's l-ready word, and the
// load warp issues the tile's last A stage only once that word is complete, so the consumer sees
// l through the chain: every lane's stores, its membar.gl and the warp's __syncwarp
// (PublishBranchGroup) -> one lane's red.release.gpu (the groups' reds on the word form its
// release sequence) -> the load warp's ld.acquire.gpu -> the last stage's mbarrier arrive
// (release.cta) -> the consumer's wait (acquire.cta). l of rows beyond M is never written nor
// read. No atomics in the sums: the additions' order is fixed (chunk order), so the result
// does not depend on which unit arrives last, the grid or the timing.

#include <cstdint>

#include "kernels/device/epilogue_policy.cuh"
#include "kernels/device/mma.cuh"
#include "kernels/device/params.h"
#include "kernels/device/ptx.cuh"
#include "kernels/device/quantize.cuh"
#include "kernels/device/ready_flags.h"
#include "kernels/device/scheduler.cuh"
#include "kernels/device/variant.cuh"
#include "kernels/device/warp_acc.cuh"
#include "kernels/device/work_units.h"

namespace h3::kernels {

// 16 / 8 bytes of bf16 through the read-only path (the operands are 16-byte aligned,
// core/operands.def; K a multiple of 256 and r of 16 keep every row so).
__device__ __forceinline__ uint4 Ldg16(const uint16_t* p) {
  return __ldg(reinterpret_cast<const uint4*>(p));
}
__device__ __forceinline__ uint2 Ldg8(const uint16_t* p) {
  return __ldg(reinterpret_cast<const uint2*>(p));
}

// A branch unit's rows' chunk to L2 (warp-collective; lane t = 0 of row g issues row g's), ahead of
// a loop that reads them a block or a few a lane at a time: its later iterations then wait for L2,
// not DRAM, round trips. A hint only: results do not depend on it.
__device__ __forceinline__ void PrefetchUnitRows(const OutProjParams& p, const WorkUnit& w) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int64_t row = w.row0 + g;
  if (t != 0 || row >= w.row_end) return;
  const int chunk_elems = ChunkElems(p.k);
  const int k_begin = w.chunk_begin * chunk_elems;
  const int k_end_c = w.chunk_end * chunk_elems;
  const int k_end = k_end_c < p.k ? k_end_c : p.k;
  ptx::BulkPrefetchL2(p.attn_out + row * p.k + k_begin,
                      static_cast<uint32_t>(k_end - k_begin) * 2u);
}

// Both MMAs below contract over a permutation of their k index, the same on both operands, so
// that a lane reads whole vectors. A dot product keeps its terms; only the order of the f32
// additions changes, which section 13.2's bound allows.

// r <= 64 (contract section 13; core/operands.h kLoraRankMax): at most four m16 tiles of ranks;
// a call's tiles beyond r / 16 are skipped (a uniform branch).
inline constexpr int kMaxRankTiles = 4;

// Down-projects a branch unit (warp-collective; kBranchUnitRows = 8 rows x one k-chunk), and with
// kQuantize quantizes it from the same registers: lane (g, t) loads row g's blocks t, t + 4, ...
// (k64 groups: block 4d + t of group d), and each block it holds, x' as the quantizer sees it
// (section 12, through the input policy), is the B operand (n8 = the unit's rows) of four
// m16n8k16 MMAs per 16 ranks, lora_down the A operand (m16 = 16 of the r ranks). In step s of a
// k64 group, slot pairs {2t, 2t + 1} and {2t + 8, 2t + 9} take columns 16t + 4s + {0, 1} and
// + {2, 3}: a lane's four columns of its own block (w[2s], w[2s + 1]), and of lora_down's rows
// j and j + 8 one 32-byte run per block. acc[nt]: lambda^T over the unit's chunk, ranks
// 16 nt + g (+ 8) by rows 2t (+ 1).
template <class Arch, class Variant, bool kQuantize, class Input, class OsSource>
__device__ __forceinline__ void BranchDownUnit(const OutProjParams& p, const WorkUnit& w,
                                               uint32_t u, const OsSource& os_src,
                                               const Input& input,
                                               float (&acc)[kMaxRankTiles][4]) {
  const int tiles = p.lora_rank / 16;
  static_assert(kBranchUnitRows == 8, "lane (g, t) holds row g of the unit: the MMAs' n8");
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int chunk_elems = ChunkElems(p.k);
  const int k_begin = w.chunk_begin * chunk_elems;
  const int k_end_c = w.chunk_end * chunk_elems;
  const int k_end = k_end_c < p.k ? k_end_c : p.k;  // a multiple of 256 after k_begin
  const int64_t row = w.row0 + g;
  const bool has_row = row < w.row_end;
  const int64_t row_q = has_row ? row : w.row0;  // in bounds; not stored unless has_row
  const uint16_t* x = p.attn_out + row_q * p.k;
  uint8_t* codes = p.act_q + row_q * (p.k / 2);
  uint8_t* sf = p.act_sf + row_q * (p.k / 16);
  const int64_t k8 = 8 * static_cast<int64_t>(p.k);  // eight rows of lora_down
  const uint16_t* down = p.lora_down + static_cast<int64_t>(g) * p.k;
  // The loop below holds one block a lane (the producers' registers): the unit's rows go to L2
  // ahead of it, so that its iterations wait for L2, not DRAM, round trips.
  if constexpr (kQuantize) PrefetchUnitRows(p, w);
#pragma unroll 1
  for (int c = k_begin + 16 * t; c < k_end; c += 64) {
    if constexpr (kQuantize) {
      Variant::Pause(PauseSite::kQuantizerBlock, u * 4096u + static_cast<uint32_t>(c - k_begin));
    }
    uint32_t xb[8] = {};  // zero columns for rows beyond the unit
    if (has_row) {
      LoadBlock(x + c, input, c, xb);
      if constexpr (kQuantize) QuantizeStoreBlock<Arch>(xb, os_src, codes + c / 2, sf + c / 16);
    }
#pragma unroll
    for (int nt = 0; nt < kMaxRankTiles; ++nt) {
      if (nt >= tiles) break;
      const uint16_t* d = down + nt * 2 * k8 + c;  // rank 16 nt + g, then + 8
      const uint4 lo0 = Ldg16(d), hi0 = Ldg16(d + 8), lo1 = Ldg16(d + k8), hi1 = Ldg16(d + k8 + 8);
      const uint32_t a0[4] = {lo0.x, lo1.x, lo0.y, lo1.y}, a1[4] = {lo0.z, lo1.z, lo0.w, lo1.w};
      const uint32_t a2[4] = {hi0.x, hi1.x, hi0.y, hi1.y}, a3[4] = {hi0.z, hi1.z, hi0.w, hi1.w};
      const uint32_t b0[2] = {xb[0], xb[1]}, b1[2] = {xb[2], xb[3]};
      const uint32_t b2[2] = {xb[4], xb[5]}, b3[2] = {xb[6], xb[7]};
      MmaBf16(acc[nt], a0, b0);
      MmaBf16(acc[nt], a1, b1);
      MmaBf16(acc[nt], a2, b2);
      MmaBf16(acc[nt], a3, b3);
    }
  }
}

// lora_down to L2 before the first units (every unit of a chunk reads that chunk's columns of
// it; without this the first ones wait for DRAM): CTA b's first quantizer lane prefetches its
// 1/gridDim.x of the matrix.
__device__ __forceinline__ void PrefetchLoraDown(const OutProjParams& p) {
  const uint64_t bytes = static_cast<uint64_t>(p.lora_rank) * static_cast<uint64_t>(p.k) * 2u;
  const uint64_t share = (bytes / gridDim.x + 15u) / 16u * 16u;  // 16-byte multiples
  const uint64_t begin = share * blockIdx.x;
  if (begin >= bytes) return;
  const uint64_t n = bytes - begin < share ? bytes - begin : share;
  ptx::BulkPrefetchL2(reinterpret_cast<const uint8_t*>(p.lora_down) + begin,
                      static_cast<uint32_t>(n));
}

// The rest of a branch unit after its down-projection (and a fused unit's publish; a down-only
// unit's codes were published by its quantize-only twin) (warp-collective): its partial sums
// to p.lora_partial[its chunk], then the arrival at its group's counter; the group's last unit
// to arrive adds the group's partials in chunk order and writes l = bf16(lambda) once per row.
template <int kRows, class Variant>
__device__ __forceinline__ void BranchFinishUnit(const OutProjParams& p, const WorkUnit& w,
                                                 int chunks,
                                                 const float (&acc)[kMaxRankTiles][4]) {
  static_assert(kRows == 8, "a unit's rows are the n8 of the down-projection's MMAs");
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int r = p.lora_rank;
  const int slot = w.chunk_begin;  // one chunk a unit (kChunkUnits)
#pragma unroll
  for (int nt = 0; nt < kMaxRankTiles; ++nt) {
    if (nt >= r / 16) break;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int64_t row = w.row0 + 2 * t + (e & 1);
      if (row < w.row_end) {
        const int j = 16 * nt + g + 8 * (e >> 1);
        p.lora_partial[(static_cast<int64_t>(slot) * p.m + row) * r + j] = acc[nt][e];
      }
    }
  }
  // Arrive at the group's counter; the last arrival writes the group's l.
  const int64_t group = w.row0 / kRows;
  __threadfence();  // every lane's partials, before the arrival (release)
  Variant::Pause(PauseSite::kBranchArrive, static_cast<uint32_t>(2 * group));
  __syncwarp();
  uint32_t last = 1u;
  if (chunks > 1) {
    uint32_t* counter = p.ready_flags + BranchCounterWord(p.m, kWorkTileM, group);
    if (lane == 0) {
      last = atomicAdd(counter, 1u) == static_cast<uint32_t>(chunks - 1) ? 1u : 0u;
      if (last != 0u) __threadfence();  // acquire: the other units' partials
    }
    last = __shfl_sync(0xFFFFFFFFu, last, 0);
  }
  if (last == 0u) return;
  __syncwarp();
  // lambda of the group's rows: its chunks' partials added in chunk order, 4 columns a lane and
  // step; l = bf16(lambda).
  const int quads_per_row = r / 4;
  const int64_t slot_floats = p.m * r;
  for (int q = lane; q < kRows * quads_per_row; q += 32) {
    const int64_t row = w.row0 + q / quads_per_row;
    if (row >= w.row_end) break;  // q grows with the row
    const int j = 4 * (q % quads_per_row);
    const float* src = p.lora_partial + row * r + j;
    // L2, not L1: written by other SMs in this launch.
    float4 v = __ldcg(reinterpret_cast<const float4*>(src));
#pragma unroll 4
    for (int c = 1; c < kMaxChunks; ++c) {
      if (c < chunks) {
        const float4 u = __ldcg(reinterpret_cast<const float4*>(src + c * slot_floats));
        v = make_float4(__fadd_rn(v.x, u.x), __fadd_rn(v.y, u.y), __fadd_rn(v.z, u.z),
                        __fadd_rn(v.w, u.w));
      }
    }
    *reinterpret_cast<uint2*>(p.lora_act + row * r + j) =
        make_uint2(F32x2ToBf16x2Rn(v.x, v.y), F32x2ToBf16x2Rn(v.z, v.w));
  }
  Variant::Pause(PauseSite::kBranchArrive, static_cast<uint32_t>(2 * group + 1));
  if (!Variant::Withholds(Handoff::kBranchPublish, kRingA, static_cast<int>(w.row0 / kWorkTileM),
                          0, 0)) {
    PublishBranchGroup(p.ready_flags, p.m, w.row0 / kWorkTileM);
  }
}

// l of columns [j, j + 4) of `row` as two bf16 pairs ({j, j + 1}, {j + 2, j + 3}): zero beyond M.
__device__ __forceinline__ uint2 BranchActQuad(const OutProjParams& p, int64_t row, int j) {
  if (row >= p.m) return make_uint2(0u, 0u);
  // L2, not L1: written by other SMs in this launch.
  return __ldcg(reinterpret_cast<const uint2*>(p.lora_act + row * p.lora_rank + j));
}

// The up-projection of one warp tile (warp-collective), in place: acc (the contract's f32 sums,
// Arch-scaled) becomes v = (acc (x) alpha) + l @ lora_up^T (section 13 step 2), unscaled.
template <class Cfg, class Arch>
__device__ __forceinline__ void BranchUpTile(WarpAcc<Cfg>& acc, int64_t row_base, int col_base,
                                             const OutProjParams& p, float alpha) {
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
  // One k16 step of l at a time: its lora_up fragments for every n8 (2 registers each), then per
  // m16 fragment l's (4 registers), each MMA accumulating into o in place. The step's k slots
  // {2t, 2t + 1} and {2t + 8, 2t + 9} are ranks j, j + 1 and j + 2, j + 3 (j = 16 s + 4 t), on
  // both operands: a lane reads 8 contiguous bytes of l and of lora_up per row.
#pragma unroll 1
  for (int s = 0; s < r / 16; ++s) {
    const int j = 16 * s + 4 * t;  // the lane's four ranks of this step
    uint32_t b[Cfg::kNFrags][2];
#pragma unroll
    for (int jn = 0; jn < Cfg::kNFrags; ++jn) {
      const uint2 u = Ldg8(p.lora_up + static_cast<int64_t>(col_base + 8 * jn + g) * r + j);
      b[jn][0] = u.x;
      b[jn][1] = u.y;
    }
#pragma unroll
    for (int i = 0; i < Cfg::kMFrags; ++i) {
      const int64_t r0 = row_base + 16 * i + g;
      const uint2 l0 = BranchActQuad(p, r0, j), l1 = BranchActQuad(p, r0 + 8, j);
      const uint32_t a[4] = {l0.x, l1.x, l0.y, l1.y};
#pragma unroll
      for (int jn = 0; jn < Cfg::kNFrags; ++jn) MmaBf16(acc.v[i][jn], a, b[jn]);
    }
  }
}

// The architecture policy with the accumulator taken as it is: the epilogue after BranchUpTile
// reads v, which is not Arch-scaled.
template <class Arch>
struct AccAsIs : Arch {
  __device__ __forceinline__ static float UnscaleAcc(float acc) { return acc; }
};

// A finished warp tile through the Variant's epilogue, with the branch first where the Variant
// has it. sink: where the epilogue runs (epilogue_policy.cuh InRegisterSink, or a staged
// config's StagedSink, staged_epilogue.cuh).
template <class Cfg, class Arch, class Variant, class Sink = InRegisterSink>
__device__ __forceinline__ void FinishWarpTile(WarpAcc<Cfg>& acc, int64_t row0, int col0,
                                               const OutProjParams& p, float alpha,
                                               const Sink& sink = Sink()) {
  if constexpr (Variant::kBranch && Variant::kBranchUp) {
    // l's ordering (header) needs every unit published and every consumer warp waiting on every
    // A stage of its tile.
    static_assert(Variant::kPublish && Variant::kEveryGroupMma,
                  "a branch Variant publishes every unit and runs every group's stages");
    BranchUpTile<Cfg, Arch>(acc, row0, col0, p, alpha);
    sink.template Run<Cfg, AccAsIs<Arch>, typename Variant::Epilogue>(acc, row0, col0, p, 1.0f);
  } else {
    sink.template Run<Cfg, Arch, typename Variant::Epilogue>(acc, row0, col0, p, alpha);
  }
}

}  // namespace h3::kernels

#endif  // H3_KERNELS_LOWRANK_CUH_
