#ifndef EMULATOR_TEST_UTIL_H_
#define EMULATOR_TEST_UTIL_H_

// Test helpers: an INDEPENDENT model of docs/contract.md sections 2-3 (double
// arithmetic with one explicit rounding per f32 operation, and brute-force
// nearest-even over all codes), random data, and an op-input bundle.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "absl/random/random.h"
#include "absl/types/span.h"
#include "emulator/op.h"
#include "emulator/swizzle.h"

namespace h3 {

// The tests' random source: std::mt19937_64 from a fixed seed gives the same data in every run.
// Not absl::BitGen: it salts any seed with per-process entropy (absl
// random/internal/salted_seed_seq.h), so "fixed seed" tests saw new data each run.
using TestRng = std::mt19937_64;

}  // namespace h3

namespace h3::testing {

inline float Bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t ToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Value of E4M3 byte b (positive half), built from the definition in double.
inline double RefE4M3Value(int b) {
  const int e = (b >> 3) & 15, m = b & 7;
  return e == 0 ? m * std::ldexp(1.0, -9) : std::ldexp(1.0 + m / 8.0, e - 7);
}
inline double RefE2M1Value(int c) {
  static const double kV[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  return kV[c & 7];
}

// Brute force: the code among 0..max_code (positive) nearest to |v| by exact
// double distance, ties to the even code; saturating above max.
template <typename ValueFn>
int RefNearestCode(double a, int max_code, ValueFn value) {
  if (a >= value(max_code)) return max_code;
  int best = 0;
  double best_d = std::fabs(a - value(0));
  for (int c = 1; c <= max_code; ++c) {
    const double d = std::fabs(a - value(c));
    if (d < best_d || (d == best_d && (c & 1) == 0)) {
      best = c;
      best_d = d;
    }
  }
  return best;
}

inline uint8_t RefF32ToE4M3(float f) {
  if (std::isnan(f)) return 0x7F;
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  if (std::isinf(f)) return sign | 0x7E;
  return sign | RefNearestCode(std::fabs(static_cast<double>(f)), 0x7E, RefE4M3Value);
}

inline uint8_t RefF32ToE2M1(float f) {
  if (std::isnan(f)) return 0x7;
  const uint8_t sign = std::signbit(f) ? 0x8 : 0;
  if (std::isinf(f)) return sign | 0x7;
  return sign | RefNearestCode(std::fabs(static_cast<double>(f)), 7, RefE2M1Value);
}

inline uint16_t RefF32ToBf16(float f) {
  if (std::isnan(f)) return 0x7FFF;
  // Candidates: truncation and the next bf16 up in magnitude.
  const uint32_t u = ToBits(f);
  const uint16_t lo = u >> 16, hi = static_cast<uint16_t>(lo + 1);
  const double v = f, vlo = Bits(uint32_t{lo} << 16);
  const double vhi = (hi & 0x7F80) == 0x7F80 && (hi & 0x7F) == 0
                         ? std::copysign(std::ldexp(1.0, 128), v)  // next is Inf
                         : static_cast<double>(Bits(uint32_t{hi} << 16));
  const double dlo = std::fabs(v - vlo), dhi = std::fabs(v - vhi);
  if (dlo < dhi || (dlo == dhi && (lo & 1) == 0)) return lo;
  return hi;
}

// f32 operations as double operations rounded once to f32 (exact: double has
// more than 2*24+2 bits, so double rounding cannot occur for + - * /).
inline float RefMul(float a, float b) { return static_cast<float>(static_cast<double>(a) * b); }
inline float RefDiv(float a, float b) { return static_cast<float>(static_cast<double>(a) / b); }

// Contract section 3, steps 1-6, independently of emulator/quantize.cc.
inline void RefQuantizeBlock16(const float x[16], float gs, uint8_t* sf, uint8_t packed[8]) {
  float amax = std::numeric_limits<float>::quiet_NaN();
  for (int i = 0; i < 16; ++i) {
    if (std::isnan(x[i])) continue;
    if (std::isnan(amax) || std::fabs(x[i]) > amax) amax = std::fabs(x[i]);
  }
  const float sfv = RefMul(amax, RefMul(gs, Bits(0x3E2AAAABu)));
  *sf = RefF32ToE4M3(sfv);
  const float sfd =
      *sf == 0x7F ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(RefE4M3Value(*sf));
  float os = 0.0f;
  if (!(amax == 0.0f)) {
    const float inv = RefDiv(1.0f, RefMul(sfd, RefDiv(1.0f, gs)));
    os = std::isnan(inv) ? std::numeric_limits<float>::max()
                         : std::min(inv, std::numeric_limits<float>::max());
  }
  for (int j = 0; j < 8; ++j) {
    packed[j] = RefF32ToE2M1(RefMul(x[2 * j], os)) | (RefF32ToE2M1(RefMul(x[2 * j + 1], os)) << 4);
  }
}

// Random bf16 with a spread of exponents around 2^0 (finite). Exponents below -126 give
// subnormals (exponent field 0): shifting a negative field was undefined (UBSan).
inline uint16_t RandomBf16(TestRng& gen, int emin = -8, int emax = 8) {
  const int e = absl::Uniform<int>(absl::IntervalClosed, gen, emin, emax);
  const uint16_t mant = absl::Uniform<uint16_t>(gen, 0, 128);
  const uint16_t sign = absl::Bernoulli(gen, 0.5) ? 0x8000 : 0;
  const int field = std::clamp(e + 127, 0, 254);
  return sign | static_cast<uint16_t>(field << 7) | mant;
}

// Owns everything an OpInputs points to.
struct OpData {
  OpShape shape;
  std::vector<uint16_t> attn_out, gate, residual;
  std::vector<uint8_t> w_q, w_sf;
  std::vector<int32_t> gate_index;
  float w_gs = 1.0f, act_gs = 1.0f;

  // By name: OpInputs is generated from core/operands.def (a new row adds a field).
  OpInputs Inputs() const {
    OpInputs in;
    in.shape = shape;
    in.attn_out = attn_out;
    in.o_weight_q = w_q;
    in.o_weight_sf = w_sf;
    in.o_weight_global_scale = w_gs;
    in.act_global_scale = act_gs;
    in.gate = gate;
    in.gate_index = gate_index;
    in.residual = residual;
    return in;
  }
};

// Exact data (every partial sum representable, so the f32 GEMM is exact in
// any order). Activations: each block holds values v * 2^e (v on the E2M1
// grid, |v| <= 2, plus one +-6) with e in [-2, 0]; with act_gs = 1,
// sfv = RN(6 * 2^e * RN(1/6)) = 2^e exactly, so sf = 2^e and every code is v.
// Weight: codes of magnitude <= 2 and scales in {1, 1/2, 1/4}. Products are
// multiples of 2^-6 of magnitude <= 12: exact for K < 21845.
inline OpData MakeExactOpData(TestRng& gen, OpShape s) {
  OpData d;
  d.shape = s;
  static const float kGrid[] = {0, 0.5f, 1, 1.5f, 2};
  d.attn_out.resize(s.m * s.k);
  for (int64_t r = 0; r < s.m; ++r) {
    for (int64_t b = 0; b < s.k / 16; ++b) {
      const int e = absl::Uniform<int>(absl::IntervalClosed, gen, -2, 0);
      // One element is 6 * 2^e so the block amax is 6 * 2^e and sf = 2^e.
      const int pin = absl::Uniform<int>(gen, 0, 16);
      for (int i = 0; i < 16; ++i) {
        float v = i == pin ? 6.0f : kGrid[absl::Uniform<int>(gen, 0, 5)];
        if (absl::Bernoulli(gen, 0.5)) v = -v;
        const float x = std::ldexp(v, e);
        d.attn_out[r * s.k + 16 * b + i] = static_cast<uint16_t>(ToBits(x) >> 16);
      }
    }
  }
  d.act_gs = 1.0f;
  // Weight: random small codes and power-of-two scales directly.
  d.w_q.resize(s.n * (s.k / 2));
  for (auto& byte : d.w_q) {
    static const uint8_t kCodes[] = {0x0, 0x1, 0x2, 0x3, 0x4, 0x8, 0x9, 0xA, 0xB, 0xC};
    byte = kCodes[absl::Uniform<int>(gen, 0, 10)] | (kCodes[absl::Uniform<int>(gen, 0, 10)] << 4);
  }
  std::vector<uint8_t> lin(s.n * (s.k / 16));
  for (auto& sf : lin) sf = static_cast<uint8_t>(0x38 - 8 * absl::Uniform<int>(gen, 0, 3));
  d.w_sf = SwizzleScales(lin, s.n, s.k / 16);
  d.w_gs = 1.0f;
  d.gate.resize(s.g * s.n);
  for (auto& g : d.gate) g = RandomBf16(gen, -2, 2);
  d.residual.resize(s.m * s.n);
  for (auto& r : d.residual) r = RandomBf16(gen, -4, 8);
  d.gate_index.resize(s.m);
  for (auto& gi : d.gate_index) gi = absl::Uniform<int32_t>(gen, -1, static_cast<int32_t>(s.g) + 1);
  return d;
}

}  // namespace h3::testing

#endif  // EMULATOR_TEST_UTIL_H_
