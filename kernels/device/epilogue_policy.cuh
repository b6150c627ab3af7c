#ifndef H3_KERNELS_EPILOGUE_POLICY_CUH_
#define H3_KERNELS_EPILOGUE_POLICY_CUH_

// The epilogue as a policy type: what a consumer warp's finished tile of accumulators becomes.
// The kernel's tile path (out_proj_kernel.cuh ConsumerLoop, sm90/fast_kernel.cuh
// FastConsumerLoop) calls EpilogueTile<Cfg, Arch, Epi> below once per warp tile, with
// Epi = Variant::Epilogue (variant.cuh), through lowrank.cuh FinishWarpTile (the low-rank branch
// first where the Variant has it: below). EpilogueTile owns the loops, the registers that carry
// values between the hooks and the order of memory accesses; the policy supplies the hooks. A new
// epilogue is a new policy type: the tile path and EpilogueTile stay as they are.
//
// The policy (the product's: GatedResidual, epilogue.cuh):
//   Epi::kVec16   bool: whether the hooks have a 16-byte path (kW = 4). EpilogueTile takes it where
//                 p.vec16_epilogue says the operands allow it, kW = 1 otherwise; a policy without
//                 one is instantiated with kW = 1 alone.
//   Epi::Tile<Cfg, Arch, kW>   one warp tile's state (registers); its members are the hooks:
//   set-up   Tile(const EpilogueLane<kW>& at, const OutProjParams& p, float alpha)
//            Once per warp tile, first. Loads what the whole tile needs and keeps it in members
//            (the product: each row's gate row, and alpha = 1 / (act_gs w_gs), computed once per
//            call, docs/contract.md section 6).
//   apply    void Apply(const EpilogueLane<kW>& at, const OutProjParams& p,
//                       const WarpAcc<Cfg>& acc, int i, int h, int q, uint32_t (&t)[kW])
//            For every m fragment i, row half h and access q, in that order (i outermost, the
//            last call is (kMFrags - 1, 1, kNFrags / kW - 1)): the accumulators -> the kW words t
//            of access q of row at.Row(i, h), in the access layout below (the product:
//            t = bf16(gate (x) (acc (x) alpha))). t arrives zeroed. Every Apply precedes every
//            store hook.
//   store    For each batch of kEpiBatch m fragments, first every Read of the batch, then its
//            Combines and Stores; rows at.Row(i, h) >= p.m get none of them.
//            void Read(const EpilogueLane<kW>& at, const OutProjParams& p, int64_t row, int q,
//                      uint32_t* r)
//              writes r[0 .. kW): the words of access q of `row` that the store merges with (the
//              product: the residual). Batched ahead of the writes because out may be the very
//              operand read (contract section 9: out may be residual).
//            uint32_t Combine(int i, int h, uint32_t r, uint32_t t)
//              one word (a bf16 pair) of the store from what Read and Apply gave for it (the
//              product: bf16(residual + t) for gated rows, the residual bit for bit otherwise).
//            void Store(const EpilogueLane<kW>& at, const OutProjParams& p, int64_t row, int q,
//                       const uint32_t (&o)[kW])
//              the write of access q of `row`: one kW-word access (the product: to out).
//
// Layouts. acc.v[i][j][2h + c] is (row at.Row(i, h), column col_base + 8j + 2 at.lcol + c)
// (warp_acc.cuh, the MMA's C fragment). An access is kW words at at.Access(row_start, q): for
// kW = 1 the lane's pair of n fragment j = q; for kW = 4 the 8 contiguous columns of fragment
// group q that a quad transpose (epilogue.cuh QuadTranspose) gives the lane, the pairs of
// fragments 4q .. 4q + 3 of the quad's four lanes. Apply moves between the layouts itself.
//
// What a hook may do:
//   - Read any operand of p from global memory; keep values in the Tile's members.
//   - Warp shuffles with the full mask in set-up and Apply: all 32 lanes call them, converged.
//     Read, Combine and Store run only for rows < p.m, a branch uniform per quad (its four lanes
//     share the row) but not per warp: no full-warp shuffle there.
//   - Write only the warp tile's rows < p.m of out, in Store. Columns need no check: the tile
//     path calls the epilogue only for warp tiles inside N (N is a multiple of each config's
//     tile N).
//   - Round f32 only where the contract does, each rounding spelled (__fmul_rn, __fadd_rn,
//     cvt.rn): no FMA contraction, no fast math. The emulator computes the same (emulator/), so a
//     new policy comes with its contract text and its emulator twin.
// What it may not do:
//   - No barrier beyond its own warp (__syncthreads, bar.sync, named barriers), no mbarrier, no
//     wait on a ready flag or on another CTA: the producer warps never join the consumers, and
//     the two consumer warpgroups of a skewed config run stages apart (config.cuh), so a wider
//     barrier would serialize them or hang.
//   - No shared memory: every byte of SharedStorage is a live ring slot, scale slot or barrier
//     while the epilogue runs (the next tile's stages are already filling); a policy that needs
//     some takes it from the rings' budget, a config change (config.cuh, rings.cuh).
//   - No registers beyond the consumers' setmaxnreg budget (Cfg::kConsumerRegs where
//     Cfg::kSetMaxNReg): the accumulators (4 kMFrags kNFrags words), t (2 kMFrags kNFrags), a
//     batch of reads and the Tile's members are live together. The product spills nothing on
//     sm_120f, where the build's ptxas gate fails on spills (tools/cuda/defs.bzl);
//     a new policy keeps it so. (The branch's instances spill there, 16-124 bytes, and build
//     with the gate off: kernels/launch/BUILD out_proj_branch_kernel.)
//   - No local array written under a branch inside a hook: nvcc optimizes a function before it
//     inlines it, and such an array, promoted to registers there rather than in EpilogueTile,
//     comes out in another order (measured: the product's SASS changed when its store step was
//     one hook with its own arrays). So EpilogueTile holds every array and the per-access hooks
//     hold words.
//
// Staged configs (config.cuh StagedSchedule; staged_epilogue.cuh): a policy with
// Epi::kStageable (the product's) runs set-up and Apply in the consumers as above; the staged
// driver, not the policy, writes the words t to shared memory and handles the barriers, and the
// quantizer warps finish each 16-byte piece of a row < p.m with the policy's static hooks
// Gated / ReadStaged / CombineStaged / StoreStaged (epilogue.cuh). A policy without them runs
// the in-register path on a staged config too. The rules above hold for every hook.
//
// How the next epilogues plug in (a policy each; the tile path and EpilogueTile untouched):
//   - The low-rank branch (contract section 13; SVDQuant's out = ... + L1 (L2 x')) is not a
//     policy: it transforms the accumulators before EpilogueTile (lowrank.cuh). The quantizer
//     warps leave each row's l = bf16(lambda) in a workspace; FinishWarpTile, where
//     Variant::kBranch (variant.cuh ProductBranch), has BranchUpTile turn the tile's acc into
//     v = o + l @ lora_up^T (mma.sync with C = o = acc (x) alpha), then runs the
//     product's policy, GatedResidual, on v with Arch = AccAsIs<Arch> (no rescaling) and alpha 1.
//   - The input-channel smoothing (contract section 12: x' = bf16(f32(x) (x) s_k) per channel k
//     before quantization, s = act_smooth; the caller's weight is the smoothed one) changes what
//     the quantizer warps quantize, not what the accumulators mean: no epilogue hook. It is the
//     quantizers' input policy (quantize.cuh SmoothedInput, variant.cuh ProductSmoothed's Input).
//     A per-column (output-channel) factor would be an Apply step, its columns loaded like the
//     gate's.

#include <cstdint>

#include "kernels/device/params.h"
#include "kernels/device/warp_acc.cuh"

namespace h3::kernels {

// Where a lane's values lie in the warp tile at (row_base, col_base), for kW-word accesses: in
// the MMA layout lane (lrow, lcol) holds rows Row(i, h) = row_base + 16i + lrow + 8h; access q of
// such a row starts at column col + 8 kW q (kW = 1: the pair of n fragment q; kW = 4: the quad's
// 16 contiguous bytes of fragment group q after QuadTranspose).
template <int kW>
struct EpilogueLane {
  int64_t row_base;
  int lrow, lcol;
  int col;  // access 0's first column

  __device__ __forceinline__ EpilogueLane(int64_t row_base_, int col_base) : row_base(row_base_) {
    const int lane = threadIdx.x & 31;
    lrow = lane >> 2;
    lcol = lane & 3;
    col = col_base + (kW == 4 ? 8 * lcol : 2 * lcol);
  }
  __device__ __forceinline__ int64_t Row(int i, int h) const {
    return row_base + 16 * i + lrow + 8 * h;
  }
  // Access q of the row that starts at row_start: the constant part added last, as its own
  // pointer step (folded into the access's immediate offset, where (col + 8 kW q) would not be).
  template <class T>
  __device__ __forceinline__ T* Access(T* row_start, int q) const {
    return row_start + col + 8 * kW * q;
  }
};

// m fragments (4 accumulator rows per thread) per batch of Reads.
constexpr int kEpiBatch = 2;

// One warp tile through the policy's hooks with kW words per access, in the order above.
template <class Cfg, class Arch, class Epi, int kW>
__device__ __forceinline__ void StoreTile(const WarpAcc<Cfg>& acc, int64_t row_base, int col_base,
                                          const OutProjParams& p, float alpha) {
  static_assert(kW == 1 || kW == 4, "4- or 16-byte accesses");
  static_assert(Cfg::kNFrags % kW == 0, "whole accesses per row");
  static_assert(Cfg::kMFrags % kEpiBatch == 0, "whole batches of m fragments");
  constexpr int kAccesses = Cfg::kNFrags / kW;  // per row and thread
  const EpilogueLane<kW> at(row_base, col_base);
  typename Epi::template Tile<Cfg, Arch, kW> tile(at, p, alpha);
  // The arrays are indexed [..][kW q + k]: shaped [..][q][k] they compile to other SASS.
  uint32_t t[Cfg::kMFrags][2][Cfg::kNFrags];  // [i][h][kW q + k]
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
#pragma unroll
  for (int i0 = 0; i0 < Cfg::kMFrags; i0 += kEpiBatch) {
    uint32_t r[kEpiBatch][2][Cfg::kNFrags];  // [b][h][kW q + k]
#pragma unroll
    for (int b = 0; b < kEpiBatch; ++b)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t row = at.Row(i0 + b, h);
#pragma unroll
        for (int q = 0; q < kAccesses; ++q) {
          uint32_t* rq = &r[b][h][kW * q];
          if (row < p.m) {
            tile.Read(at, p, row, q, rq);
          } else {
#pragma unroll
            for (int k = 0; k < kW; ++k) rq[k] = 0u;
          }
        }
      }
#pragma unroll
    for (int b = 0; b < kEpiBatch; ++b)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int i = i0 + b;
        const int64_t row = at.Row(i, h);
        if (row >= p.m) continue;
#pragma unroll
        for (int q = 0; q < kAccesses; ++q) {
          uint32_t o[kW];
#pragma unroll
          for (int k = 0; k < kW; ++k) {
            o[k] = tile.Combine(i, h, r[b][h][kW * q + k], t[i][h][kW * q + k]);
          }
          tile.Store(at, p, row, q, o);
        }
      }
  }
}

// The epilogue of one warp tile (acc: the contract's f32 sums, before alpha), with the widest
// accesses the policy has and the operands' alignment allows.
template <class Cfg, class Arch, class Epi>
__device__ __forceinline__ void EpilogueTile(const WarpAcc<Cfg>& acc, int64_t row_base,
                                             int col_base, const OutProjParams& p, float alpha) {
  if constexpr (Epi::kVec16) {
    if (p.vec16_epilogue) {
      StoreTile<Cfg, Arch, Epi, 4>(acc, row_base, col_base, p, alpha);
    } else {
      StoreTile<Cfg, Arch, Epi, 1>(acc, row_base, col_base, p, alpha);
    }
  } else {
    StoreTile<Cfg, Arch, Epi, 1>(acc, row_base, col_base, p, alpha);
  }
}

// Where a finished warp tile's epilogue runs (lowrank.cuh FinishWarpTile): here, in the consumer
// warp, from registers to global memory (every config but a staged one: staged_epilogue.cuh
// StagedSink).
struct InRegisterSink {
  template <class Cfg, class Arch, class Epi>
  __device__ __forceinline__ void Run(const WarpAcc<Cfg>& acc, int64_t row_base, int col_base,
                                      const OutProjParams& p, float alpha) const {
    EpilogueTile<Cfg, Arch, Epi>(acc, row_base, col_base, p, alpha);
  }
};

}  // namespace h3::kernels

#endif  // H3_KERNELS_EPILOGUE_POLICY_CUH_
