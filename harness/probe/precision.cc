// The precision and conversion halves of the probe's judgement: each element of the
// precision cases against section 8 (bit for bit where the data is exact, within the bound
// elsewhere), the candidate accumulation models each element is consistent with, and the e2m1
// conversion against section 2.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/formats.h"
#include "emulator/formats.h"
#include "harness/probe/judge_internal.h"
#include "harness/probe/probe.h"

namespace h3::probe {
namespace {

struct Terms {
  bool nan = false;
  Exact c;
  float cf = 0;
  Exact p[64];
};

Terms MakeTerms(const Operands& o, int m, int n) {
  Terms t;
  t.cf = o.C[m][n];
  for (int b = 0; b < 4; ++b) t.nan = t.nan || E4M3IsNaN(o.SA[m][b]) || E4M3IsNaN(o.SB[n][b]);
  if (std::isnan(t.cf)) t.nan = true;
  if (t.nan) return t;
  t.c = Exact::FromFloat(t.cf);
  for (int k = 0; k < 64; ++k) {
    const int b = k / 16;
    const int64_t v = int64_t{E2M1TimesTwo(o.A[m][k])} * E2M1TimesTwo(o.B[k][n]) *
                      int64_t{E4M3Times512(o.SA[m][b])} * E4M3Times512(o.SB[n][b]);
    t.p[k] = Exact::FromScaledInt(v, -20);  // (2a)(2b)(512 sa)(512 sb) = 2^20 a b sa sb
  }
  return t;
}

struct ElemVerdict {
  bool ok = true;
  bool exact_case = false;
  Exact s, a, bound;
};

// Section 8 for one instruction: the 64 products and C are 65 terms, so B = 64 * 2^-24 * A.
ElemVerdict JudgeValue(const Terms& t, float got) {
  ElemVerdict v;
  if (t.nan) {
    v.ok = std::isnan(got);
    return v;
  }
  v.s = t.c;
  v.a = t.c.Abs();
  int e = t.c.IsZero() ? 1000 : t.c.LsbExp();
  for (const Exact& p : t.p) {
    v.s = v.s + p;
    v.a = v.a + p.Abs();
    if (!p.IsZero()) e = std::min(e, p.LsbExp());
  }
  v.exact_case = v.a.IsZero() || v.a.MsbExp() < e + 24;
  v.bound = v.a.ShiftRight(18);
  if (!std::isfinite(got)) {
    v.ok = false;
  } else if (v.exact_case) {
    v.ok = Exact::FromFloat(got) == v.s;  // +-0 both admissible when S = 0
  } else {
    v.ok = (Exact::FromFloat(got) - v.s).Abs() <= v.bound;
  }
  return v;
}

const char* const kModelNames[kModels] = {
    "exact sum rounded once to nearest (the emulator's model)",
    "exact sum truncated once",
    "sequential round-to-nearest adds in k order",
    "sequential truncating adds in k order",
    "exact 16-block sums, round-to-nearest adds",
    "exact 16-block sums, truncating adds",
};
const char* const kModelShort[kModels] = {"exact-then-RN", "exact-then-RZ", "sequential-RN",
                                          "sequential-RZ", "block-RN",      "block-RZ"};

std::array<float, kModels> Models(const Terms& t) {
  Exact s = t.c;
  for (const Exact& p : t.p) s = s + p;
  float seq_rn = t.cf, seq_rz = t.cf, blk_rn = t.cf, blk_rz = t.cf;
  for (int k = 0; k < 64; ++k) {
    seq_rn = (Exact::FromFloat(seq_rn) + t.p[k]).ToFloatRN();
    seq_rz = (Exact::FromFloat(seq_rz) + t.p[k]).ToFloatRZ();
  }
  for (int b = 0; b < 4; ++b) {
    Exact blk;
    for (int k = 16 * b; k < 16 * b + 16; ++k) blk = blk + t.p[k];
    blk_rn = (Exact::FromFloat(blk_rn) + blk).ToFloatRN();
    blk_rz = (Exact::FromFloat(blk_rz) + blk).ToFloatRZ();
  }
  return {s.ToFloatRN(), s.ToFloatRZ(), seq_rn, seq_rz, blk_rn, blk_rz};
}

std::string MatchText(const std::array<float, kModels>& models, float got) {
  std::vector<std::string> hits;
  for (int i = 0; i < kModels; ++i) {
    if (Same(models[i], got)) hits.push_back(kModelShort[i]);
  }
  return hits.empty() ? "matches none of the candidate models"
                      : absl::StrCat("consistent with ", absl::StrJoin(hits, ", "));
}

// Subnormal cases: the scale a row / column with one uniform scale byte acted as.
std::string SubnormalHint(const MmaCase& mc, const Operands& o, const float D[16][8], int m,
                          int n) {
  uint8_t byte = 0;
  double implied = 0;
  const char* which = nullptr;
  if (mc.name == "subnormal/sfa" && m < 7) {
    byte = o.SA[m][0];
    implied = D[m][7] / (64.0 * 6.0);  // column 7: B = 6.0 everywhere
    which = "SFA";
  } else if (mc.name == "subnormal/sfb" && n < 7) {
    byte = o.SB[n][0];
    implied = D[7][n] / (64.0 * 6.0);  // row 7: A = 6.0 everywhere
    which = "SFB";
  } else {
    return "";
  }
  const double exact = Ue4m3ToF32(byte);
  std::string how;
  if (implied == 0) {
    how = " (flushed to zero)";
  } else if (implied == std::ldexp(1.0 + (byte & 7) / 8.0, -6)) {
    how = " (exponent field 0 read as a normal: 2^-6 * (1 + m/8))";
  }
  return absl::StrFormat("; %s 0x%02X (= %d * 2^-9 = %s) acted as %s%s", which, byte, byte & 7,
                         Num(exact), Num(implied), how);
}

std::string NanNote(const MmaCase& mc) {
  if (mc.name == "nan/sfa_zero_codes") {
    return "SFA 0x7F at row 3 block 1 (lane 12 byte 1), that block's A codes zero";
  }
  if (mc.name == "nan/sfb_codes") return "SFB 0x7F at column 5 block 2 (lane 20 byte 2)";
  if (mc.name == "nan/all_codes_zero") {
    return "A = B = C = 0, SFA 0x7F at row 0 block 0 (lane 0 byte 0), SFB 0x7F at column 7 "
           "block 3 (lane 28 byte 3)";
  }
  if (mc.name == "nan/ignored_lanes") return "0x7F only in the ignored scale lanes";
  if (mc.name == "nan/c_nan") return "C NaN at D[m, 3m mod 8]";
  return "";
}

const char* E2m1Category(float v) {
  const float a = std::fabs(v);
  if (std::isnan(v)) return "NaN";
  if (a <= 0.25f) return "zero sign";
  if (a > 6.0f) return "saturation";
  for (float t : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f}) {
    if (a == t) return "tie";
  }
  return "rounding";
}

}  // namespace

void PrecisionJudge::Case(const MmaCase& mc, const float D[16][8], GroupResult& g,
                          const JudgeOptions& opt) {
  const Operands o = Unpack(mc);
  const bool measure = mc.kind == MmaKind::kBound || mc.kind == MmaKind::kExact;
  if (measure) by_case_.push_back(CaseTally{mc.name});
  if (mc.name.rfind("bound/order_", 0) == 0) {
    order_[mc.name].assign(&D[0][0], &D[0][0] + 128);
  }
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 8; ++n) {
      const Terms t = MakeTerms(o, m, n);
      const float got = D[m][n];
      const ElemVerdict v = JudgeValue(t, got);
      ++g.checked;
      std::array<float, kModels> models{};
      if (measure && !t.nan) {
        models = Models(t);
        bool all_same = true;
        for (int i = 1; i < kModels; ++i) all_same = all_same && Same(models[i], models[0]);
        if (!all_same) {
          ++discriminating_;
          ++by_case_.back().disc;
          bool any = false;
          for (int i = 0; i < kModels; ++i) {
            if (Same(models[i], got)) {
              ++hits_[i];
              ++by_case_.back().hits[i];
              any = true;
            }
          }
          if (!any) {
            ++none_;
            ++by_case_.back().none;
          }
        }
        if (!v.exact_case && std::isfinite(got)) {
          const double err = (Exact::FromFloat(got) - v.s).Abs().ToDouble();
          const double ratio = err / v.bound.ToDouble();
          if (ratio > worst_ratio_) {
            worst_ratio_ = ratio;
            worst_where_ = absl::StrFormat("%s %s", mc.name, Elem(m, n));
          }
        }
        if (mc.name.rfind("bound/cancel_", 0) == 0) {
          auto& tally = cancel_[mc.name];
          if (Same(got, models[0])) {
            ++tally[0];
          } else if (got == 0.0f) {
            ++tally[1];
          } else {
            ++tally[2];
          }
        }
        if (mc.name == "bound/guard_ladder" && n <= 1) {
          // Columns 0 and 1: C = +2^24 and -2^24; row m: 64 terms t.
          static const char* const kT[16] = {"1",     "2^-1",  "2^-2",  "2^-3", "2^-4", "2^-5",
                                             "2^-6",  "2^-7",  "1.5",   "1.75", "1.25", "1.875",
                                             "1.125", "1.625", "1.375", "3"};
          const double inc = static_cast<double>(got) - t.cf;
          if (n == 0) {
            absl::StrAppend(&ladder_, ladder_.empty() ? "" : ", ", "t=", kT[m], ": ", Num(inc));
          } else {
            absl::StrAppend(&ladder_, "/", Num(inc), " (", Num(v.s.ToDouble() - t.cf), ")");
          }
        }
      }
      if (v.ok) continue;
      std::string text;
      if (t.nan) {
        text = absl::StrFormat("%s %s = %s, expected NaN (%s)", mc.name, Elem(m, n), Num(got),
                               NanNote(mc));
      } else if (mc.kind == MmaKind::kNan && std::isnan(got)) {
        text = absl::StrFormat("%s %s = NaN, expected %s (%s)", mc.name, Elem(m, n),
                               Num(v.s.ToFloatRN()), NanNote(mc));
      } else if (v.exact_case) {
        text = absl::StrFormat(
            "%s %s: got %s, exact %s (exact data: every partial sum fits 24 "
            "bits, bit for bit required)",
            mc.name, Elem(m, n), Num(got), Num(v.s.ToDouble()));
      } else {
        const double err =
            std::isfinite(got) ? (Exact::FromFloat(got) - v.s).Abs().ToDouble() : INFINITY;
        text = absl::StrFormat("%s %s: got %s, exact %s, |err| %s > bound %s", mc.name, Elem(m, n),
                               Num(got), Num(v.s.ToDouble()), Num(err), Num(v.bound.ToDouble()));
      }
      if (measure && !t.nan) absl::StrAppend(&text, " [", MatchText(models, got), "]");
      if (mc.kind == MmaKind::kSubnormal) absl::StrAppend(&text, SubnormalHint(mc, o, D, m, n));
      if (mc.kind == MmaKind::kNan && !t.nan && !std::isnan(got) && NanNote(mc).size()) {
        absl::StrAppend(&text, " (", NanNote(mc), ")");
      }
      AddFailure(g, opt, text);
    }
  }
}

void PrecisionJudge::AppendMeasurements(std::vector<std::string>& out) const {
  if (discriminating_ > 0) {
    std::vector<std::string> parts;
    for (int i = 0; i < kModels; ++i) {
      parts.push_back(absl::StrFormat("%s %d", kModelShort[i], hits_[i]));
    }
    out.push_back(absl::StrFormat(
        "accumulation: of %d elements (exact and bound groups) where the candidate models "
        "differ, D equals: %s; none of them: %d (RN = round to nearest even, RZ = truncation; "
        "an element can match several). By case:",
        discriminating_, absl::StrJoin(parts, ", "), none_));
  }
  for (const CaseTally& ct : by_case_) {
    if (ct.disc == 0) continue;
    // RN-consistent: one round-to-nearest model explains every element; truncation-consistent:
    // one truncating model does; else neither.
    std::string label = "neither RN- nor truncation-consistent";
    for (int i : {0, 2, 4, 1, 3, 5}) {
      if (ct.hits[i] == ct.disc) {
        label = absl::StrCat(i % 2 == 0 ? "RN-consistent (" : "truncation-consistent (",
                             kModelShort[i], ")");
        break;
      }
    }
    std::vector<std::string> parts;
    for (int i = 0; i < kModels; ++i) {
      parts.push_back(absl::StrFormat("%s %d", kModelShort[i], ct.hits[i]));
    }
    out.push_back(absl::StrFormat("  %s: %s; of %d elements: %s, none %d", ct.name, label, ct.disc,
                                  absl::StrJoin(parts, ", "), ct.none));
  }
  if (!ladder_.empty()) {
    out.push_back(
        absl::StrCat("guard ladder, D - C for C = +2^24 / C = -2^24 (exact) and 64 equal terms t "
                     "(ulp(2^24) = 2: terms of 1 and below need guard bits or exact grouping): ",
                     ladder_));
  }
  for (const auto& [name, tally] : cancel_) {
    out.push_back(absl::StrFormat(
        "%s: D = the exact small-term sum (rounded once) in %d/128, 0 (small terms lost) in "
        "%d/128, other in %d/128",
        name, tally[0], tally[1], tally[2]));
  }
  if (order_.count("bound/order_base")) {
    const std::vector<float>& base = order_.at("bound/order_base");
    std::vector<std::string> parts;
    for (const auto& [name, d] : order_) {
      if (name == "bound/order_base") continue;
      int diff = 0;
      for (int i = 0; i < 128; ++i) diff += F32Bits(d[i]) != F32Bits(base[i]);
      parts.push_back(absl::StrFormat("%s %d/128", name.substr(12), diff));
    }
    out.push_back(
        absl::StrCat("order: elements whose D changes when the same 64 products are k-permuted: ",
                     absl::StrJoin(parts, ", ")));
  }
  if (worst_ratio_ > 0) {
    out.push_back(
        absl::StrFormat("largest |D - exact| / bound over the non-exact elements: %.4f (%s)",
                        worst_ratio_, worst_where_));
  }
}

void JudgeE2m1(const ProbeCases& cases, const DeviceResults& results, GroupResult& g,
               const JudgeOptions& opt) {
  const size_t n = cases.e2m1.even.size();
  if (results.e2m1.size() != n) {
    AddFailure(
        g, opt,
        absl::StrFormat("the device returned %d conversions, expected %d", results.e2m1.size(), n));
  } else {
    for (size_t i = 0; i < n; ++i) {
      for (int half = 0; half < 2; ++half) {
        const float v = half ? cases.e2m1.odd[i] : cases.e2m1.even[i];
        const uint8_t want = F32ToE2M1(v);
        const uint8_t got = (results.e2m1[i] >> (4 * half)) & 0xF;
        ++g.checked;
        if (got == want) continue;
        AddFailure(g, opt,
                   absl::StrFormat("e2m1: %s nibble (%s element) %s (0x%08X): got 0x%X, "
                                   "contract 0x%X [%s]",
                                   half ? "high" : "low", half ? "odd" : "even", Num(v), F32Bits(v),
                                   got, want, E2m1Category(v)));
      }
    }
  }
}

std::string RawCvtMeasurement(const ProbeCases& cases, const DeviceResults& results) {
  if (results.raw_cvt.empty() || results.raw_cvt.size() != cases.e2m1.even.size()) {
    return "raw cvt.rn.satfinite.e2m1x2.f32: not measured (no SM12x instruction on this device)";
  }
  std::map<std::string, int> diffs;
  std::map<std::string, std::string> example;
  int64_t total = 0;
  for (size_t i = 0; i < results.raw_cvt.size(); ++i) {
    for (int half = 0; half < 2; ++half) {
      const float v = half ? cases.e2m1.odd[i] : cases.e2m1.even[i];
      const uint8_t want = F32ToE2M1(v);
      const uint8_t got = (results.raw_cvt[i] >> (4 * half)) & 0xF;
      ++total;
      if (got == want) continue;
      const std::string cat = E2m1Category(v);
      if (diffs[cat]++ == 0) {
        example[cat] =
            absl::StrFormat("%s (0x%08X) -> 0x%X, contract 0x%X", Num(v), F32Bits(v), got, want);
      }
    }
  }
  if (diffs.empty()) {
    return absl::StrFormat(
        "raw cvt.rn.satfinite.e2m1x2.f32 equals the contract on all %d values (NaN -> 0x7, the "
        "sign of a zero result kept)",
        total);
  }
  std::vector<std::string> parts;
  for (const auto& [cat, count] : diffs) {
    parts.push_back(absl::StrFormat("%s %d (e.g. %s)", cat, count, example.at(cat)));
  }
  return absl::StrFormat(
      "raw cvt.rn.satfinite.e2m1x2.f32 differs from the contract on: %s; Arch::E2m1Byte forces "
      "NaN -> 0x7 and the zero sign after it (judged above)",
      absl::StrJoin(parts, "; "));
}

}  // namespace h3::probe
