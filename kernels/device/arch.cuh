#ifndef H3_KERNELS_ARCH_CUH_
#define H3_KERNELS_ARCH_CUH_

// The product's architecture policy, Sm120, and the check that a device pass has a kernel target.
// The kernel templates (OutProjKernel<Cfg, Arch, ...>) take the policy as a type and call only its
// members for what differs between targets; no other product header branches on the
// architecture. The targets (this policy, and the Hopper validation's sm90::Sm90Emulated of
// kernels/sm90/arch.cuh) are listed in kernels/launch/targets.cuh, the one header that includes
// kernels/sm90/, which also picks TargetArch for the pass being compiled.
//
//   Sm120               the product: sm_120f, every SM12x part (RTX 50xx, RTX PRO 6000, GB10).
// A device pass for any architecture other than SM12x or sm_90 (sm_100, sm_89, ...) does not
// compile.
//
// A policy's members:
//   kCompiledHere        true in the nvcc pass of its target: a kernel instantiated for another
//                        pass compiles to a trap (the launcher picks by device, launch.cuh)
//   kNativeMma           the MMA is the SM120 instruction itself
//   Mma, WarpTileMma     one block-scaled m16n8k64 / one k-step of a warp tile (mma.cuh)
//   E2m1Byte             two e2m1 codes as a byte (quantize.cuh)
//   QuantizeBlock        one 16-element block from 8 words of bf16 pairs (quantize.cuh)
//   UnscaleAcc           an accumulator to the contract's f32 sum (identity on SM120)

#include <cstdint>
#include <type_traits>

#include "kernels/device/mma.cuh"
#include "kernels/device/quantize.cuh"
#include "kernels/device/warp_acc.cuh"

namespace h3::kernels {

// The device passes with a kernel target: SM12x (__CUDA_ARCH__ 1200..1299; sm_120f is 1200) and
// sm_90 / sm_90a (900). Any other pass is a compile-time error below: an sm_100 or sm_89 build
// must not run the Hopper emulation unnoticed.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1200 && __CUDA_ARCH__ < 1300
#define H3_KERNELS_SM12X_PASS 1
#else
#define H3_KERNELS_SM12X_PASS 0
#endif

struct Sm120 {
#if H3_KERNELS_SM12X_PASS
  static constexpr bool kCompiledHere = true;
#else
  static constexpr bool kCompiledHere = false;
#endif
  static constexpr bool kNativeMma = true;

  __device__ __forceinline__ static void Mma(float (&c)[4], const uint32_t (&a)[4],
                                             const uint32_t (&b)[2], uint32_t sfa, uint32_t sfb) {
    MmaBlockScaledNative(c, a, b, sfa, sfb);
  }
  template <class Cfg, int kNJ>
  __device__ __forceinline__ static void WarpTileMma(WarpAcc<Cfg>& acc, int j0,
                                                     const uint32_t (&a)[Cfg::kMFrags][4],
                                                     const uint32_t (&b)[kNJ][2],
                                                     const uint32_t (&sfa)[Cfg::kMFrags],
                                                     const uint32_t (&sfb)[kNJ]) {
    WarpTileMmaNative<Cfg, kNJ>(acc, j0, a, b, sfa, sfb);
  }
  __device__ __forceinline__ static uint32_t E2m1Byte(float even, float odd) {
    return F32x2ToE2m1ByteNative(even, odd);
  }
  template <class OsSource>
  __device__ __forceinline__ static uint32_t QuantizeBlock(const uint32_t (&w)[8],
                                                           const OsSource& os_src,
                                                           uint32_t (&packed)[2]) {
    return QuantizeBlockWords<Sm120>(w, os_src, packed);
  }
  __device__ __forceinline__ static float UnscaleAcc(float acc) { return acc; }
};

// Any device pass other than SM12x and sm_90 / sm_90a is an error, instantiated with the pass's
// __CUDA_ARCH__ so that the error names it.
#if defined(__CUDA_ARCH__) && !H3_KERNELS_SM12X_PASS && __CUDA_ARCH__ != 900
template <int kCudaArch>
struct NoKernelTarget {
  static_assert(kCudaArch == 900 || (kCudaArch >= 1200 && kCudaArch < 1300),
                "minimax_h3_nvfp4: no kernel target for this __CUDA_ARCH__ (SM12x native, sm_90 "
                "validation only)");
};
template struct NoKernelTarget<__CUDA_ARCH__>;
#endif
#undef H3_KERNELS_SM12X_PASS

}  // namespace h3::kernels

#endif  // H3_KERNELS_ARCH_CUH_
