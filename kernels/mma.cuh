#ifndef H3_KERNELS_MMA_CUH_
#define H3_KERNELS_MMA_CUH_

// The block-scaled MMA of the SM120 main loop, D = C + sum_b SFA(m,b) SFB(n,b) sum_{k in b}
// A[m,k] B[k,n] (docs/contract.md section 7), with one register interface:
//   a[4] (16x64 e2m1), b[2] (64x8 e2m1), c[4] (16x8 f32), sfa/sfb (ue4m3 x4, lanes 4g/4g+1/4g).
// sm_120f: the native mma.sync kind::mxf4nvf4 instruction. The sm_90a validation build of the
// same kernel source substitutes an exact emulation (kernels/sm90/mma_emulated.cuh); that
// substitution is made here and nowhere else in the SM120 path.

#include <cstdint>

#include "kernels/warp_acc.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1200
#define H3_NATIVE_BLOCK_SCALED_MMA 1
#else
#define H3_NATIVE_BLOCK_SCALED_MMA 0
#include "kernels/sm90/mma_emulated.cuh"  // Hopper validation build only
#endif

namespace h3::kernels {

inline constexpr bool kNativeBlockScaledMma = H3_NATIVE_BLOCK_SCALED_MMA != 0;

__device__ __forceinline__ void MmaBlockScaledNative(float (&c)[4], const uint32_t (&a)[4],
                                                     const uint32_t (&b)[2], uint32_t sfa,
                                                     uint32_t sfb) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1200
  // Selectors byte-id 0 / thread-id 0 for both scale operands (docs/contract.md section 7).
  asm volatile(
      "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X"
      ".f32.e2m1.e2m1.f32.ue4m3 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3}, "
      "%10, {0, 0}, %11, {0, 0};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(sfa), "r"(sfb));
#else
  __trap();  // never called off sm_120f
#endif
}

// One block-scaled MMA: native on sm_120f, the instruction-level emulation elsewhere.
__device__ __forceinline__ void MmaBlockScaled(float (&c)[4], const uint32_t (&a)[4],
                                               const uint32_t (&b)[2], uint32_t sfa, uint32_t sfb) {
#if H3_NATIVE_BLOCK_SCALED_MMA
  MmaBlockScaledNative(c, a, b, sfa, sfb);
#else
  sm90::MmaBlockScaledEmulated(c, a, b, sfa, sfb);
#endif
}

// A warp tile's MMAs of one k-step for the kNJ n8 fragments from j0: kMFrags x kNJ
// block-scaled m16n8k64.
template <class Cfg, int kNJ>
__device__ __forceinline__ void WarpTileMma(WarpAcc<Cfg>& acc, int j0,
                                            const uint32_t (&a)[Cfg::kMFrags][4],
                                            const uint32_t (&b)[kNJ][2],
                                            const uint32_t (&sfa)[Cfg::kMFrags],
                                            const uint32_t (&sfb)[kNJ]) {
#if H3_NATIVE_BLOCK_SCALED_MMA
#pragma unroll
  for (int i = 0; i < Cfg::kMFrags; ++i) {
#pragma unroll
    for (int j = 0; j < kNJ; ++j) {
      MmaBlockScaledNative(acc.v[i][j0 + j], a[i], b[j], sfa[i], sfb[j]);
    }
  }
#else
  sm90::WarpTileMmaEmulated<Cfg, kNJ>(acc, j0, a, b, sfa, sfb);
#endif
}

}  // namespace h3::kernels

#endif  // H3_KERNELS_MMA_CUH_
