// CPU check of the kernel's fragment/scale index math (fragment_math.h) against the emulator's
// instruction model (emulator/mma_model.h): build a pipeline stage the way TMA/bulk copies
// lay it out, read fragments the way ldmatrix / LDS do, and compare with the model's packers;
// then run the sm_90 emulation's k permutation and dequantization in exact arithmetic.

#include "kernels/device/fragment_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "emulator/formats.h"
#include "emulator/mma_model.h"
#include "emulator/swizzle.h"
#include "kernels/sm90/cvt_emulated.h"
#include "kernels/sm90/emu_fragment_math.h"

namespace h3::kernels {
namespace {

using sm90::E2m1NibblePairBf16Enc;
using sm90::E2m1PairBf16Enc;
using sm90::E2m1PairBf16EncSplit;
using sm90::EmuPair;
using sm90::EmuScaleByte;
using sm90::EmuWordA;
using sm90::EmuWordB;
using sm90::kEmuAccScale;
using sm90::kEmuScaleExp2;
using sm90::Ue4m3ToBf16Scaled;

constexpr int kRows = 128, kK = 256, kRowBytes = kK / 2, kScaleCols = kK / 16;

struct Stage {
  std::vector<uint8_t> codes;   // global [kRows][kRowBytes]
  std::vector<uint8_t> scales;  // global linear [kRows][kScaleCols]
  std::vector<uint8_t> smem;    // 128B-swizzled copy
  std::vector<uint8_t> sfa;     // [kRows][16] linear (the activation-scale TMA box)
  std::vector<uint8_t> sfb;     // swizzled 128x4 groups of this 128-row tile
  std::vector<uint8_t> sw_scales;
};

Stage MakeStage(uint32_t seed) {
  Stage s;
  uint32_t x = seed;
  auto next = [&x] { return x = x * 1664525u + 1013904223u, static_cast<uint8_t>(x >> 24); };
  s.codes.resize(kRows * kRowBytes);
  for (auto& c : s.codes) c = next();
  s.scales.resize(kRows * kScaleCols);
  for (auto& c : s.scales) c = next() & 0x7E;
  s.smem.resize(kRows * kRowBytes);
  for (int r = 0; r < kRows; ++r)
    for (int ch = 0; ch < 8; ++ch)
      std::memcpy(&s.smem[Swizzle128Offset(r, ch)], &s.codes[r * kRowBytes + ch * 16], 16);
  s.sfa = s.scales;  // kScaleCols == 16: the TMA box is the linear row
  s.sw_scales = SwizzleScales(s.scales, kRows, kScaleCols);
  s.sfb = s.sw_scales;  // one 128-row group: the whole swizzled block, copied contiguously
  return s;
}

// ldmatrix.x4 semantics: thread T receives, for matrix q, word T%4 of the row whose address
// lane 8q + T/4 supplied.
void LdMatrixX4(const std::vector<uint8_t>& smem, const uint32_t addr[32], uint32_t out[32][4]) {
  for (int t = 0; t < 32; ++t)
    for (int q = 0; q < 4; ++q)
      std::memcpy(&out[t][q], &smem[addr[8 * q + t / 4] + 4 * (t % 4)], 4);
}

TEST(FragmentMathTest, AFragmentsMatchPacker) {
  const Stage s = MakeStage(1);
  for (int m0 = 0; m0 < kRows; m0 += 16) {
    for (int kk = 0; kk < 4; ++kk) {
      uint32_t addr[32], got[32][4], want[32][4];
      for (int l = 0; l < 32; ++l)
        addr[l] = Swizzle128Offset(LdmatrixARow(l, m0), LdmatrixAChunk(l, kk));
      LdMatrixX4(s.smem, addr, got);
      PackAFragment(s.codes, kRowBytes, m0, 64 * kk, want);
      for (int l = 0; l < 32; ++l)
        for (int i = 0; i < 4; ++i)
          ASSERT_EQ(got[l][i], want[l][i]) << m0 << " " << kk << " " << l << " " << i;
    }
  }
}

TEST(FragmentMathTest, BFragmentsMatchPacker) {
  const Stage s = MakeStage(2);
  for (int n0 = 0; n0 < kRows; n0 += 16) {
    for (int kk = 0; kk < 4; ++kk) {
      uint32_t addr[32], got[32][4], want0[32][2], want1[32][2];
      for (int l = 0; l < 32; ++l)
        addr[l] = Swizzle128Offset(LdmatrixBRow(l, n0), LdmatrixBChunk(l, kk));
      LdMatrixX4(s.smem, addr, got);
      PackBFragment(s.codes, kRowBytes, n0, 64 * kk, want0);
      PackBFragment(s.codes, kRowBytes, n0 + 8, 64 * kk, want1);
      for (int l = 0; l < 32; ++l) {
        ASSERT_EQ(got[l][0], want0[l][0]);
        ASSERT_EQ(got[l][1], want0[l][1]);
        ASSERT_EQ(got[l][2], want1[l][0]);
        ASSERT_EQ(got[l][3], want1[l][1]);
      }
    }
  }
}

// The two TMA swizzle modes as CuTe writes them (Swizzle<B,4,3>: address bits 7..7+B XOR into
// bits 4..4+B), against the closed forms the main loop uses, for every row and chunk of a tile.
TEST(FragmentMathTest, SwizzleOffsetsAreTheTmaModes) {
  for (uint32_t row = 0; row < 256; ++row) {
    for (uint32_t chunk = 0; chunk < 8; ++chunk) {
      const uint32_t o128 = row * 128 + chunk * 16;
      ASSERT_EQ(SwizzleOffset<128>(row, chunk), o128 ^ (((o128 >> 7) & 7u) << 4)) << row;
      if (chunk < 4) {
        const uint32_t o64 = row * 64 + chunk * 16;
        ASSERT_EQ(SwizzleOffset<64>(row, chunk), o64 ^ (((o64 >> 7) & 3u) << 4)) << row;
      }
    }
  }
  // An ldmatrix phase (8 consecutive rows, one chunk) hits 8 distinct 16-byte bank groups.
  for (uint32_t r0 = 0; r0 < 128; r0 += 8) {
    for (uint32_t chunk = 0; chunk < 4; ++chunk) {
      uint32_t banks = 0;
      for (uint32_t r = r0; r < r0 + 8; ++r)
        banks |= 1u << ((SwizzleOffset<64>(r, chunk) / 16) % 8);
      ASSERT_EQ(banks, 0xFFu) << r0 << " " << chunk;
    }
  }
}

// BK = 128 stages: [128][64 B] code tiles under SWIZZLE_64B, two MMA k-steps.
TEST(FragmentMathTest, Fragments64ByteRowsMatchPacker) {
  constexpr int kRows64 = 128, kRowBytes64 = 64;
  std::vector<uint8_t> codes(kRows64 * kRowBytes64), smem(codes.size());
  uint32_t x = 7;
  for (auto& c : codes) c = static_cast<uint8_t>((x = x * 1664525u + 1013904223u) >> 24);
  for (int r = 0; r < kRows64; ++r)
    for (int ch = 0; ch < 4; ++ch)
      std::memcpy(&smem[SwizzleOffset<64>(r, ch)], &codes[r * kRowBytes64 + ch * 16], 16);
  for (int r0 = 0; r0 < kRows64; r0 += 16) {
    for (int kk = 0; kk < 2; ++kk) {
      uint32_t addr[32], got[32][4], want[32][4], want0[32][2], want1[32][2];
      for (int l = 0; l < 32; ++l)
        addr[l] = SwizzleOffset<64>(LdmatrixARow(l, r0), LdmatrixAChunk(l, kk));
      LdMatrixX4(smem, addr, got);
      PackAFragment(codes, kRowBytes64, r0, 64 * kk, want);
      for (int l = 0; l < 32; ++l)
        for (int i = 0; i < 4; ++i) ASSERT_EQ(got[l][i], want[l][i]) << r0 << " " << kk << " " << l;
      for (int l = 0; l < 32; ++l)
        addr[l] = SwizzleOffset<64>(LdmatrixBRow(l, r0), LdmatrixBChunk(l, kk));
      LdMatrixX4(smem, addr, got);
      PackBFragment(codes, kRowBytes64, r0, 64 * kk, want0);
      PackBFragment(codes, kRowBytes64, r0 + 8, 64 * kk, want1);
      for (int l = 0; l < 32; ++l) {
        ASSERT_EQ(got[l][0], want0[l][0]);
        ASSERT_EQ(got[l][1], want0[l][1]);
        ASSERT_EQ(got[l][2], want1[l][0]);
        ASSERT_EQ(got[l][3], want1[l][1]);
      }
    }
  }
}

TEST(FragmentMathTest, ScalesMatchPacker) {
  const Stage s = MakeStage(3);
  for (int r0 = 0; r0 < kRows; r0 += 16) {
    for (int kk = 0; kk < 4; ++kk) {
      uint32_t want[32];
      PackSfa(s.scales, kScaleCols, r0, 64 * kk, want);
      for (int l = 0; l < 32; ++l) {
        if ((l & 3) > 1) continue;  // ignored lanes
        uint32_t got;
        std::memcpy(&got, &s.sfa[SfaOffset(SfaRow(l, r0), kk)], 4);
        ASSERT_EQ(got, want[l]) << r0 << " " << kk << " " << l;
      }
      for (int c0 = r0; c0 < r0 + 16; c0 += 8) {
        uint32_t want_b[32], want_sw[32];
        PackSfb(s.scales, kScaleCols, c0, 64 * kk, want_b);
        PackSfbSwizzled(s.sw_scales, kScaleCols, c0, 64 * kk, want_sw);
        for (int l = 0; l < 32; l += 4) {
          uint32_t got;
          std::memcpy(&got, &s.sfb[SfbOffset(SfbCol(l, c0), kk)], 4);
          ASSERT_EQ(got, want_b[l]);
          ASSERT_EQ(got, want_sw[l]);
        }
      }
    }
  }
}

float Bf16(uint32_t bits16) { return Bf16ToF32(static_cast<uint16_t>(bits16 & 0xFFFF)); }

// One m16n8k64 block-scaled MMA with random fragments and the model's result.
struct MmaCase {
  uint32_t a[32][4], b[32][2], sfa[32], sfb[32];
  float want[32][4];
};
MmaCase RandomMmaCase(uint32_t& x) {
  auto next = [&x] { return x = x * 1664525u + 1013904223u; };
  MmaCase m;
  float c[32][4] = {};
  for (int l = 0; l < 32; ++l) {
    for (auto& w : m.a[l]) w = next();
    for (auto& w : m.b[l]) w = next();
    m.sfa[l] = next() & 0x3F3F3F3Fu;  // finite, incl. subnormal scales
    m.sfb[l] = next() & 0x3F3F3F3Fu;
  }
  MmaM16N8K64BlockScaled(m.a, m.b, c, m.sfa, m.sfb, m.want);
  return m;
}

// The emulation's permutation + dequantization, evaluated exactly (double), against the model.
TEST(FragmentMathTest, EmulationPermutationMatchesModel) {
  uint32_t x = 9;
  for (int trial = 0; trial < 50; ++trial) {
    const MmaCase mc = RandomMmaCase(x);
    // Dequantized bf16 operands of the four m16n8k16 MMAs, per lane, as the fragment path
    // builds them: code * 2^-126 (bf16) times scale * 2^118.
    double d[16][8] = {};
    for (int s = 0; s < 4; ++s) {
      double A[16][16] = {}, B[16][8] = {};
      for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        for (int q = 0; q < 2; ++q) {
          for (int r = 0; r < 2; ++r) {
            const uint32_t enc = E2m1PairBf16Enc(mc.a[l][EmuWordA(s, r)], EmuPair(s, q));
            const uint32_t sw = mc.sfa[4 * g + r];
            const uint32_t f =
                Ue4m3ToBf16Scaled((sw >> (8 * EmuScaleByte(t, s >> 1))) & 0xFF, kEmuScaleExp2);
            for (int h = 0; h < 2; ++h)  // bf16 pair halves: k 2t+h (+8q) of row g + 8r
              A[g + 8 * r][2 * t + h + 8 * q] =
                  static_cast<double>(Bf16(enc >> (16 * h))) * Bf16(f);
          }
          const uint32_t encb = E2m1PairBf16Enc(mc.b[l][EmuWordB(s)], EmuPair(s, q));
          const uint32_t f = Ue4m3ToBf16Scaled(
              (mc.sfb[4 * g] >> (8 * EmuScaleByte(t, s >> 1))) & 0xFF, kEmuScaleExp2);
          for (int h = 0; h < 2; ++h)
            B[2 * t + h + 8 * q][g] = static_cast<double>(Bf16(encb >> (16 * h))) * Bf16(f);
        }
      }
      for (int m = 0; m < 16; ++m)
        for (int n = 0; n < 8; ++n)
          for (int k = 0; k < 16; ++k) d[m][n] += A[m][k] * B[k][n];
    }
    for (int l = 0; l < 32; ++l) {
      for (int i = 0; i < 4; ++i) {
        const int m = l / 4 + 8 * (i >> 1), n = 2 * (l % 4) + (i & 1);
        ASSERT_EQ(static_cast<float>(d[m][n] * kEmuAccScale), mc.want[l][i])
            << trial << " " << m << " " << n;
      }
    }
  }
}

// The sm_90 staged emulation (sm90/staged_mainloop.cuh, Sm90Emulation::kFast), evaluated exactly
// (double) against the model: wgmma k16 slice j, slot 8h + 2t + e of an MMA k-step holds
// physical k = 32h + 8t + j + 4e for both operands. A as DequantA builds its register operand from
// the ldmatrix fragment (register i of lane (g, t): row g + 8(i&1), word t + 4(i>>1), pair j to
// slice j, slot 8(i>>1) + 2t + e); B as StoreB stages it (row n, half h: pair j of word 4h + t'
// to chunk 2j + h, slot 2t' + e).
TEST(FragmentMathTest, StagedPermutationMatchesModel) {
  uint32_t x = 77;
  auto scale = [](uint32_t word, int block) {
    return Bf16(Ue4m3ToBf16Scaled((word >> (8 * block)) & 0xFF, kEmuScaleExp2));
  };
  for (int trial = 0; trial < 50; ++trial) {
    const MmaCase mc = RandomMmaCase(x);
    double A[16][4][16] = {}, B[8][4][16] = {};  // [row][slice j][slot]
    bool a_set[16][4][16] = {}, b_set[8][4][16] = {};
    for (int l = 0; l < 32; ++l) {
      const int g = l / 4, t = l % 4;
      for (int i = 0; i < 4; ++i) {  // DequantA: scale word of row g + 8(i&1), block of word
        const int row = g + 8 * (i & 1), word = t + 4 * (i >> 1);
        const double f = scale(mc.sfa[4 * g + (i & 1)], word / 2);
        for (int j = 0; j < 4; ++j) {
          const uint32_t enc = E2m1NibblePairBf16Enc(mc.a[l][i], mc.a[l][i] >> 8, j);
          for (int e = 0; e < 2; ++e) {
            const int slot = 8 * (i >> 1) + 2 * t + e;
            ASSERT_FALSE(a_set[row][j][slot]);
            a_set[row][j][slot] = true;
            A[row][j][slot] = static_cast<double>(Bf16(enc >> (16 * e))) * f;
          }
        }
      }
    }
    for (int n = 0; n < 8;
         ++n) {  // StoreB: row n, half h, words 4h + t' (B fragment mc.b[4n+t'][h])
      for (int h = 0; h < 2; ++h) {
        for (int tp = 0; tp < 4; ++tp) {
          const uint32_t w = mc.b[4 * n + tp][h];
          const double f = scale(mc.sfb[4 * n], (4 * h + tp) / 2);
          for (int j = 0; j < 4; ++j) {
            const uint32_t enc = E2m1NibblePairBf16Enc(w, w >> 8, j);
            for (int e = 0; e < 2; ++e) {
              const int slot = 8 * h + 2 * tp + e;
              ASSERT_FALSE(b_set[n][j][slot]);
              b_set[n][j][slot] = true;
              B[n][j][slot] = static_cast<double>(Bf16(enc >> (16 * e))) * f;
            }
          }
        }
      }
    }
    for (int l = 0; l < 32; ++l) {
      for (int i = 0; i < 4; ++i) {
        const int m = l / 4 + 8 * (i >> 1), n = 2 * (l % 4) + (i & 1);
        double d = 0;
        for (int j = 0; j < 4; ++j)
          for (int slot = 0; slot < 16; ++slot) d += A[m][j][slot] * B[n][j][slot];
        ASSERT_EQ(static_cast<float>(d * kEmuAccScale), mc.want[l][i])
            << trial << " " << m << " " << n;
      }
    }
  }
}

TEST(FragmentMathTest, SplitEncodingMatchesReference) {
  for (uint32_t byte = 0; byte < 256; ++byte) {
    for (int p = 0; p < 4; ++p) {
      const uint32_t w = (byte << (8 * p)) | (0xA5C3E1F7u & ~(0xFFu << (8 * p)));
      ASSERT_EQ(E2m1PairBf16EncSplit(w & 0x0F0F0F0Fu, (w >> 4) & 0x0F0F0F0Fu, p),
                E2m1PairBf16Enc(w, p))
          << byte << " " << p;
    }
  }
}

// Nibbles j and j + 4 of a word, every value of both, with the other nibbles noise.
TEST(FragmentMathTest, NibblePairEncodingMatchesReference) {
  for (int j = 0; j < 4; ++j) {
    for (uint32_t lo = 0; lo < 16; ++lo) {
      for (uint32_t hi = 0; hi < 16; ++hi) {
        const uint32_t keep = (0xFu << (4 * j)) | (0xFu << (4 * j + 16));
        const uint32_t w = (lo << (4 * j)) | (hi << (4 * j + 16)) | (0x9E3779B9u & ~keep);
        const uint32_t ref = E2m1PairBf16Enc(lo | (hi << 4), 0);  // low nibble -> low half
        ASSERT_EQ(E2m1NibblePairBf16Enc(w, w >> 8, j), ref) << j << " " << lo << " " << hi;
      }
    }
  }
}

// The sm_90 build's software e2m1 conversion against the emulator's (both written from the
// contract, independently): every 251st f32 pattern (both signs, every exponent, NaN, Inf) and
// every tie and its neighbours.
TEST(FragmentMathTest, SoftE2m1MatchesEmulator) {
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 251) {
    const float v = F32FromBits(static_cast<uint32_t>(u));
    ASSERT_EQ(sm90::F32ToE2m1Soft(v), F32ToE2M1(v)) << std::hex << "0x" << u;
  }
  for (const float tie : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f, 0.0f}) {
    for (const float sign : {1.0f, -1.0f}) {
      const uint32_t b = F32Bits(sign * tie);
      for (const uint32_t bits : {b - 1, b, b + 1}) {
        const float v = F32FromBits(bits);
        ASSERT_EQ(sm90::F32ToE2m1Soft(v), F32ToE2M1(v)) << std::hex << "0x" << bits;
      }
    }
  }
}

// The quantizer's fast sm_90 path: the minimum-of-lines magnitude code against the emulator's
// F32ToE2M1 on a >= 0, not NaN (+Inf included): every 13th pattern, and every pattern within
// 64 ulp of each tie and grid point. H3_EXHAUSTIVE=1 checks all 2^31 - 2^23 + 1 of them.
TEST(FragmentMathTest, E2m1MagnitudeMagicMatchesEmulator) {
  const char* env = std::getenv("H3_EXHAUSTIVE");
  const uint32_t step = (env != nullptr && env[0] == '1') ? 1 : 13;
  const auto check = [](uint32_t bits) {
    const float a = F32FromBits(bits);
    return F32Bits(sm90::E2m1MagnitudeMagic(a)) - 0x4B000000u == F32ToE2M1(a);
  };
  for (uint64_t u = 0; u <= 0x7F800000u; u += step) {
    ASSERT_TRUE(check(static_cast<uint32_t>(u))) << std::hex << "0x" << u;
  }
  ASSERT_TRUE(check(0x7F800000u));
  for (const float p : {0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f,
                        5.0f, 6.0f, 7.0f, 8.0f, 3.4028235e38f}) {
    for (int d = -64; d <= 64; ++d) {
      const uint32_t bits = F32Bits(p) + d;
      if (bits <= 0x7F800000u) {
        ASSERT_TRUE(check(bits)) << std::hex << "0x" << bits;
      }
    }
  }
}

}  // namespace
}  // namespace h3::kernels
