#ifndef H3_KERNELS_SM90_ARCH_CUH_
#define H3_KERNELS_SM90_ARCH_CUH_

// Hopper validation only: the sm_90a architecture policy of the fused kernel (the SM120 one is
// kernels/device/arch.cuh; kernels/launch/targets.cuh registers both). It runs the SM120 kernel's own code with
// the two instructions sm_90 lacks replaced by exact emulations: the block-scaled mma.sync
// (mma_emulated.cuh) and the e2m1 conversion (cvt_emulated.h), plus a faster exact quantizer
// path; its f32 accumulators hold acc * 2^-16 (kEmuAccScale), undone before the epilogue.

#include <cstdint>

#include "kernels/device/quantize.cuh"
#include "kernels/sm90/cvt_emulated.h"
#include "kernels/sm90/mma_emulated.cuh"
#include "kernels/device/warp_acc.cuh"

namespace h3::kernels::sm90 {

// The sm_90 fast path of steps 5.-6. for the 8 elements in bf16 words w[0..3], valid when no
// element is NaN and os >= +0 (the caller checks). Then the sign of x_i (x) os is the sign of x_i
// (also for zero and infinite products), |x_i (x) os| = |x_i| (x) os (round-to-nearest is
// symmetric), and the magnitude code is E2m1MagnitudeMagic's minimum of lines.
__device__ __forceinline__ uint32_t EncodeE2m1x8FastSm90(const uint32_t (&w)[4], float os) {
  // Magnitudes, Horner over the 8 patterns 0x4B000000 + code_i: sum code_i 16^i plus
  // 0x4B000000 (16^0 + 16^1) = 0xFB000000 mod 2^32 (16^i 0x4B000000 vanishes for i >= 2).
  uint32_t mags = 0;
#pragma unroll
  for (int j = 3; j >= 0; --j) {
    float lo, hi;
    Bf16x2ToF32(w[j], lo, hi);
    mags = mags * 16u + __float_as_uint(sm90::E2m1MagnitudeMagic(__fmul_rn(fabsf(hi), os)));
    mags = mags * 16u + __float_as_uint(sm90::E2m1MagnitudeMagic(__fmul_rn(fabsf(lo), os)));
  }
  mags += 0x05000000u;  // - 0xFB000000
  // Signs: bf16 sign bits are bits 15 (element 2j) and 31 (2j+1) of w[j]; byte j of the result
  // wants them at bits 3 and 7. Gather byte 1 (even) and byte 3 (odd) of each word.
  const uint32_t w01 = __byte_perm(w[0], w[1], 0x7531);  // [w0.b1, w0.b3, w1.b1, w1.b3]
  const uint32_t w23 = __byte_perm(w[2], w[3], 0x7531);
  const uint32_t even = __byte_perm(w01, w23, 0x6420);  // [w0.b1, w1.b1, w2.b1, w3.b1]
  const uint32_t odd = __byte_perm(w01, w23, 0x7531);   // [w0.b3, w1.b3, w2.b3, w3.b3]
  return mags | (odd & 0x80808080u) | ((even >> 4) & 0x08080808u);
}

// max.NaN.f32 (sm_80+): the maximum, NaN if either operand is NaN.
__device__ __forceinline__ float MaxNaN(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}


struct Sm90Emulated {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900
  static constexpr bool kCompiledHere = true;
#else
  static constexpr bool kCompiledHere = false;
#endif
  static constexpr bool kNativeMma = false;

  __device__ __forceinline__ static void Mma(float (&c)[4], const uint32_t (&a)[4],
                                             const uint32_t (&b)[2], uint32_t sfa, uint32_t sfb) {
    MmaBlockScaledEmulated(c, a, b, sfa, sfb);
  }
  // The product's k-step (all kNJ B fragments loaded at once), emulated kSub B fragments at a
  // time: dequantizing all eight of a 64 x 64 warp tile's B fragments at once would take 64
  // more registers. Every accumulator still receives its MMAs in the same order: the grouping
  // changes no result.
  template <class Cfg, int kNJ>
  __device__ __forceinline__ static void WarpTileMma(WarpAcc<Cfg>& acc, int j0,
                                                     const uint32_t (&a)[Cfg::kMFrags][4],
                                                     const uint32_t (&b)[kNJ][2],
                                                     const uint32_t (&sfa)[Cfg::kMFrags],
                                                     const uint32_t (&sfb)[kNJ]) {
    constexpr int kSub = kNJ <= 4 ? kNJ : 2;
    static_assert(kNJ % kSub == 0, "whole sub-groups of B fragments");
#pragma unroll
    for (int js = 0; js < kNJ; js += kSub) {
      uint32_t bs[kSub][2], ss[kSub];
#pragma unroll
      for (int j = 0; j < kSub; ++j) {
        bs[j][0] = b[js + j][0];
        bs[j][1] = b[js + j][1];
        ss[j] = sfb[js + j];
      }
      WarpTileMmaEmulated<Cfg, kSub>(acc, j0 + js, a, bs, sfa, ss);
    }
  }
  __device__ __forceinline__ static uint32_t E2m1Byte(float even, float odd) {
    return F32ToE2m1Soft(even) | (F32ToE2m1Soft(odd) << 4);
  }
  // A NaN-propagating amax equals the contract's NaN-ignoring one when the block has no NaN,
  // which is also the fast path's condition; any other block takes the contract's steps.
  template <class OsSource>
  __device__ __forceinline__ static uint32_t QuantizeBlock(const uint32_t (&w)[8],
                                                           const OsSource& os_src,
                                                           uint32_t (&packed)[2]) {
    float x[16];
#pragma unroll
    for (int j = 0; j < 8; ++j) Bf16x2ToF32(w[j], x[2 * j], x[2 * j + 1]);
    float amax = fabsf(x[0]);
#pragma unroll
    for (int i = 1; i < 16; ++i) amax = MaxNaN(amax, fabsf(x[i]));
    float os;
    const uint32_t s = BlockScale(amax, os_src, &os);
    // os >= +0 for every valid gs (finite, > 0); the sign check only keeps an invalid gs (its
    // outputs are unspecified, contract section 9) on the exact path.
    if (amax == amax && !(__float_as_uint(os) >> 31)) {
      packed[0] = EncodeE2m1x8FastSm90(reinterpret_cast<const uint32_t(&)[4]>(w[0]), os);
      packed[1] = EncodeE2m1x8FastSm90(reinterpret_cast<const uint32_t(&)[4]>(w[4]), os);
      return s;
    }
    return QuantizeBlock16<Sm90Emulated>(x, os_src, packed);
  }
  // The emulated MMAs accumulate acc * 2^-16 (exact scaling): undone before the epilogue.
  __device__ __forceinline__ static float UnscaleAcc(float acc) {
    return __fmul_rn(acc, kEmuAccScale);
  }
};

}  // namespace h3::kernels::sm90

#endif  // H3_KERNELS_SM90_ARCH_CUH_
