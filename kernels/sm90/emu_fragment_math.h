#ifndef H3_KERNELS_SM90_EMU_FRAGMENT_MATH_H_
#define H3_KERNELS_SM90_EMU_FRAGMENT_MATH_H_

// Hopper validation only. Bit and index math of the exact emulation of the SM120 block-scaled
// mma.m16n8k64 by bf16 mma.m16n8k16 / wgmma (sm_90a): how e2m1 nibbles of the SM120 fragments map
// onto bf16 operands and which scale byte applies, shared by the sm_90 device code and its CPU
// tests. The SM120 product path never includes this file.

#include <cstdint>

#include "core/formats.h"
#include "core/host_device.h"

namespace h3::kernels::sm90 {

// ---- sm_90 emulation of one m16n8k64 block-scaled MMA by four bf16 m16n8k16 MMAs. ----
// Thread t holds k = 8t..8t+7 (word 0 / words a0,a1) and 32+8t..32+8t+7 (word 1 / a2,a3) for
// both A and B. Emulated MMA s (0..3) takes byte pair p = 2*(s&1)+q of word s>>1: q = 0 fills
// the bf16 slots k 2t,2t+1 (A regs 0/1, B reg 0), q = 1 the slots k 2t+8,2t+9 (A regs 2/3,
// B reg 1), low nibble in the low half. A and B use the same map from bf16 slot to physical k,
// and over t = 0..3 each MMA s covers 16 distinct k, so the four MMAs sum all 64 products.
H3_HD int EmuWordA(int s, int row_half) { return 2 * (s >> 1) + row_half; }  // a[] index
H3_HD int EmuWordB(int s) { return s >> 1; }                                 // b[] index
H3_HD int EmuPair(int s, int q) { return 2 * (s & 1) + q; }
// Block (16-k group, 0..3) of the scale that applies to a word: word half h (k < 32 or >= 32).
H3_HD int EmuScaleByte(int t, int half) { return 2 * half + (t >> 1); }

// bf16x2 bits of the two e2m1 codes of byte p of `word` (low nibble -> low half), each the
// code's value times 2^-126: S EEM -> sign at bit 15, EEM at bits 6..8. For E >= 1 that is
// exponent E, mantissa M: 2^(E-127)(1+M/2) = v * 2^-126; for E = 0 the bf16 subnormal
// M/2 * 2^-126 = v * 2^-126 too. Exact, no table.
H3_HD uint32_t E2m1PairBf16Enc(uint32_t word, int p) {
  const uint32_t b = (word >> (8 * p)) & 0xFFu;
  const uint32_t z = (b & 0xFu) | ((b & 0xF0u) << 12);  // nibbles at bits 0..3 and 16..19
  return ((z << 6) & 0x01C001C0u) | ((z << 12) & 0x80008000u);
}

// PTX prmt.b32 (default mode): byte i of the result is byte (sel >> 4i) & 7 of {b, a} (a = bytes
// 0..3), or, when bit 3 of that selector nibble is set, that byte's msb replicated.
H3_HD uint32_t Prmt(uint32_t a, uint32_t b, uint32_t sel) {
#if defined(__CUDA_ARCH__)
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(sel));
  return d;
#else
  const uint64_t src = (static_cast<uint64_t>(b) << 32) | a;
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t nib = (sel >> (4 * i)) & 0xFu;
    uint32_t byte = static_cast<uint32_t>(src >> (8 * (nib & 7u))) & 0xFFu;
    if (nib & 8u) byte = (byte & 0x80u) ? 0xFFu : 0u;
    d |= byte << (8 * i);
  }
  return d;
#endif
}

// The same encoding in 3 instructions per pair, from the word's even and odd nibbles
// (even = w & 0x0F0F0F0F, odd = (w >> 4) & 0x0F0F0F0F, computed once per word): one prmt puts
// the pair's codes at bits 0..3 and 16..19 (the zero bytes are the sign-replicated msb of a
// byte <= 0x0F), one multiply by 0x1040 = (z << 6) + (z << 12) (disjoint bits, no carries),
// one mask keeps EEM << 6 and S << 12.
H3_HD uint32_t E2m1PairBf16EncSplit(uint32_t even, uint32_t odd, int p) {
  const uint32_t sel = p | ((8u + p) << 4) | ((4u + p) << 8) | ((12u + p) << 12);
  const uint32_t z = Prmt(even, odd, sel);
  return (z * 0x1040u) & 0x81C081C0u;
}

// The sm_90 staged emulation (staged_mainloop.cuh) pairs nibbles j and j + 4 of a word
// (16 bits apart) instead of a byte's two nibbles: bf16x2 of E2m1PairBf16Enc's encoding of
// nibble j (low half) and nibble j + 4 (high half), j = 0..3, in 3 instructions: one mask
// isolates the two nibbles, one multiply makes two shifted copies with disjoint bits (no
// carries): z * 0x1040 = (z << 6) + (z << 12) for nibbles at bits 0..3 / 16..19,
// z * 0x104 = (z << 2) + (z << 8) for nibbles at bits 4..7 / 20..23, and one mask keeps EEM at
// bits 6..8 and S at bit 15 of each half. `hi` must be word >> 8 (computed once per word) for
// j = 2, 3.
H3_HD uint32_t E2m1NibblePairBf16Enc(uint32_t word, uint32_t hi, int j) {
  const uint32_t src = j < 2 ? word : hi;
  return (j & 1) ? ((src & 0x00F000F0u) * 0x0104u) & 0x81C081C0u
                 : ((src & 0x000F000Fu) * 0x1040u) & 0x81C081C0u;
}

// bf16 bits of ue4m3 * 2^exp2 (exact: <= 4 significant bits, so truncating the f32 is exact;
// a NaN stays NaN). exp2 in [0, 118] keeps 448 * 2^exp2 finite.
H3_HD uint32_t Ue4m3ToBf16Scaled(uint32_t byte, int exp2) {
  const float f = Ue4m3ToF32(byte) * F32FromBits(static_cast<uint32_t>(127 + exp2) << 23);
  return F32Bits(f) >> 16;
}
// The fragment-level emulation dequantizes each operand as code * 2^-126 times
// scale * 2^118, i.e. value * scale * 2^-8 (normal bf16: >= 2^-18, <= 2688 * 2^-8), so every
// product is the exact product times 2^-16 and the f32 accumulator holds acc * 2^-16 exactly
// scaled (power of two, far from under/overflow): the epilogue multiplies by 2^16.
inline constexpr int kEmuScaleExp2 = 118;
inline constexpr float kEmuAccScale = 65536.0f;

}  // namespace h3::kernels::sm90

#endif  // H3_KERNELS_SM90_EMU_FRAGMENT_MATH_H_
