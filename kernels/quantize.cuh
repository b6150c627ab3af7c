#ifndef H3_KERNELS_QUANTIZE_CUH_
#define H3_KERNELS_QUANTIZE_CUH_

// Block-16 NVFP4 quantization of contract section 3, in its exact operation order. Every f32
// operation is written with an explicit rounding intrinsic so nvcc cannot contract or reorder
// it; the build never uses fast-math or FTZ.

#include <cstdint>

#include "kernels/fragment_math.h"

namespace h3::kernels {

// e4m3(v): PTX cvt.rn.satfinite.e4m3x2.f32 (sm_89+): nearest-even, |v| >= 448 and Inf -> 448,
// NaN -> 0x7F (contract section 2, measured bit-identical to CUDA's software model). The
// first source goes to the high byte.
__device__ __forceinline__ uint32_t F32ToE4m3(float v) {
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(v));
  return r & 0xFFu;
}

// e2m1(v) in software, bit-identical to the contract: nearest-even on {0, .5, 1, 1.5, 2, 3, 4,
// 6} with ties 0.25->0, 0.75->1, 1.25->1, 1.75->2, 2.5->2, 3.5->4, 5->4 (the tie goes to the
// even mantissa), saturating, sign kept (also for zero results), NaN -> 0x7. The magnitude
// code is the number of rounding thresholds |v| passes (> at a tie that rounds down,
// >= at one that rounds up).
__host__ __device__ __forceinline__ uint32_t F32ToE2m1Soft(float v) {
  const uint32_t bits = F32ToBits(v);
  const float a = BitsToF32(bits & 0x7FFFFFFFu);
  if (!(a == a)) return 0x7u;
  const uint32_t mag = (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) +
                       (a >= 3.5f) + (a > 5.0f);
  return mag | ((bits >> 28) & 0x8u);
}

// Two codes as one byte: `even` in the low nibble (contract section 3.6).
__device__ __forceinline__ uint32_t F32x2ToE2m1Byte(float even, float odd) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1200
  // cvt.rn.satfinite.e2m1x2.f32 d, a, b: a -> high nibble, b -> low nibble (sm_120a). Its NaN
  // result is undocumented: NaN nibbles are forced to 0x7 explicitly (contract section 2).
  uint16_t r;
  asm("{\n .reg .b8 t;\n cvt.rn.satfinite.e2m1x2.f32 t, %1, %2;\n cvt.u16.u8 %0, t;\n}"
      : "=h"(r)
      : "f"(odd), "f"(even));
  uint32_t byte = r & 0xFFu;
  if (even != even) byte = (byte & 0xF0u) | 0x07u;
  if (odd != odd) byte = (byte & 0x0Fu) | 0x70u;
  return byte;
#else
  return F32ToE2m1Soft(even) | (F32ToE2m1Soft(odd) << 4);
#endif
}

// RN(1/6) = 0x3E2AAAAB.
inline constexpr float kRcp6 = 0x1.555556p-3f;

struct QuantParams {
  float gs_rcp6;  // gs (x) RN(1/6)
  float rcp_gs;   // 1 (/) gs
};
__device__ __forceinline__ QuantParams MakeQuantParams(float gs) {
  return {__fmul_rn(gs, kRcp6), __fdiv_rn(1.0f, gs)};
}

// One block of 16 values: returns the UE4M3 scale byte, writes 8 packed code bytes (as 2 words).
__device__ __forceinline__ uint32_t QuantizeBlock16(const float (&x)[16], const QuantParams& qp,
                                                    uint32_t (&packed)[2]) {
  // 1. amax, NaN-ignoring (fmaxf returns the non-NaN operand; NaN only if all are NaN).
  float amax = fabsf(x[0]);
#pragma unroll
  for (int i = 1; i < 16; ++i) amax = fmaxf(amax, fabsf(x[i]));
  // 2.-3. sfv = amax (x) (gs (x) RN(1/6)); sf = e4m3(sfv); sfd = f32(sf).
  const uint32_t sf = F32ToE4m3(__fmul_rn(amax, qp.gs_rcp6));
  const float sfd = Ue4m3ToF32(sf);
  // 4. os = 0 if amax == 0 else fminf(1 (/) (sfd (x) (1 (/) gs)), FLT_MAX).
  const float os =
      (amax == 0.0f) ? 0.0f : fminf(__fdiv_rn(1.0f, __fmul_rn(sfd, qp.rcp_gs)), 3.402823466e38f);
  // 5.-6. code_i = e2m1(x_i (x) os), byte j = code(2j) | code(2j+1) << 4.
#pragma unroll
  for (int w = 0; w < 2; ++w) {
    uint32_t word = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int i = 8 * w + 2 * j;
      word |= F32x2ToE2m1Byte(__fmul_rn(x[i], os), __fmul_rn(x[i + 1], os)) << (8 * j);
    }
    packed[w] = word;
  }
  return sf;
}

// bf16 pairs (one 32-bit word, low half first) to f32: exact.
__device__ __forceinline__ void Bf16x2ToF32(uint32_t w, float& lo, float& hi) {
  lo = __uint_as_float(w << 16);
  hi = __uint_as_float(w & 0xFFFF0000u);
}

// Quantizes one 16-element block at `src` (32 bytes, 16-byte aligned) into codes[0..7], *sf.
__device__ __forceinline__ void QuantizeBlockFromGlobal(const uint16_t* __restrict__ src,
                                                        const QuantParams& qp,
                                                        uint8_t* __restrict__ codes,
                                                        uint8_t* __restrict__ sf) {
  const uint4 v0 = __ldcs(reinterpret_cast<const uint4*>(src));  // streamed: read once
  const uint4 v1 = __ldcs(reinterpret_cast<const uint4*>(src) + 1);
  float x[16];
  Bf16x2ToF32(v0.x, x[0], x[1]);
  Bf16x2ToF32(v0.y, x[2], x[3]);
  Bf16x2ToF32(v0.z, x[4], x[5]);
  Bf16x2ToF32(v0.w, x[6], x[7]);
  Bf16x2ToF32(v1.x, x[8], x[9]);
  Bf16x2ToF32(v1.y, x[10], x[11]);
  Bf16x2ToF32(v1.z, x[12], x[13]);
  Bf16x2ToF32(v1.w, x[14], x[15]);
  uint32_t packed[2];
  const uint32_t s = QuantizeBlock16(x, qp, packed);
  *reinterpret_cast<uint2*>(codes) = make_uint2(packed[0], packed[1]);
  *sf = static_cast<uint8_t>(s);
}

}  // namespace h3::kernels

#endif  // H3_KERNELS_QUANTIZE_CUH_
