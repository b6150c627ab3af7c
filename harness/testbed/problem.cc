#include "harness/testbed/problem.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "emulator/formats.h"
#include "emulator/swizzle.h"
#include "harness/testbed/rng.h"
#include "harness/testbed/rows.h"

namespace h3::testbed {
namespace {

// Streams of the counter-based generator: one per tensor / purpose.
enum Stream : uint64_t {
  kAttn = 1,
  kBlock,
  kRowScale,
  kRowSpecial,
  kChannel,
  kResidual,
  kResidualScale,
  kGate,
  kGateIndex,
  kWeight,
  kWeightRow,
  kWeightScale,
  kSmooth,
  kLoraDown,
  kLoraUp,
};

// Inverse standard normal CDF (Acklam's rational approximation, |rel err| < 1.2e-9: far below
// bf16 resolution, which is all the data needs).
double InverseNormalCdf(double p) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  if (p < kLow) {
    const double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - kLow) return -InverseNormalCdf(1 - p);
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

// 65536 equiprobable standard-normal values, each already a bf16 value (so x * 2^e stays exact).
const std::vector<float>& GaussianTable() {
  static const std::vector<float>* table = [] {
    auto* t = new std::vector<float>(65536);
    for (int i = 0; i < 65536; ++i) {
      (*t)[i] = Bf16ToF32(F32ToBf16(static_cast<float>(InverseNormalCdf((i + 0.5) / 65536.0))));
    }
    return t;
  }();
  return *table;
}

inline float Gauss(uint64_t h) { return GaussianTable()[h & 0xFFFF]; }

// Runs fn(begin, end) over [0, count) split across up to `threads` threads.
template <typename Fn>
void ParallelFor(int64_t count, int threads, Fn fn) {
  const int64_t kMinChunk = 64;
  int64_t workers = std::min<int64_t>(std::max(threads, 1), (count + kMinChunk - 1) / kMinChunk);
  if (workers <= 1) {
    if (count > 0) fn(int64_t{0}, count);
    return;
  }
  std::vector<std::thread> pool;
  const int64_t chunk = (count + workers - 1) / workers;
  for (int64_t w = 0; w < workers; ++w) {
    const int64_t begin = w * chunk, end = std::min(count, begin + chunk);
    if (begin >= end) break;
    pool.emplace_back([=] { fn(begin, end); });
  }
  for (std::thread& t : pool) t.join();
}

// Per-row scale 2^{-2..2}: neighbouring rows get different block scales.
inline float RowScale(uint64_t seed, int64_t row) {
  return std::ldexp(1.0f, static_cast<int>(Hash(seed, kRowScale, row, 0) % 5) - 2);
}

// bf16 special values injected by kSpecial (NaN payloads, infinities, signed zeros, subnormals,
// the extremes of the normal range).
constexpr uint16_t kSpecialBits[] = {0x7FC0, 0xFFFF, 0x7F81, 0x7F80, 0xFF80, 0x8000, 0x0000,
                                     0x0001, 0x8003, 0x007F, 0x807F, 0x0080, 0x7F7F, 0xFF7F};
constexpr int kNumSpecial = sizeof(kSpecialBits) / sizeof(kSpecialBits[0]);

// Fills one row of attn_out.
void AttnRow(DataKind kind, uint64_t seed, int64_t row, int64_t k, uint16_t* out) {
  switch (kind) {
    case DataKind::kExact: {
      // Per block of 16: one element is +-6*2^p (the block amax), the others are E2M1 grid
      // values times 2^p, p in {-1, 0}; 1 block in 32 is all zero. With act_global_scale = 2
      // the block scale is exactly 2^(p+1) (6 * RN(1/6) rounds to 1 in f32) and every code
      // reproduces its element, so dequantized operands equal the data.
      for (int64_t b = 0; b < k / 16; ++b) {
        const uint64_t hb = Hash(seed, kBlock, row, b);
        if (hb % 32 == 0) {
          for (int i = 0; i < 16; ++i) out[b * 16 + i] = (hb >> 40) & 1 ? 0x8000 : 0x0000;
          continue;
        }
        const int p = ((hb >> 5) & 1) ? 0 : -1;
        const int max_pos = static_cast<int>((hb >> 6) & 15);
        for (int i = 0; i < 16; ++i) {
          const int64_t col = b * 16 + i;
          uint8_t code = Hash(seed, kAttn, row, col) & 15;
          if (i == max_pos) code = ((hb >> 10) & 1) ? 0xF : 0x7;  // -6 or +6
          out[col] = F32ToBf16(std::ldexp(E2M1ToF32(code), p));
        }
      }
      return;
    }
    case DataKind::kGaussian:
    case DataKind::kSaturate: {
      const float rs = RowScale(seed, row);
      for (int64_t c = 0; c < k; ++c) out[c] = F32ToBf16(Gauss(Hash(seed, kAttn, row, c)) * rs);
      return;
    }
    case DataKind::kHeavyTail: {
      // Outlier channels (1 in 61 columns, x24) as attention outputs have, and rare spikes
      // (1 in 2048 elements, x16) elsewhere.
      for (int64_t c = 0; c < k; ++c) {
        const uint64_t h = Hash(seed, kAttn, row, c);
        float x = Gauss(h);
        if (Hash(seed, kChannel, 0, c) % 61 == 0) {
          x *= 24.f;
        } else if ((h >> 16) % 2048 == 0) {
          x *= 16.f;
        }
        out[c] = F32ToBf16(x);
      }
      return;
    }
    case DataKind::kSpecial: {
      const float rs = RowScale(seed, row);
      for (int64_t c = 0; c < k; ++c) {
        const uint64_t h = Hash(seed, kAttn, row, c);
        out[c] =
            (h >> 16) % 48 == 0 ? kSpecialBits[(h >> 24) % kNumSpecial] : F32ToBf16(Gauss(h) * rs);
      }
      // Whole blocks: all NaN (scale byte 0x7F, a NaN accumulator), all -0, all subnormal.
      const uint64_t hr = Hash(seed, kRowSpecial, row, 0);
      const int64_t b = static_cast<int64_t>((hr >> 8) % static_cast<uint64_t>(k / 16));
      const int what = static_cast<int>(hr % 8);
      for (int i = 0; i < 16 && what < 3; ++i) {
        out[b * 16 + i] = what == 0 ? 0x7FC0 : what == 1 ? 0x8000 : static_cast<uint16_t>(1 + i);
      }
      return;
    }
  }
}

void ResidualRow(DataKind kind, uint64_t seed, int64_t row, int64_t n, uint16_t* out) {
  const float rs = std::ldexp(1.0f, static_cast<int>(Hash(seed, kResidualScale, row, 0) % 3) - 1);
  for (int64_t c = 0; c < n; ++c) {
    const uint64_t h = Hash(seed, kResidual, row, c);
    if (kind == DataKind::kSpecial && (h >> 16) % 64 == 0) {
      out[c] = kSpecialBits[(h >> 24) % kNumSpecial];
    } else {
      out[c] = F32ToBf16(Gauss(h) * rs);
    }
  }
}

absl::StatusOr<QuantizedWeight> MakeWeight(uint64_t seed, int64_t n, int64_t k, bool exact) {
  if (exact) {
    // Random codes (every one of the 16), scales 0.5 or 1, global scale 1: with the exact
    // activations every product is a multiple of 2^-3 below 72 in magnitude, so every partial
    // sum over K <= 7168 is a multiple of 2^-3 below 2^19: exact in f32.
    QuantizedWeight w;
    w.n = n;
    w.k = k;
    w.global_scale = 1.f;
    w.q.resize(static_cast<size_t>(n * (k / 2)));
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t j = 0; j < k / 2; ++j) {
        w.q[r * (k / 2) + j] = static_cast<uint8_t>(Hash(seed, kWeight, r, j) & 0xFF);
      }
    }
    std::vector<uint8_t> linear(static_cast<size_t>(n * (k / 16)));
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t b = 0; b < k / 16; ++b) {
        // UE4M3 0x30 = 2^-1, 0x38 = 2^0.
        linear[r * (k / 16) + b] = (Hash(seed, kWeightScale, r, b) & 1) ? 0x38 : 0x30;
      }
    }
    w.sf = SwizzleScales(linear, n, k / 16);
    return w;
  }
  std::vector<uint16_t> bf(static_cast<size_t>(n * k));
  ParallelFor(n, static_cast<int>(std::thread::hardware_concurrency()),
              [&](int64_t begin, int64_t end) {
                for (int64_t r = begin; r < end; ++r) {
                  const float scale = Hash(seed, kWeightRow, r, 0) % 50 == 0 ? 0.16f : 0.02f;
                  for (int64_t c = 0; c < k; ++c) {
                    bf[r * k + c] = F32ToBf16(Gauss(Hash(seed, kWeight, r, c)) * scale);
                  }
                }
              });
  return QuantizeWeightBf16(bf, n, k);
}

// Names in enum order.
constexpr absl::string_view kDataKindNames[] = {"exact", "gauss", "heavy", "special", "saturate"};
static_assert(std::size(kDataKindNames) == static_cast<size_t>(DataKind::kSaturate) + 1);
constexpr absl::string_view kGatePatternNames[] = {"valid",  "padruns", "idxG",  "intmin",
                                                   "intmax", "mixed",   "onerow"};
static_assert(std::size(kGatePatternNames) == static_cast<size_t>(GatePattern::kOneRow) + 1);

}  // namespace

absl::string_view DataKindName(DataKind kind) { return kDataKindNames[static_cast<size_t>(kind)]; }

absl::string_view GatePatternName(GatePattern pattern) {
  return kGatePatternNames[static_cast<size_t>(pattern)];
}

float GaussianBound() { return GaussianTable()[65535]; }

absl::StatusOr<std::shared_ptr<const QuantizedWeight>> WeightCache::Get(int64_t n, int64_t k,
                                                                        bool exact) {
  std::lock_guard<std::mutex> lock(mu_);
  auto key = std::make_tuple(n, k, exact);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  absl::StatusOr<QuantizedWeight> w = MakeWeight(seed_, n, k, exact);
  if (!w.ok()) return w.status();
  auto ptr = std::make_shared<const QuantizedWeight>(*std::move(w));
  cache_.emplace(key, ptr);
  return ptr;
}

int32_t GateIndexFor(GatePattern pattern, uint64_t seed, int64_t row, int64_t m, int64_t g) {
  const uint64_t h = Hash(seed, kGateIndex, row, 0);
  const int32_t valid = static_cast<int32_t>(h % static_cast<uint64_t>(g));
  const int32_t big_g = static_cast<int32_t>(g);
  switch (pattern) {
    case GatePattern::kAllValid:
      return valid;
    case GatePattern::kPaddingRuns:
      // Runs of 37 rows, one in three padded, and the last M/16 rows padded.
      if (Hash(seed, kGateIndex, row / 37, 1) % 3 == 0 || row >= m - m / 16) return -1;
      return valid;
    case GatePattern::kIndexG:
      return (h >> 32) % 4 == 0 ? big_g : valid;
    case GatePattern::kIntMin:
      return (h >> 32) % 4 == 0 ? std::numeric_limits<int32_t>::min() : valid;
    case GatePattern::kIntMax:
      return (h >> 32) % 4 == 0 ? std::numeric_limits<int32_t>::max() : valid;
    case GatePattern::kMixedInvalid: {
      switch ((h >> 32) % 8) {
        case 0:
          return -1;
        case 1:
          return big_g;
        case 2:
          return std::numeric_limits<int32_t>::min();
        case 3:
          return std::numeric_limits<int32_t>::max();
        default:
          return valid;
      }
    }
    case GatePattern::kOneRow:
      return big_g - 1;
  }
  return valid;
}

float ActGlobalScaleFor(DataKind kind) {
  const float gauss_amax = GaussianBound() * 4.f;  // table end times the largest row scale
  switch (kind) {
    case DataKind::kExact:
      return 2.f;
    case DataKind::kGaussian:
    case DataKind::kSpecial:
      return 2688.f / gauss_amax;
    case DataKind::kHeavyTail:
      return 2688.f / (GaussianBound() * 24.f);
    case DataKind::kSaturate:
      return 16.f * 2688.f / gauss_amax;
  }
  return 1.f;
}

absl::string_view SmoothPatternName(SmoothPattern pattern) {
  switch (pattern) {
    case SmoothPattern::kNone:
      return "";
    case SmoothPattern::kLogNormal:
      return "lognormal";
    case SmoothPattern::kPow2Block:
      return "pow2block";
    case SmoothPattern::kExtreme:
      return "extreme";
  }
  return "?";
}

namespace {

// act_smooth[c] of a pattern (column-deterministic). kExtreme's values: every edge section 12
// lists - the sign of zero, an exact sign flip, f32 subnormals (gradual underflow in x * s),
// factors whose products overflow f32 or round to bf16 Inf - beside ordinary ones.
float SmoothFactor(SmoothPattern pattern, uint64_t seed, int64_t c) {
  static constexpr float kEdges[] = {0.0f,         -0.0f,       -1.0f,  1.0f,  0x1p-140f,
                                     0x1p-149f,    0x1p-126f,   1e-30f, 1e30f, -3.4e38f,
                                     0x1.fep127f,  0x1.01p127f, 448.0f, 0x1p-60f};
  const uint64_t h = Hash(seed, kSmooth, 0, static_cast<uint64_t>(c));
  switch (pattern) {
    case SmoothPattern::kNone:
      return 1.0f;
    case SmoothPattern::kLogNormal:
      return std::exp2(static_cast<float>(Gauss(h)));
    case SmoothPattern::kPow2Block:
      return std::ldexp(1.0f, static_cast<int>(Hash(seed, kSmooth, 1, c / 16) % 5) - 2);
    case SmoothPattern::kExtreme:
      if (h % 4 == 0) return kEdges[(h >> 8) % (sizeof(kEdges) / sizeof(kEdges[0]))];
      return std::exp2(static_cast<float>(Gauss(h)));
  }
  return 1.0f;
}

}  // namespace

OpInputs InputsOf(const Problem& p, absl::Span<const uint16_t> residual) {
  OpInputs in;
  in.shape = p.shape;
  in.attn_out = p.attn_out;
  in.o_weight_q = p.weight->q;
  in.o_weight_sf = p.weight->sf;
  in.o_weight_global_scale = p.weight->global_scale;
  in.act_global_scale = p.act_global_scale;
  in.gate = p.gate;
  in.gate_index = p.gate_index;
  in.residual = residual;
  in.act_smooth = p.act_smooth;
  in.lora_down = p.lora_down;
  in.lora_up = p.lora_up;
  return in;
}

OpInputs InputsOf(const Problem& p) { return InputsOf(p, p.residual); }

absl::StatusOr<Problem> GenerateProblem(const ProblemSpec& spec, uint64_t seed,
                                        absl::Span<const int64_t> rows, WeightCache& weights,
                                        int threads) {
  const OpShape& s = spec.shape;
  if (s.k % kScaleBlock != 0 || s.k < kScaleBlock || s.n < 1 || s.g < 1 || s.m < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("GenerateProblem: shape m=", s.m, " n=", s.n, " k=", s.k, " g=", s.g,
                     ": expected m >= 0, n >= 1, k a positive multiple of 16, g >= 1"));
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= s.m || (i > 0 && rows[i] <= rows[i - 1])) {
      return absl::InvalidArgumentError(absl::StrCat("GenerateProblem: rows[", i, "] = ", rows[i],
                                                     ": expected ascending rows in [0, ", s.m,
                                                     ")"));
    }
  }
  Problem p;
  p.case_m = s.m;
  p.rows.assign(rows.begin(), rows.end());
  p.shape = s;
  p.shape.m = static_cast<int64_t>(rows.size());
  absl::StatusOr<std::shared_ptr<const QuantizedWeight>> w =
      weights.Get(s.n, s.k, spec.data == DataKind::kExact);
  if (!w.ok()) return w.status();
  p.weight = *w;
  p.act_global_scale = ActGlobalScaleFor(spec.data);
  if (spec.smooth != SmoothPattern::kNone) {
    p.act_smooth.resize(static_cast<size_t>(s.k));
    for (int64_t c = 0; c < s.k; ++c) p.act_smooth[c] = SmoothFactor(spec.smooth, seed, c);
  }
  if (spec.lora_rank > 0) {
    const int64_t r = spec.lora_rank;
    const bool zero = spec.data == DataKind::kExact;
    const float down_sd = 1.0f / std::sqrt(static_cast<float>(s.k));
    p.lora_down.resize(static_cast<size_t>(r * s.k));
    p.lora_up.resize(static_cast<size_t>(s.n * r));
    for (int64_t j = 0; j < r; ++j)
      for (int64_t c = 0; c < s.k; ++c)
        p.lora_down[j * s.k + c] =
            zero ? 0 : F32ToBf16(down_sd * Gauss(Hash(seed, kLoraDown, j, c)));
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t j = 0; j < r; ++j)
        p.lora_up[n * r + j] = zero ? 0 : F32ToBf16(0.02f * Gauss(Hash(seed, kLoraUp, n, j)));
  }

  const int64_t r = p.shape.m;
  p.attn_out.resize(static_cast<size_t>(r * s.k));
  p.residual.resize(static_cast<size_t>(r * s.n));
  p.gate_index.resize(static_cast<size_t>(r));
  ParallelFor(r, threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t row = p.rows[i];
      AttnRow(spec.data, seed, row, s.k, &p.attn_out[i * s.k]);
      ResidualRow(spec.data, seed, row, s.n, &p.residual[i * s.n]);
      p.gate_index[i] = GateIndexFor(spec.gate, seed, row, s.m, s.g);
    }
  });

  // Gate rows: AdaLN-like values around 0.5; special data puts NaN, Inf, +-0 in row 0.
  p.gate.resize(static_cast<size_t>(s.g * s.n));
  for (int64_t gi = 0; gi < s.g; ++gi) {
    for (int64_t c = 0; c < s.n; ++c) {
      const uint64_t h = Hash(seed, kGate, gi, c);
      uint16_t v = F32ToBf16(0.5f + 0.25f * Gauss(h));
      if (spec.data == DataKind::kSpecial && gi == 0 && (h >> 16) % 16 == 0) {
        v = kSpecialBits[(h >> 24) % kNumSpecial];
      }
      p.gate[gi * s.n + c] = v;
    }
  }
  return p;
}

absl::StatusOr<Problem> GenerateProblem(const ProblemSpec& spec, uint64_t seed) {
  WeightCache weights(seed);
  return GenerateProblem(spec, seed, AllRows(spec.shape.m), weights,
                         static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

}  // namespace h3::testbed
