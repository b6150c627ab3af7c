#ifndef H3_KERNELS_LOWRANK_CUH_
#define H3_KERNELS_LOWRANK_CUH_

// The low-rank branch of docs/contract.md section 13 in the fused kernel (a Variant with
// kBranch, variant.cuh), in two halves that meet in global memory:
//   down-projection  the quantizer warp that claimed a unit (work_units.h: kBranchUnitRows = 8
//                    rows x its k-chunks), right after quantizing it and before publishing it: the
//                    unit's partial sums lambda[row][j] over its k range, by bf16 mma.sync
//                    m16n8k16 with lora_down as A (16 of the r columns) and x' as B (the unit's 8
//                    rows: every MMA row and column used), x' section 12's, smoothed in registers
//                    like the quantizer's; stored to p.lora_partial. Plain stores, no atomics:
//                    deterministic.
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

// 16 / 8 bytes of bf16 through the read-only path (the operands are 16-byte aligned,
// core/operands.def; K a multiple of 256 and r of 16 keep every row so).
__device__ __forceinline__ uint4 Ldg16(const uint16_t* p) {
  return __ldg(reinterpret_cast<const uint4*>(p));
}
__device__ __forceinline__ uint2 Ldg8(const uint16_t* p) {
  return __ldg(reinterpret_cast<const uint2*>(p));
}

// Both MMAs below contract over a permutation of their k index, the same on both operands, so
// that a lane reads whole vectors: in each k16 step, lane t's fragment slots {2t, 2t + 1} and
// {2t + 8, 2t + 9} take four consecutive columns (its 8-byte quarter of the step's 16), and in
// the down-projection one 16-byte load supplies two consecutive steps. A dot product keeps its
// terms; only the order of the f32 additions changes, which section 13.2's bound allows.

// The down-projection of one quantizer unit (warp-collective): kRows = 8 rows, the n8 of
// m16n8k16 MMAs whose m16 is 16 of lambda's r columns: lambda^T[j][row] = lora_down[j] . x'[row]
// over the unit's k range, in passes of 32 columns (two m16 tiles). x' is section 12's, smoothed
// in registers exactly as the quantizer does (SmoothBf16Pair).
template <int kRows>
__device__ __forceinline__ void BranchDownUnit(const OutProjParams& p, const WorkUnit& w) {
  static_assert(kRows == 8, "a unit's rows are the n8 of the down-projection's MMAs");
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int chunk_elems = ChunkElems(p.k);
  const int k_begin = w.chunk_begin * chunk_elems;
  const int k_end_c = w.chunk_end * chunk_elems;
  const int k_end = k_end_c < p.k ? k_end_c : p.k;  // a multiple of 32 after k_begin
  const int slot = w.chunk_end - w.chunk_begin == 1 ? w.chunk_begin : 0;
  const bool has_row = w.row0 + g < w.row_end;
  // Lane (g, t) reads columns [k0 + 8t, k0 + 8t + 8) of row g (x', the B operand) and of
  // lora_down's rows j0 + g, + 8, + 16, + 24 (the A operand), each k0 a multiple of 32.
  const uint16_t* x = p.attn_out + (has_row ? w.row0 + g : w.row0) * p.k + 8 * t;
  const float* smooth = p.act_smooth == nullptr ? nullptr : p.act_smooth + 8 * t;
  const int r = p.lora_rank;
  const int64_t k8 = 8 * static_cast<int64_t>(p.k);  // eight rows of lora_down
#pragma unroll 1
  for (int j0 = 0; j0 < r; j0 += 32) {
    const bool two = j0 + 16 < r;  // r is a multiple of 16: one or two m16 tiles this pass
    const uint16_t* d = p.lora_down + static_cast<int64_t>(j0 + g) * p.k + 8 * t;
    float acc[2][4] = {};
#pragma unroll 1
    for (int k0 = k_begin; k0 < k_end; k0 += 32) {
      uint4 xv = has_row ? Ldg16(x + k0) : make_uint4(0u, 0u, 0u, 0u);
      uint4 dv[2][2];
      dv[0][0] = Ldg16(d + k0);
      dv[0][1] = Ldg16(d + k8 + k0);
      dv[1][0] = two ? Ldg16(d + 2 * k8 + k0) : make_uint4(0u, 0u, 0u, 0u);
      dv[1][1] = two ? Ldg16(d + 3 * k8 + k0) : make_uint4(0u, 0u, 0u, 0u);
      if (smooth != nullptr && has_row) {
        const float4 s0 = __ldg(reinterpret_cast<const float4*>(smooth + k0));
        const float4 s1 = __ldg(reinterpret_cast<const float4*>(smooth + k0 + 4));
        xv.x = SmoothBf16Pair(xv.x, s0.x, s0.y);
        xv.y = SmoothBf16Pair(xv.y, s0.z, s0.w);
        xv.z = SmoothBf16Pair(xv.z, s1.x, s1.y);
        xv.w = SmoothBf16Pair(xv.w, s1.z, s1.w);
      }
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        if (nt == 1 && !two) break;
        const uint32_t a0[4] = {dv[nt][0].x, dv[nt][1].x, dv[nt][0].y, dv[nt][1].y};
        const uint32_t b0[2] = {xv.x, xv.y};
        MmaBf16(acc[nt], a0, b0);
        const uint32_t a1[4] = {dv[nt][0].z, dv[nt][1].z, dv[nt][0].w, dv[nt][1].w};
        const uint32_t b1[2] = {xv.z, xv.w};
        MmaBf16(acc[nt], a1, b1);
      }
    }
    // acc[nt]: {lambda[j][row0 + 2t], lambda[j][row0 + 2t + 1]} for j = j0 + 16 nt + g, then the
    // same for j + 8. Rows beyond the unit were zero columns: not stored.
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      if (nt == 1 && !two) break;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t row = w.row0 + 2 * t + (e & 1);
        if (row < w.row_end) {
          const int j = j0 + 16 * nt + g + 8 * (e >> 1);
          p.lora_partial[(static_cast<int64_t>(slot) * p.m + row) * r + j] = acc[nt][e];
        }
      }
    }
  }
}

// lambda of columns [j, j + 4) of `row`: the sum of the row's `slots` partials in slot order
// (0 beyond M: those partials are never written).
__device__ __forceinline__ float4 BranchLambdaQuad(const OutProjParams& p, int64_t row, int j,
                                                   int slots) {
  if (row >= p.m) return make_float4(0.f, 0.f, 0.f, 0.f);
  const int64_t slot_quads = p.m * p.lora_rank / 4;  // one slot, in float4s (r % 16 == 0)
  // L2, not L1: written by other SMs in this launch.
  const float4* src = reinterpret_cast<const float4*>(p.lora_partial + row * p.lora_rank + j);
  float4 v = __ldcg(src);
  // Unrolled by 4 and predicated: the slots' loads are independent, so a front tile's (chunks
  // of them) take two round trips; fully unrolled, the consumers spill.
#pragma unroll 4
  for (int c = 1; c < kMaxChunks; ++c) {
    if (c < slots) {
      const float4 u = __ldcg(src + c * slot_quads);
      v = make_float4(__fadd_rn(v.x, u.x), __fadd_rn(v.y, u.y), __fadd_rn(v.z, u.z),
                      __fadd_rn(v.w, u.w));
    }
  }
  return v;
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
  // One k16 step of l at a time: its lora_up fragments for every n8 (2 registers each), then per
  // m16 fragment l's (4 registers), each MMA accumulating into o in place.
#pragma unroll 1
  for (int s = 0; s < r / 16; ++s) {
    const int j = 16 * s + 4 * t;  // the lane's four ranks of this step (the permutation above)
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
      const float4 l0 = BranchLambdaQuad(p, r0, j, slots);
      const float4 l1 = BranchLambdaQuad(p, r0 + 8, j, slots);
      const uint32_t a[4] = {F32x2ToBf16x2Rn(l0.x, l0.y), F32x2ToBf16x2Rn(l1.x, l1.y),
                             F32x2ToBf16x2Rn(l0.z, l0.w), F32x2ToBf16x2Rn(l1.z, l1.w)};
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
    using Units = WorkUnits<kUnitRows<Cfg, Variant>>;
    const Units units = CallUnits<Cfg, Variant>(p);
    const int slots = mt * Units::kGroupsPerMTile < units.front_groups
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
