#include "emulator/check_branch.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <vector>

#include "core/formats.h"
#include "emulator/check.h"
#include "emulator/epilogue.h"
#include "emulator/formats.h"

// Compiled with -ffp-contract=off: o = acc * alpha below is one rounding, as in the op.

namespace h3 {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kF32Max = std::numeric_limits<float>::max();
const float kBf16Max = Bf16ToF32(0x7F7F);

int BitLen(uint64_t v) { return v == 0 ? 0 : 64 - __builtin_clzll(v); }
uint64_t Mag(int64_t m) { return m < 0 ? 0 - static_cast<uint64_t>(m) : static_cast<uint64_t>(m); }

// floor (or ceil) of d * 2^-q. The caller picks q so that the result fits (see FiniteSum).
__int128 Scaled(Dyadic d, int q, bool ceil) {
  if (d.mant == 0) return 0;
  const int s = d.exp - q;
  if (s >= 0) return static_cast<__int128>(d.mant) * (static_cast<__int128>(1) << s);
  if (s <= -63) return d.mant > 0 ? (ceil ? 1 : 0) : (ceil ? 0 : -1);
  const int64_t floor = d.mant >> -s;  // arithmetic shift: floor
  const bool inexact = (d.mant & ((int64_t{1} << -s) - 1)) != 0;
  return floor + ((ceil && inexact) ? 1 : 0);
}

// v * 2^q rounded to binary32 in `mode` (subnormals kept; beyond the range: +-Inf when rounding
// the magnitude up or to nearest, +-FLT_MAX when truncating). v != 0.
float RoundScaled(__int128 v, int q, RoundMode mode) {
  const bool neg = v < 0;
  const unsigned __int128 mag =
      neg ? 0 - static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  const uint64_t hi = static_cast<uint64_t>(mag >> 64);
  const int len = hi != 0 ? 64 + BitLen(hi) : BitLen(static_cast<uint64_t>(mag));
  const bool up_dir =
      (mode == RoundMode::kTowardPositive && !neg) || (mode == RoundMode::kTowardNegative && neg);
  const int e = std::max(q + len - 24, -149);  // the result's lsb exponent
  float f;
  if (e > 104) {
    f = (mode == RoundMode::kNearestEven || up_dir) ? kInf : kF32Max;
  } else {
    uint64_t kept;
    if (e <= q) {
      kept = static_cast<uint64_t>(mag) << (q - e);  // exact, < 2^24
    } else {
      const int s = e - q;
      const unsigned __int128 k = s >= 128 ? 0 : mag >> s;
      const unsigned __int128 rem =
          s >= 128 ? mag : mag & ((static_cast<unsigned __int128>(1) << s) - 1);
      kept = static_cast<uint64_t>(k);
      bool up = false;
      if (mode == RoundMode::kNearestEven) {
        const unsigned __int128 half = s >= 129 ? 0 : static_cast<unsigned __int128>(1) << (s - 1);
        up = s < 129 && (rem > half || (rem == half && (kept & 1)));
      } else {
        up = up_dir && rem != 0;
      }
      if (up) ++kept;  // 2^24 is still exact
    }
    const double value = std::ldexp(static_cast<double>(kept), e);  // exact
    f = value > kF32Max ? ((mode == RoundMode::kNearestEven || up_dir) ? kInf : kF32Max)
                        : static_cast<float>(value);
  }
  return neg ? -f : f;
}

bool AtLeast2To127(__int128 units, int q) {
  const int need = 127 - q;
  if (need <= 0) return units > 0;
  return need < 126 && units >= (static_cast<__int128>(1) << need);
}

ValueSet Anything() {
  ValueSet s;
  s.nan = s.neg_inf = s.pos_inf = s.finite = true;
  s.lo = -kF32Max;
  s.hi = kF32Max;
  return s;
}

ValueSet Point(float v) {
  ValueSet s;
  s.finite = true;
  s.lo = s.hi = v;
  if (v == 0.0f) {
    s.lo = -0.0f;
    s.hi = 0.0f;
  }
  return s;
}

// Section 13.1's finite rules, every term finite.
ValueSet FiniteSum(absl::Span<const TermSet> terms, int64_t t) {
  int top = INT_MIN, lsb = INT_MAX;  // |term| < 2^top; every term a multiple of 2^lsb
  bool points = true;
  for (const TermSet& x : terms) {
    points = points && x.lo.mant == x.hi.mant && x.lo.exp == x.hi.exp;
    for (const Dyadic& d : {x.lo, x.hi}) {
      if (d.mant == 0) continue;
      top = std::max(top, d.exp + BitLen(Mag(d.mant)));
      lsb = std::min(lsb, d.exp);
    }
  }
  if (top == INT_MIN) return Point(0.0f);
  // Exact case: every term binary32 (lsb >= -149, |term| < 2^128), A < 2^(lsb + 24). Past
  // top - lsb = 24 the largest term alone is >= 2^(lsb + 24).
  if (points && lsb >= -149 && top <= 128 && top - lsb <= 24) {
    __int128 sum = 0, abs = 0;
    for (const TermSet& x : terms) {
      const __int128 v = Scaled(x.lo, lsb, false);
      sum += v;
      abs += v < 0 ? -v : v;
    }
    if (AtLeast2To127(abs, lsb)) return Anything();
    if (abs < (static_cast<__int128>(1) << 24)) {
      return Point(sum == 0 ? 0.0f : RoundScaled(sum, lsb, RoundMode::kNearestEven));
    }
  }
  // General case in units of 2^q, each sum rounded outward where a term has bits below 2^q. q
  // is as fine as (t - 1) * (A + slack) < 2^126 allows: 2^q is below 2^-(122 - 2 log2 t) of the
  // largest term, so the outward rounding is far below the bound's (t - 1) 2^-24 A.
  const int tb = BitLen(static_cast<uint64_t>(t));
  const int top_g = std::max(top, -150 + tb);  // the slack t 2^-150 as a term
  const int q = top_g + 2 * tb + 2 - 126;
  __int128 smin = 0, smax = 0, amax = 0;
  for (const TermSet& x : terms) {
    const __int128 lo = Scaled(x.lo, q, false), hi = Scaled(x.hi, q, true);
    smin += lo;
    smax += hi;
    amax += std::max(-lo, hi);  // ceil of max |term| over [lo, hi]
  }
  if (AtLeast2To127(amax, q)) return Anything();
  const int slack_shift = -150 - q;  // slack = ceil(t * 2^-150 / 2^q)
  __int128 slack = 1;                // t 2^-150 < 2^q when q > -150 + 63
  if (slack_shift >= 0) {
    slack = static_cast<__int128>(t) << slack_shift;
  } else if (slack_shift > -63) {
    slack =
        (static_cast<__int128>(t) + (static_cast<__int128>(1) << -slack_shift) - 1) >> -slack_shift;
  }
  const __int128 b =
      ((static_cast<__int128>(t - 1) * (amax + slack) + ((1 << 24) - 1)) >> 24) + slack;
  ValueSet s;
  s.finite = true;
  const __int128 lo = smin - b, hi = smax + b;
  s.lo = lo == 0 ? -0.0f : RoundScaled(lo, q, RoundMode::kTowardPositive);
  s.hi = hi == 0 ? 0.0f : RoundScaled(hi, q, RoundMode::kTowardNegative);
  if (s.lo == 0.0f) s.lo = -0.0f;  // a zero end stands for both zeros
  if (s.hi == 0.0f) s.hi = 0.0f;
  return s;
}

}  // namespace

Dyadic DyadicOf(float f) {
  const uint32_t u = F32Bits(f);
  const int field = static_cast<int>((u >> 23) & 0xFF);
  int64_t m = u & 0x7FFFFF;
  int e = -149;
  if (field != 0) {
    m |= 0x800000;
    e = field - 150;
  }
  Dyadic d;
  if (m == 0) return d;
  const int tz = __builtin_ctzll(static_cast<uint64_t>(m));
  d.mant = (u >> 31) ? -(m >> tz) : (m >> tz);
  d.exp = e + tz;
  return d;
}

Dyadic DyadicProduct(Dyadic a, Dyadic b) {
  if (a.mant == 0 || b.mant == 0) return Dyadic{};
  return Dyadic{a.mant * b.mant, a.exp + b.exp};  // odd * odd is odd; < 2^48
}

bool IsOneValue(const ValueSet& s) {
  const int options = s.nan + s.neg_inf + s.pos_inf + s.finite;
  return options == 1 && (!s.finite || s.lo == s.hi);
}

ValueSet SumSet(absl::Span<const TermSet> terms, int64_t t) {
  int64_t n_pos = 0, n_neg = 0, n_both = 0, bad_pos = 0, bad_neg = 0, n_not_finite = 0;
  bool nan = false;
  for (const TermSet& x : terms) {
    nan = nan || x.nan;
    n_pos += x.pos_inf;
    n_neg += x.neg_inf;
    n_both += x.pos_inf && x.neg_inf;
    bad_pos += !(x.finite || x.pos_inf);  // only NaN or -Inf: this term rules +Inf out
    bad_neg += !(x.finite || x.neg_inf);
    n_not_finite += !x.finite;
  }
  ValueSet s;
  if (n_not_finite == 0) s = FiniteSum(terms, t);
  // A NaN term, or infinities of both signs from two different terms.
  s.nan = s.nan || nan || (n_pos > 0 && n_neg > 0 && !(n_pos == 1 && n_neg == 1 && n_both == 1));
  // One infinity where every other term can be finite or that same infinity.
  s.pos_inf = s.pos_inf || (n_pos > 0 && bad_pos == 0);
  s.neg_inf = s.neg_inf || (n_neg > 0 && bad_neg == 0);
  return s;
}

ValueSet Bf16Of(const ValueSet& lambda) {
  ValueSet l = lambda;
  if (!lambda.finite) return l;
  const float lo = Bf16ToF32(F32ToBf16(lambda.lo)), hi = Bf16ToF32(F32ToBf16(lambda.hi));
  l.neg_inf = l.neg_inf || lo == -kInf;
  l.pos_inf = l.pos_inf || hi == kInf;
  l.finite = !(lo == hi && std::isinf(lo));
  l.lo = std::max(lo, -kBf16Max);
  l.hi = std::min(hi, kBf16Max);
  return l;
}

ValueSet OOf(const AccInterval& acc, float alpha) {
  ValueSet s;
  if (acc.nan) {
    s.nan = true;
    return s;
  }
  if (std::isinf(alpha)) {  // +-Inf from nonzero acc, NaN from a zero one
    s.neg_inf = acc.lo < 0.0f;
    s.pos_inf = acc.hi > 0.0f;
    s.nan = acc.lo <= 0.0f && acc.hi >= 0.0f;
    return s;
  }
  volatile float vlo = acc.lo * alpha;  // monotone in acc: alpha >= 0
  volatile float vhi = acc.hi * alpha;
  const float lo = vlo, hi = vhi;
  s.neg_inf = lo == -kInf;
  s.pos_inf = hi == kInf;
  s.finite = !(lo == hi && std::isinf(lo));
  s.lo = std::max(lo, -kF32Max);
  s.hi = std::min(hi, kF32Max);
  return s;
}

TermSet TermOf(const ValueSet& s) {
  TermSet t;
  t.nan = s.nan;
  t.neg_inf = s.neg_inf;
  t.pos_inf = s.pos_inf;
  t.finite = s.finite;
  if (s.finite) {
    t.lo = DyadicOf(s.lo);
    t.hi = DyadicOf(s.hi);
  }
  return t;
}

TermSet ProductTerm(const ValueSet& l, float u) {
  TermSet t;
  const bool zero = u == 0.0f;
  t.nan = l.nan || (zero && (l.neg_inf || l.pos_inf));  // NaN * u, Inf * 0
  if (!zero) {
    t.pos_inf = u > 0.0f ? l.pos_inf : l.neg_inf;
    t.neg_inf = u > 0.0f ? l.neg_inf : l.pos_inf;
  }
  t.finite = l.finite;
  if (l.finite) {
    const Dyadic du = DyadicOf(u);
    t.lo = DyadicProduct(DyadicOf(u > 0.0f ? l.lo : l.hi), du);
    t.hi = DyadicProduct(DyadicOf(u > 0.0f ? l.hi : l.lo), du);
  }
  return t;
}

void EnvelopeOfCandidates(const uint16_t* cand, int count, uint16_t* lo, uint16_t* hi) {
  bool any_nan = false, any_num = false;
  int32_t kmin = 0, kmax = 0;
  for (int i = 0; i < count; ++i) {
    if (cand[i] == kBf16CanonicalNaN) {
      any_nan = true;
      continue;
    }
    const int32_t key = Bf16OrderKey(cand[i]);
    if (!any_num || key < kmin) {
      kmin = key;
      *lo = cand[i];
    }
    if (!any_num || key > kmax) {
      kmax = key;
      *hi = cand[i];
    }
    any_num = true;
  }
  if (!any_num) {
    *lo = *hi = kBf16CanonicalNaN;
  } else if (any_nan) {
    *hi = kBf16CanonicalNaN;  // top of the total order: the interval admits the NaN too
  }
}

void OutOfVSet(const ValueSet& v, uint16_t gate, uint16_t residual, uint16_t* lo, uint16_t* hi) {
  uint16_t cand[7];
  int nc = 0;
  if (v.finite) {
    cand[nc++] = EpilogueFromO(v.lo, gate, residual);
    cand[nc++] = EpilogueFromO(v.hi, gate, residual);
    if (v.lo <= 0.0f && v.hi >= 0.0f) {  // gate * v with an infinite gate is NaN only at zero
      cand[nc++] = EpilogueFromO(-0.0f, gate, residual);
      cand[nc++] = EpilogueFromO(0.0f, gate, residual);
    }
  }
  if (v.neg_inf) cand[nc++] = EpilogueFromO(-kInf, gate, residual);
  if (v.pos_inf) cand[nc++] = EpilogueFromO(kInf, gate, residual);
  if (v.nan) cand[nc++] = kBf16CanonicalNaN;
  EnvelopeOfCandidates(cand, nc, lo, hi);
}

void BranchRowEnvelope(const uint16_t* xs, int64_t k, absl::Span<const uint16_t> down,
                       absl::Span<const uint16_t> up, int64_t rank,
                       absl::Span<const AccInterval> acc, float alpha, const uint16_t* gate,
                       const uint16_t* residual, uint16_t* lo, uint16_t* hi, uint8_t* exact) {
  // Step 1: each l_j's set, lambda_j by section 13.1 with T = k terms.
  std::vector<TermSet> terms(std::max<int64_t>(k, rank + 1));
  std::vector<ValueSet> l(rank);
  for (int64_t j = 0; j < rank; ++j) {
    const uint16_t* d = down.data() + j * k;
    for (int64_t i = 0; i < k; ++i) {
      const float x = Bf16ToF32(xs[i]), w = Bf16ToF32(d[i]);
      TermSet& t = terms[i];
      t = TermSet{};
      if (std::isnan(x) || (std::isinf(x) && w == 0.0f)) {
        t.nan = true;
      } else if (std::isinf(x)) {
        (std::signbit(x) != std::signbit(w) ? t.neg_inf : t.pos_inf) = true;
      } else {
        t.finite = true;
        t.lo = t.hi = DyadicProduct(DyadicOf(x), DyadicOf(w));
      }
    }
    l[j] = Bf16Of(SumSet(absl::MakeConstSpan(terms.data(), k), k));
  }
  // Step 2: v = o + sum_j l_j u_j with T = rank + 1 terms; step 3 the epilogue on v's set.
  const int64_t n = static_cast<int64_t>(acc.size());
  for (int64_t c = 0; c < n; ++c) {
    terms[0] = TermOf(OOf(acc[c], alpha));
    const uint16_t* u = up.data() + c * rank;
    for (int64_t j = 0; j < rank; ++j) terms[j + 1] = ProductTerm(l[j], Bf16ToF32(u[j]));
    const ValueSet v = SumSet(absl::MakeConstSpan(terms.data(), rank + 1), rank + 1);
    OutOfVSet(v, gate[c], residual[c], &lo[c], &hi[c]);
    exact[c] = IsOneValue(v) ? 1 : 0;
  }
}

}  // namespace h3
