#include "emulator/gemm.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "emulator/formats.h"
#include "emulator/swizzle.h"

namespace h3 {

uint8_t BlockScaledMatrix::Scale(int64_t row, int64_t block) const {
  const int64_t cols = k / 16;
  return layout == ScaleLayout::kLinear ? scales[row * cols + block]
                                        : scales[SwizzledScaleOffset(row, block, cols)];
}

namespace {

// Decoded E2M1 / E4M3 values (from the bit-level decoders of formats.cc), so dequantizing
// costs a lookup and one exact multiply per element.
struct DecodeTables {
  float e2m1[16];
  float e4m3[256];
  DecodeTables() {
    for (int c = 0; c < 16; ++c) e2m1[c] = E2M1ToF32(static_cast<uint8_t>(c));
    for (int b = 0; b < 256; ++b) e4m3[b] = E4M3ToF32(static_cast<uint8_t>(b));
  }
};

const DecodeTables& Tables() {
  static const DecodeTables* t = new DecodeTables;
  return *t;
}

}  // namespace

MatrixF32 Dequantize(const BlockScaledMatrix& x) {
  MatrixF32 out(x.rows, x.k);
  DequantizeInto(x, out.data());
  return out;
}

void DequantizeInto(const BlockScaledMatrix& x, float* out) {
  const int64_t blocks = x.k / 16;
  const DecodeTables& t = Tables();
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < x.rows; ++r) {
    float* dst = out + r * x.k;
    const uint8_t* src = x.codes.data() + r * (x.k / 2);
    for (int64_t b = 0; b < blocks; ++b) {
      const float s = t.e4m3[x.Scale(r, b)];
      for (int i = 0; i < 8; ++i) {
        const uint8_t byte = src[8 * b + i];
        // e2m1 * e4m3 is exact in f32 (at most 6 significant bits); NaN scale -> NaN.
        dst[16 * b + 2 * i] = t.e2m1[byte & 0xF] * s;
        dst[16 * b + 2 * i + 1] = t.e2m1[byte >> 4] * s;
      }
    }
  }
}

void GemmFastF32Into(const float* a_deq, int64_t m, const float* w_deq, int64_t n, int64_t k,
                     float* acc) {
  if (m == 0 || n == 0) return;
  const Eigen::Map<const MatrixF32> a(a_deq, m, k), w(w_deq, n, k);
  Eigen::Map<MatrixF32> c(acc, m, n);
  // Products are exact, so an FMA in Eigen's kernel rounds like a multiply then an add.
  c.noalias() = a * w.transpose();
}

MatrixF32 GemmFastF32(const MatrixF32& a_deq, const MatrixF32& w_deq) {
  MatrixF32 acc(a_deq.rows(), w_deq.rows());
  if (a_deq.rows() == 0 || w_deq.rows() == 0) return acc;
  // Products are exact, so an FMA inside Eigen's kernel rounds exactly like a
  // separate multiply and add: only the summation order is Eigen's.
  acc.noalias() = a_deq * w_deq.transpose();
  return acc;
}

MatrixF32 GemmFastF32(const BlockScaledMatrix& a, const BlockScaledMatrix& w) {
  return GemmFastF32(Dequantize(a), Dequantize(w));
}

IntOperand ToIntOperand(const BlockScaledMatrix& x) {
  IntOperand out;
  out.rows = x.rows;
  out.k = x.k;
  out.v.resize(x.rows * x.k);
  out.row_nan.assign(x.rows, 0);
  const int64_t blocks = x.k / 16;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < x.rows; ++r) {
    int32_t* dst = out.v.data() + r * x.k;
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t sf = x.Scale(r, b);
      int32_t s512 = 0;
      if (E4M3IsNaN(sf)) {
        out.row_nan[r] = 1;  // the integer values of this block are unused
      } else {
        s512 = E4M3Times512(sf);
      }
      for (int i = 0; i < 16; ++i) {
        // (2 * e2m1) * (512 * ue4m3) = value * 2^10.
        dst[16 * b + i] = E2M1TimesTwo(x.Code(r, 16 * b + i)) * s512;
      }
    }
  }
  return out;
}

ExactAcc ExactDot(const IntOperand& a, int64_t a_row, const IntOperand& w, int64_t w_row) {
  ExactAcc acc;
  if (a.row_nan[a_row] || w.row_nan[w_row]) {
    acc.nan = true;  // NaN scale * anything (even 0) is NaN
    return acc;
  }
  const int32_t* x = a.v.data() + a_row * a.k;
  const int32_t* y = w.v.data() + w_row * w.k;
  // |product| < 2^44, so 2^18 products fit an int64 sum (< 2^62).
  constexpr int64_t kChunk = int64_t{1} << 18;
  uint64_t bits = 0;
  for (int64_t c0 = 0; c0 < a.k; c0 += kChunk) {
    const int64_t c1 = std::min(a.k, c0 + kChunk);
    int64_t s = 0, sa = 0;
    uint64_t o = 0;
    for (int64_t i = c0; i < c1; ++i) {
      const int64_t p = static_cast<int64_t>(x[i]) * y[i];
      s += p;
      sa += p < 0 ? -p : p;
      o |= static_cast<uint64_t>(p);  // ctz(-p) == ctz(p)
    }
    acc.sum += s;
    acc.abs_sum += sa;
    bits |= o;
  }
  acc.min_tz = bits == 0 ? 128 : __builtin_ctzll(bits);
  return acc;
}

float ScaledInt128ToF32(__int128 v, int exp2, RoundMode mode) {
  if (v == 0) return 0.0f;
  const bool neg = v < 0;
  unsigned __int128 mag =
      neg ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  int len = 0;
  for (unsigned __int128 t = mag; t != 0; t >>= 1) ++len;
  uint64_t kept;
  int shift = 0;
  if (len <= 24) {
    kept = static_cast<uint64_t>(mag);  // exact
  } else {
    shift = len - 24;
    kept = static_cast<uint64_t>(mag >> shift);
    const unsigned __int128 rem = mag & ((static_cast<unsigned __int128>(1) << shift) - 1);
    const unsigned __int128 half = static_cast<unsigned __int128>(1) << (shift - 1);
    bool up = false;
    switch (mode) {
      case RoundMode::kNearestEven:
        up = rem > half || (rem == half && (kept & 1));
        break;
      case RoundMode::kTowardPositive:  // magnitude up for positive values
        up = !neg && rem != 0;
        break;
      case RoundMode::kTowardNegative:  // magnitude up for negative values
        up = neg && rem != 0;
        break;
    }
    if (up) ++kept;  // 2^24 is still exact in f32
  }
  const float mag_f = std::ldexp(static_cast<float>(kept), exp2 + shift);
  return neg ? -mag_f : mag_f;
}

float ExactToF32(const ExactAcc& acc) {
  if (acc.nan) return std::numeric_limits<float>::quiet_NaN();
  return ScaledInt128ToF32(acc.sum, -20, RoundMode::kNearestEven);
}

AccInterval AccBound(const ExactAcc& acc, int64_t k) {
  AccInterval r;
  if (acc.nan) {
    r.nan = true;
    r.lo = r.hi = std::numeric_limits<float>::quiet_NaN();
    return r;
  }
  // B = 0 rule: products are multiples of 2^min_tz (units 2^-20); partial sums
  // below 2^(min_tz + 24) units are then exact in f32.
  const bool exact =
      acc.abs_sum == 0 ||
      (acc.min_tz < 100 && acc.abs_sum < (static_cast<__int128>(1) << (acc.min_tz + 24)));
  r.exact = exact;
  if (exact) {
    if (acc.sum == 0) {
      r.lo = -0.0f;
      r.hi = 0.0f;
    } else {
      r.lo = r.hi = ScaledInt128ToF32(acc.sum, -20, RoundMode::kNearestEven);
    }
    return r;
  }
  // In units of 2^-44: acc = sum * 2^24, B = (K-1) * abs_sum.
  const __int128 center = acc.sum * (static_cast<__int128>(1) << 24);
  const __int128 b = static_cast<__int128>(k - 1) * acc.abs_sum;
  r.lo = ScaledInt128ToF32(center - b, -44, RoundMode::kTowardPositive);
  r.hi = ScaledInt128ToF32(center + b, -44, RoundMode::kTowardNegative);
  // A zero at an end stands for both signed zeros.
  if (r.lo == 0.0f) r.lo = -0.0f;
  if (r.hi == 0.0f) r.hi = 0.0f;
  return r;
}

MatrixF32 GemmExactF32(const IntOperand& a, const IntOperand& w) {
  MatrixF32 acc(a.rows, w.rows);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t m = 0; m < a.rows; ++m) {
    for (int64_t n = 0; n < w.rows; ++n) {
      acc(m, n) = ExactToF32(ExactDot(a, m, w, n));
    }
  }
  return acc;
}

MatrixF32 GemmExactF32(const BlockScaledMatrix& a, const BlockScaledMatrix& w) {
  return GemmExactF32(ToIntOperand(a), ToIntOperand(w));
}

}  // namespace h3
