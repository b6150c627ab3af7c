#ifndef H3_KERNELS_MMA_CUH_
#define H3_KERNELS_MMA_CUH_

// The SM120 block-scaled MMA, D = C + sum_b SFA(m,b) SFB(n,b) sum_{k in b} A[m,k] B[k,n]
// (docs/contract.md section 7), with one register interface:
//   a[4] (16x64 e2m1), b[2] (64x8 e2m1), c[4] (16x8 f32), sfa/sfb (ue4m3 x4, lanes 4g/4g+1/4g).
// The instruction exists on sm_120a / sm_120f only; the architecture policy (arch.cuh) calls it
// only in that pass, and the sm_90 validation build substitutes kernels/sm90/mma_emulated.cuh.

#include <cstdint>

#include "kernels/device/warp_acc.cuh"

namespace h3::kernels {

__device__ __forceinline__ void MmaBlockScaledNative(float (&c)[4], const uint32_t (&a)[4],
                                                     const uint32_t (&b)[2], uint32_t sfa,
                                                     uint32_t sfb) {
  // Selectors byte-id 0 / thread-id 0 for both scale operands (docs/contract.md section 7).
  asm volatile(
      "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X"
      ".f32.e2m1.e2m1.f32.ue4m3 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3}, "
      "%10, {0, 0}, %11, {0, 0};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(sfa), "r"(sfb));
}

// bf16 x bf16 -> f32 m16n8k16, native on SM120 and sm_90 (the sm_90 emulation of the block-scaled
// MMA and the low-rank branch, lowrank.cuh, use it). PTX mma.sync fragment layout for .bf16: A
// regs {row g, k 2t..}, {row g+8, k 2t..}, {row g, k 2t+8..}, {row g+8, k 2t+8..}; B regs
// {k 2t..}, {k 2t+8..} of column g; C/D row g + 8*(i>>1), column 2t + (i&1).
__device__ __forceinline__ void MmaBf16(float (&c)[4], const uint32_t (&a)[4],
                                        const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// A warp tile's MMAs of one k-step for the kNJ n8 fragments from j0: kMFrags x kNJ
// block-scaled m16n8k64.
template <class Cfg, int kNJ>
__device__ __forceinline__ void WarpTileMmaNative(WarpAcc<Cfg>& acc, int j0,
                                                  const uint32_t (&a)[Cfg::kMFrags][4],
                                                  const uint32_t (&b)[kNJ][2],
                                                  const uint32_t (&sfa)[Cfg::kMFrags],
                                                  const uint32_t (&sfb)[kNJ]) {
#pragma unroll
  for (int i = 0; i < Cfg::kMFrags; ++i) {
#pragma unroll
    for (int j = 0; j < kNJ; ++j) {
      MmaBlockScaledNative(acc.v[i][j0 + j], a[i], b[j], sfa[i], sfb[j]);
    }
  }
}

}  // namespace h3::kernels

#endif  // H3_KERNELS_MMA_CUH_
