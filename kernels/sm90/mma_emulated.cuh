#ifndef H3_KERNELS_SM90_MMA_EMULATED_CUH_
#define H3_KERNELS_SM90_MMA_EMULATED_CUH_

// Hopper validation only: exact emulations of the SM120 block-scaled mma.m16n8k64
// (contract section 7) from the very registers the SM120 main loop loads, by bf16 mma.m16n8k16
// (see emu_fragment_math.h for the k permutation and why it is exact). Two granularities:
//  - MmaBlockScaledEmulated: one instruction, scales fetched from their supplying lanes (the
//    reference, used by the instruction-level tests);
//  - WarpTileMmaEmulated: a warp tile's k-step, each A and B fragment dequantized once and reused
//    across the tile (the faithful sm_90 main loop). Values are code * scale * 2^-8, so the f32
//    accumulator holds acc * 2^-16 exactly (kEmuAccScale).

#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/device/mma.cuh"  // MmaBf16
#include "kernels/sm90/emu_fragment_math.h"
#include "kernels/device/warp_acc.cuh"

namespace h3::kernels::sm90 {

// bf16x2 multiply, round-to-nearest (exact here: products have <= 6 significant bits). PTX
// mul.bf16x2 has no .ftz: subnormal inputs (the code-1 encoding 2^-127) are honoured.
__device__ __forceinline__ uint32_t MulBf16x2(uint32_t x, uint32_t y) {
  uint32_t d;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(x), "r"(y));
  return d;
}

// The instruction-level emulation (the reference for the sm_90 path): the same registers,
// scales fetched from their supplying lanes, each nibble dequantized to its exact value
// code * scale in bf16, then four bf16 MMAs accumulating straight into c.
__device__ __forceinline__ void MmaBlockScaledEmulated(float (&c)[4], const uint32_t (&a)[4],
                                                       const uint32_t (&b)[2], uint32_t sfa,
                                                       uint32_t sfb) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const uint32_t sfa_lo = __shfl_sync(0xFFFFFFFFu, sfa, 4 * g);      // row g
  const uint32_t sfa_hi = __shfl_sync(0xFFFFFFFFu, sfa, 4 * g + 1);  // row g + 8
  const uint32_t sfb_g = __shfl_sync(0xFFFFFFFFu, sfb, 4 * g);       // column g
  const uint32_t two126 = 0x7E807E80u;                               // bf16x2 (2^126, 2^126)
  uint32_t fa[2][2], fb[2];  // [row half][k half] / [k half] bf16x2 scales
  for (int h = 0; h < 2; ++h) {
    const uint32_t sb = (sfb_g >> (8 * EmuScaleByte(t, h))) & 0xFFu;
    fb[h] = Ue4m3ToBf16Scaled(sb, 0) * 0x10001u;
    for (int r = 0; r < 2; ++r) {
      const uint32_t w = r ? sfa_hi : sfa_lo;
      fa[r][h] = Ue4m3ToBf16Scaled((w >> (8 * EmuScaleByte(t, h))) & 0xFFu, 0) * 0x10001u;
    }
  }
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    const int half = s >> 1;
    uint32_t as[4], bs[2];
#pragma unroll
    for (int q = 0; q < 2; ++q) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const uint32_t enc = E2m1PairBf16Enc(a[EmuWordA(s, r)], EmuPair(s, q));
        as[r + 2 * q] = MulBf16x2(MulBf16x2(enc, two126), fa[r][half]);
      }
      const uint32_t encb = E2m1PairBf16Enc(b[EmuWordB(s)], EmuPair(s, q));
      bs[q] = MulBf16x2(MulBf16x2(encb, two126), fb[half]);
    }
    MmaBf16(c, as, bs);
  }
}

// Two ue4m3 scales (bytes b0, b1 of `word`, selected by prmt selector `sel`) to duplicated
// bf16x2 words of scale * 2^kEmuScaleExp2, branch-free: cvt.rn.f16x2.e4m3x2 is exact (sm_89+;
// subnormal e4m3 become normal f16, 0x7F becomes NaN), f16 -> f32 exact, the power-of-two
// multiply exact, and truncating to bf16 exact (<= 4 significant bits; NaN stays NaN).
__device__ __forceinline__ void ScalePairToBf16x2(uint32_t word, uint32_t sel, uint32_t& f0,
                                                  uint32_t& f1) {
  const uint32_t pair = Prmt(word, 0u, sel);  // 2 e4m3 bytes in the low half
  uint32_t h2;
  asm("{\n .reg .b16 lo, hi;\n mov.b32 {lo, hi}, %1;\n cvt.rn.f16x2.e4m3x2 %0, lo;\n}"
      : "=r"(h2)
      : "r"(pair));
  const float p2 = F32FromBits(static_cast<uint32_t>(127 + kEmuScaleExp2) << 23);
  const float s0 =
      __fmul_rn(__half2float(__ushort_as_half(static_cast<unsigned short>(h2 & 0xFFFFu))), p2);
  const float s1 =
      __fmul_rn(__half2float(__ushort_as_half(static_cast<unsigned short>(h2 >> 16))), p2);
  f0 = Prmt(__float_as_uint(s0), 0u, 0x3232u);  // (bf16, bf16) of s0
  f1 = Prmt(__float_as_uint(s1), 0u, 0x3232u);
}

// ---- Fragment-granularity emulation (the sm_90 main loop): dequantize each A and B fragment
// once per k-step and reuse it across the warp tile. Values are code * scale * 2^-8 (see
// kEmuScaleExp2), so the accumulator holds acc * 2^-16.
// A fragment -> the four bf16 MMAs' A operands: out[s][0..3].
__device__ __forceinline__ void DequantAFragment(const uint32_t (&a)[4], uint32_t sfa,
                                                 uint32_t (&out)[4][4]) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const uint32_t sfa_lo = __shfl_sync(0xFFFFFFFFu, sfa, 4 * g);
  const uint32_t sfa_hi = __shfl_sync(0xFFFFFFFFu, sfa, 4 * g + 1);
  // Bytes EmuScaleByte(t, 0) and EmuScaleByte(t, 1) of a row's scale word.
  const uint32_t sel = static_cast<uint32_t>(EmuScaleByte(t, 0) | (EmuScaleByte(t, 1) << 4));
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    uint32_t f[2];
    ScalePairToBf16x2(r ? sfa_hi : sfa_lo, sel, f[0], f[1]);
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const uint32_t word = a[2 * half + r];  // == a[EmuWordA(s, r)] for s in this half
      const uint32_t even = word & 0x0F0F0F0Fu, odd = (word >> 4) & 0x0F0F0F0Fu;
#pragma unroll
      for (int s = 2 * half; s < 2 * half + 2; ++s) {
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          out[s][r + 2 * q] = MulBf16x2(E2m1PairBf16EncSplit(even, odd, EmuPair(s, q)), f[half]);
        }
      }
    }
  }
}
// B fragment -> the four bf16 MMAs' B operands: out[s][0..1].
__device__ __forceinline__ void DequantBFragment(const uint32_t (&b)[2], uint32_t sfb,
                                                 uint32_t (&out)[4][2]) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const uint32_t sfb_g = __shfl_sync(0xFFFFFFFFu, sfb, 4 * g);
  const uint32_t sel = static_cast<uint32_t>(EmuScaleByte(t, 0) | (EmuScaleByte(t, 1) << 4));
  uint32_t f[2];
  ScalePairToBf16x2(sfb_g, sel, f[0], f[1]);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const uint32_t word = b[half];  // == b[EmuWordB(s)] for s in this half
    const uint32_t even = word & 0x0F0F0F0Fu, odd = (word >> 4) & 0x0F0F0F0Fu;
#pragma unroll
    for (int s = 2 * half; s < 2 * half + 2; ++s) {
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        out[s][q] = MulBf16x2(E2m1PairBf16EncSplit(even, odd, EmuPair(s, q)), f[half]);
      }
    }
  }
}

// The faithful sm_90 main loop's k-step of a warp tile's kNJ n8 fragments from j0: dequantize each
// fragment once (B for the group, A one m16 fragment at a time), then 4 bf16 MMAs per
// block-scaled MMA.
template <class Cfg, int kNJ>
__device__ __forceinline__ void WarpTileMmaEmulated(WarpAcc<Cfg>& acc, int j0,
                                                    const uint32_t (&a)[Cfg::kMFrags][4],
                                                    const uint32_t (&b)[kNJ][2],
                                                    const uint32_t (&sfa)[Cfg::kMFrags],
                                                    const uint32_t (&sfb)[kNJ]) {
  uint32_t bq[kNJ][4][2];
#pragma unroll
  for (int j = 0; j < kNJ; ++j) DequantBFragment(b[j], sfb[j], bq[j]);
#pragma unroll
  for (int i = 0; i < Cfg::kMFrags; ++i) {
    uint32_t aq[4][4];
    DequantAFragment(a[i], sfa[i], aq);
    // s outer, j inner: consecutive MMAs write different accumulators (no dependency).
#pragma unroll
    for (int s = 0; s < 4; ++s) {
#pragma unroll
      for (int j = 0; j < kNJ; ++j) MmaBf16(acc.v[i][j0 + j], aq[s], bq[j][s]);
    }
  }
}

}  // namespace h3::kernels::sm90

#endif  // H3_KERNELS_SM90_MMA_EMULATED_CUH_
