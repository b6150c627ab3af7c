#ifndef H3_KERNELS_QUANTIZE_CUH_
#define H3_KERNELS_QUANTIZE_CUH_

// Block-16 NVFP4 quantization of contract section 3, in its exact operation order. Every f32
// operation is written with an explicit rounding intrinsic so nvcc cannot contract or reorder
// it; the build never uses fast-math or FTZ.

#include <cstdint>

#include "core/formats.h"

#if !(defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1200)
#include "kernels/sm90/cvt_emulated.h"  // no e2m1 cvt before sm_100a
#endif

namespace h3::kernels {

// e4m3(v): PTX cvt.rn.satfinite.e4m3x2.f32 (sm_89+): nearest-even, |v| >= 448 and Inf -> 448,
// NaN -> 0x7F (docs/contract.md section 2). Measured on an H200 bit-identical to the emulator's
// F32ToE4M3 over all 2^32 inputs (every NaN gives 0x7F). The first source goes to the high byte.
__device__ __forceinline__ uint32_t F32ToE4m3(float v) {
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(v));
  return r & 0xFFu;
}

// Two codes as one byte: `even` in the low nibble (docs/contract.md section 3.6).
__device__ __forceinline__ uint32_t F32x2ToE2m1Byte(float even, float odd) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1200
  // cvt.rn.satfinite.e2m1x2.f32 d, a, b: a -> high nibble, b -> low nibble (sm_120a/sm_120f). PTX
  // ISA 9.0 documents NaN -> +MAX_NORM (0x7) under .satfinite, but not the sign of a zero result,
  // and no SM120 device has run this here: both are forced to the contract explicitly (section
  // 2: NaN -> 0x7; a zero magnitude keeps the input's sign).
  uint16_t r;
  asm("{\n .reg .b8 t;\n cvt.rn.satfinite.e2m1x2.f32 t, %1, %2;\n cvt.u16.u8 %0, t;\n}"
      : "=h"(r)
      : "f"(odd), "f"(even));
  uint32_t byte = r & 0xFFu;
  if (even != even) byte = (byte & 0xF0u) | 0x07u;
  if (odd != odd) byte = (byte & 0x0Fu) | 0x70u;
  if ((byte & 0x07u) == 0) byte = (byte & 0xF0u) | ((__float_as_uint(even) >> 28) & 0x08u);
  if ((byte & 0x70u) == 0) byte = (byte & 0x0Fu) | ((__float_as_uint(odd) >> 24) & 0x80u);
  return byte;
#else
  return sm90::F32ToE2m1Soft(even) | (sm90::F32ToE2m1Soft(odd) << 4);
#endif
}

struct QuantParams {
  float gs_rcp6;  // gs (x) RN(1/6)
  float rcp_gs;   // 1 (/) gs
};
__device__ __forceinline__ QuantParams MakeQuantParams(float gs) {
  return {__fmul_rn(gs, kRcp6), __fdiv_rn(1.0f, gs)};
}

// Steps 2.-4. of one block from its amax (NaN-ignoring |x| maximum): returns the UE4M3 scale
// byte sf and sets *os, the factor every element of the block is multiplied by.
__device__ __forceinline__ uint32_t BlockScale(float amax, const QuantParams& qp, float* os) {
  // 2.-3. sfv = amax (x) (gs (x) RN(1/6)); sf = e4m3(sfv); sfd = f32(sf).
  const uint32_t sf = F32ToE4m3(__fmul_rn(amax, qp.gs_rcp6));
  const float sfd = Ue4m3ToF32(sf);
  // 4. os = 0 if amax == 0 else fminf(1 (/) (sfd (x) (1 (/) gs)), FLT_MAX).
  *os = (amax == 0.0f) ? 0.0f : fminf(__fdiv_rn(1.0f, __fmul_rn(sfd, qp.rcp_gs)), 3.402823466e38f);
  return sf;
}

// Steps 5.-6. for 8 consecutive elements (an even first index): code_i = e2m1(x_i (x) os), byte
// j = code(2j) | code(2j+1) << 4, bytes little-endian in the word.
__device__ __forceinline__ uint32_t EncodeE2m1x8(const float (&x)[8], float os) {
  uint32_t word = 0;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    word |= F32x2ToE2m1Byte(__fmul_rn(x[2 * j], os), __fmul_rn(x[2 * j + 1], os)) << (8 * j);
  }
  return word;
}

// One block of 16 values: returns the UE4M3 scale byte, writes 8 packed code bytes (as 2 words).
__device__ __forceinline__ uint32_t QuantizeBlock16(const float (&x)[16], const QuantParams& qp,
                                                    uint32_t (&packed)[2]) {
  // 1. amax, NaN-ignoring (fmaxf returns the non-NaN operand; NaN only if all are NaN).
  float amax = fabsf(x[0]);
#pragma unroll
  for (int i = 1; i < 16; ++i) amax = fmaxf(amax, fabsf(x[i]));
  float os;
  const uint32_t sf = BlockScale(amax, qp, &os);
  packed[0] = EncodeE2m1x8(reinterpret_cast<const float(&)[8]>(x[0]), os);
  packed[1] = EncodeE2m1x8(reinterpret_cast<const float(&)[8]>(x[8]), os);
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
