#include "emulator/mma_model.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "emulator/formats.h"
#include "emulator/gemm.h"
#include "emulator/swizzle.h"

namespace h3 {
namespace {

inline uint8_t Nibble(uint32_t reg, int j) { return (reg >> (4 * j)) & 0xF; }
inline uint8_t ScaleByte(uint32_t reg, int b) { return (reg >> (8 * b)) & 0xFF; }

inline uint32_t LoadWordLE(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

int BitLength(unsigned __int128 v) {
  int n = 0;
  for (; v != 0; v >>= 1) ++n;
  return n;
}

unsigned __int128 Magnitude(__int128 v) {
  return v < 0 ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
}

// v * 2^n for a signed v whose result fits: shifting a negative value left is undefined
// before C++20 (UBSan), the unsigned shift is the same two's complement bits.
__int128 ShiftLeft(__int128 v, int n) {
  return static_cast<__int128>(static_cast<unsigned __int128>(v) << n);
}

// RN_f32(c + s * 2^-20), the sum formed exactly (|s| < 2^52 here).
float RoundSum(float c, __int128 s) {
  if (std::isnan(c) || std::isinf(c)) return c;  // s is finite
  if (c == 0.0f) {
    // +-0 + exact zero: the model's exact zero sum is +0 (see header), and
    // -0 + +0 = +0 under nearest-even.
    return s == 0 ? 0.0f : ScaledInt128ToF32(s, -20, RoundMode::kNearestEven);
  }
  if (s == 0) return c;
  // c = cm * 2^ce with an integer |cm| < 2^24.
  int ce;
  const float fr = std::frexp(c, &ce);
  const __int128 cm = static_cast<__int128>(std::ldexp(fr, 24));
  ce -= 24;
  const int msb_s = BitLength(Magnitude(s)) - 1 - 20;
  const int msb_c = BitLength(Magnitude(cm)) - 1 + ce;
  if (std::abs(msb_s - msb_c) <= 60) {
    // Align both to the finer lsb; the coarser term ends up below bit 112.
    const int e = ce < -20 ? ce : -20;
    const __int128 total = ShiftLeft(s, -20 - e) + ShiftLeft(cm, ce - e);
    if (total == 0) return 0.0f;  // exact cancellation is +0
    return ScaledInt128ToF32(total, e, RoundMode::kNearestEven);
  }
  // The smaller term is more than 2^60 times smaller: it only decides ties and
  // directions, like a sticky bit far below the rounding position.
  const bool s_larger = msb_s > msb_c;
  const __int128 big = s_larger ? s : cm;
  const int big_e = s_larger ? -20 : ce;
  const int small_sign = (s_larger ? cm : s) > 0 ? 1 : -1;
  const int up = 100 - BitLength(Magnitude(big));
  return ScaledInt128ToF32(ShiftLeft(big, up) + small_sign, big_e - up, RoundMode::kNearestEven);
}

}  // namespace

void MmaM16N8K64BlockScaled(const uint32_t a[32][4], const uint32_t b[32][2], const float c[32][4],
                            const uint32_t sfa[32], const uint32_t sfb[32], float d[32][4]) {
  // Unpack to A[16][64], B[64][8] codes and the scale bytes.
  uint8_t A[16][64], B[64][8];
  uint8_t SA[16][4], SB[8][4];
  float C[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 8; ++j) {
        A[g + 8 * (i & 1)][8 * t + j + 32 * (i >> 1)] = Nibble(a[lane][i], j);
      }
      C[g + 8 * (i >> 1)][2 * t + (i & 1)] = c[lane][i];
    }
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 8; ++j) B[8 * t + j + 32 * i][g] = Nibble(b[lane][i], j);
    }
    for (int bb = 0; bb < 4; ++bb) {
      if (t == 0) {
        SA[g][bb] = ScaleByte(sfa[lane], bb);
        SB[g][bb] = ScaleByte(sfb[lane], bb);
      } else if (t == 1) {
        SA[g + 8][bb] = ScaleByte(sfa[lane], bb);
      }
    }
  }
  float D[16][8];
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 8; ++n) {
      bool nan = false;
      __int128 s = 0;  // units of 2^-20: (2 e2m1)(2 e2m1)(512 sfa)(512 sfb)
      for (int bb = 0; bb < 4; ++bb) {
        if (E4M3IsNaN(SA[m][bb]) || E4M3IsNaN(SB[n][bb])) {
          nan = true;
          continue;
        }
        int64_t inner = 0;  // units of 2^-2
        for (int kk = 16 * bb; kk < 16 * bb + 16; ++kk) {
          inner += E2M1TimesTwo(A[m][kk]) * E2M1TimesTwo(B[kk][n]);
        }
        s += static_cast<__int128>(inner) * E4M3Times512(SA[m][bb]) * E4M3Times512(SB[n][bb]);
      }
      D[m][n] = nan ? std::numeric_limits<float>::quiet_NaN() : RoundSum(C[m][n], s);
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) d[lane][i] = D[g + 8 * (i >> 1)][2 * t + (i & 1)];
  }
}

void PackAFragment(absl::Span<const uint8_t> codes, int64_t row_bytes, int64_t row0, int64_t k0,
                   uint32_t a[32][4]) {
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) {
      const int64_t row = row0 + g + 8 * (i & 1);
      const int64_t k = k0 + 8 * t + 32 * (i >> 1);  // 8 consecutive k = 4 bytes
      a[lane][i] = LoadWordLE(codes.data() + row * row_bytes + k / 2);
    }
  }
}

void PackBFragment(absl::Span<const uint8_t> codes, int64_t row_bytes, int64_t col0, int64_t k0,
                   uint32_t b[32][2]) {
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 2; ++i) {
      const int64_t k = k0 + 8 * t + 32 * i;
      b[lane][i] = LoadWordLE(codes.data() + (col0 + g) * row_bytes + k / 2);
    }
  }
}

void PackSfa(absl::Span<const uint8_t> scales, int64_t scale_cols, int64_t row0, int64_t k0,
             uint32_t sfa[32]) {
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    sfa[lane] = 0;
    if (t > 1) continue;
    const int64_t row = row0 + g + 8 * t;
    sfa[lane] = LoadWordLE(scales.data() + row * scale_cols + k0 / 16);
  }
}

void PackSfb(absl::Span<const uint8_t> scales, int64_t scale_cols, int64_t col0, int64_t k0,
             uint32_t sfb[32]) {
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    sfb[lane] = 0;
    if (t != 0) continue;
    sfb[lane] = LoadWordLE(scales.data() + (col0 + g) * scale_cols + k0 / 16);
  }
}

void PackSfbSwizzled(absl::Span<const uint8_t> swizzled, int64_t scale_cols, int64_t col0,
                     int64_t k0, uint32_t sfb[32]) {
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    sfb[lane] = 0;
    if (t != 0) continue;
    // k0 / 16 is a multiple of 4, so the 4 bytes are consecutive and aligned.
    sfb[lane] = LoadWordLE(swizzled.data() + SwizzledScaleOffset(col0 + g, k0 / 16, scale_cols));
  }
}

void PackCFragment(const float* tile, int64_t ld, float c[32][4]) {
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) c[lane][i] = tile[(g + 8 * (i >> 1)) * ld + 2 * t + (i & 1)];
  }
}

void UnpackDFragment(const float d[32][4], float* tile, int64_t ld) {
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) tile[(g + 8 * (i >> 1)) * ld + 2 * t + (i & 1)] = d[lane][i];
  }
}

}  // namespace h3
