// The probe's judgement on the CPU, against simulated devices: the contract's model passes every
// check; devices with a deliberate fault (two lanes' registers swapped, a wrong scale byte or
// lane, truncating accumulation, flushed subnormal scales, a NaN scale ignored over zero codes,
// the e2m1 zero sign lost) fail exactly the group of that fault, and the failure names it in
// contract terms. A Hopper-like fused accumulator (the sm_90a emulation's bf16 MMAs: groups of
// 16 products aligned to the largest term, truncated, normalized toward zero) passes with one or
// more guard bits, which is what the H200 run of the probe relies on.

#include "harness/probe/probe.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "core/formats.h"
#include "emulator/formats.h"
#include "emulator/mma_model.h"

namespace h3::probe {
namespace {

// ---- a simulated device ----

using ElementFn = std::function<float(const Operands& o, int m, int n)>;

struct Sim {
  std::function<void(MmaCase&)> inputs;                // register-level fault before the arithmetic
  ElementFn element;                                   // arithmetic per D element; null: the model
  std::function<void(float (&)[32][4])> outputs;       // fault on the D registers
  std::function<uint8_t(float even, float odd)> e2m1;  // null: F32ToE2M1
};

DeviceResults Simulate(const ProbeCases& pc, const Sim& sim) {
  DeviceResults r;
  r.device = "simulated device";
  r.device_code = "simulation";
  r.native = true;
  r.d.resize(pc.mma.size() * 128);
  for (size_t i = 0; i < pc.mma.size(); ++i) {
    MmaCase mc = pc.mma[i];
    if (sim.inputs) sim.inputs(mc);
    float d[32][4];
    if (sim.element) {
      const Operands o = Unpack(mc);
      for (int m = 0; m < 16; ++m) {
        for (int n = 0; n < 8; ++n) {
          int lane, reg;
          CLocation(m, n, &lane, &reg);
          d[lane][reg] = sim.element(o, m, n);
        }
      }
    } else {
      MmaM16N8K64BlockScaled(mc.a, mc.b, mc.c, mc.sfa, mc.sfb, d);
    }
    if (sim.outputs) sim.outputs(d);
    std::copy(&d[0][0], &d[0][0] + 128, r.d.begin() + 128 * i);
  }
  for (size_t i = 0; i < pc.e2m1.even.size(); ++i) {
    const float e = pc.e2m1.even[i], o = pc.e2m1.odd[i];
    r.e2m1.push_back(sim.e2m1 ? sim.e2m1(e, o)
                              : static_cast<uint8_t>(F32ToE2M1(e) | (F32ToE2M1(o) << 4)));
  }
  return r;
}

// ---- accumulation models for simulated devices ----

struct ElemTerms {
  bool nan = false;
  float c = 0;
  Exact p[64];
};

ElemTerms TermsOf(const Operands& o, int m, int n, bool flush_subnormal = false,
                  bool nan_needs_nonzero_codes = false) {
  ElemTerms t;
  t.c = o.C[m][n];
  if (std::isnan(t.c)) t.nan = true;
  for (int k = 0; k < 64; ++k) {
    const int b = k / 16;
    uint8_t sa = o.SA[m][b], sb = o.SB[n][b];
    const bool nan = E4M3IsNaN(sa) || E4M3IsNaN(sb);
    const int64_t codes = int64_t{E2M1TimesTwo(o.A[m][k])} * E2M1TimesTwo(o.B[k][n]);
    if (nan) {
      if (!nan_needs_nonzero_codes || codes != 0) t.nan = true;
      continue;
    }
    if (flush_subnormal) {
      if (sa < 0x08) sa = 0;
      if (sb < 0x08) sb = 0;
    }
    t.p[k] = Exact::FromScaledInt(codes * E4M3Times512(sa) * E4M3Times512(sb), -20);
  }
  return t;
}

float ExactRN(const ElemTerms& t) {
  if (t.nan) return std::numeric_limits<float>::quiet_NaN();
  Exact s = Exact::FromFloat(t.c);
  for (const Exact& p : t.p) s = s + p;
  return s.ToFloatRN();
}

// Every addition truncated, in k order, C first.
float SequentialRZ(const ElemTerms& t) {
  if (t.nan) return std::numeric_limits<float>::quiet_NaN();
  float x = t.c;
  for (const Exact& p : t.p) x = (Exact::FromFloat(x) + p).ToFloatRZ();
  return x;
}

// The sm_90a emulation's structure: four bf16 mma.m16n8k16, MMA s summing the products of
// k = 32 (s >> 1) + 8t + 4 (s & 1) + {0..3}, t = 0..3 (kernels/sm90/emu_fragment_math.h), each
// a fused adder: C and 16 products aligned to the largest, truncated to 24 + guard bits below
// its leading bit, summed exactly, the sum truncated to binary32.
// `width` < 16 splits each MMA into sequential fused adders of `width` products (plus the
// running sum), as a k16 MMA issued as k8 or k4 steps would be.
float FusedGroups(const ElemTerms& t, int guard_bits, int width = 16) {
  if (t.nan) return std::numeric_limits<float>::quiet_NaN();
  std::vector<std::vector<int>> groups;
  for (int s = 0; s < 4; ++s) {
    std::vector<int> ks;
    for (int k = 0; k < 64; ++k) {
      if (k / 32 == (s >> 1) && (k % 8) / 4 == (s & 1)) ks.push_back(k);
    }
    for (size_t i = 0; i < ks.size(); i += width) {
      groups.emplace_back(ks.begin() + i, ks.begin() + std::min(ks.size(), i + width));
    }
  }
  float x = t.c;
  for (const std::vector<int>& g : groups) {
    std::vector<Exact> terms = {Exact::FromFloat(x)};
    for (int k : g) terms.push_back(t.p[k]);
    int e = -1000;
    for (const Exact& v : terms) {
      if (!v.IsZero()) e = std::max(e, v.MsbExp());
    }
    if (e == -1000) continue;
    const int q = e - 23 - guard_bits;  // the quantum kept
    Exact sum;
    for (const Exact& v : terms) {
      const double d = v.ToDouble();  // exact: a float or a product of <= 43 bits
      const double units = std::trunc(std::ldexp(d, -q));
      sum = sum + Exact::FromScaledInt(static_cast<int64_t>(units), q);
    }
    x = sum.ToFloatRZ();
  }
  return x;
}

Sim WithElements(std::function<float(const ElemTerms&)> f, bool flush = false,
                 bool nan_needs_nonzero = false) {
  Sim sim;
  sim.element = [f, flush, nan_needs_nonzero](const Operands& o, int m, int n) {
    return f(TermsOf(o, m, n, flush, nan_needs_nonzero));
  };
  return sim;
}

// ---- helpers ----

const GroupResult& G(const Report& r, const std::string& name) {
  for (const GroupResult& g : r.groups) {
    if (g.name == name) return g;
  }
  ADD_FAILURE() << "no group " << name;
  static GroupResult none;
  return none;
}

bool Mentions(const GroupResult& g, const std::string& needle) {
  for (const std::string& f : g.failures) {
    if (absl::StrContains(f, needle)) return true;
  }
  return false;
}

std::string Failures(const Report& r) {
  std::string s;
  for (const GroupResult& g : r.groups) {
    for (const std::string& f : g.failures) s += g.name + ": " + f + "\n";
  }
  return s;
}

class ProbeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cases_ = new ProbeCases(BuildCases()); }
  static void TearDownTestSuite() {
    delete cases_;
    cases_ = nullptr;
  }
  static Report Run(const Sim& sim) {
    JudgeOptions opt;
    opt.max_failures = 1000;
    return Judge(*cases_, Simulate(*cases_, sim), opt);
  }
  static ProbeCases* cases_;
};
ProbeCases* ProbeTest::cases_ = nullptr;

// ---- Exact ----

TEST(ExactTest, RoundsLikeBinary32) {
  const float vals[] = {1.0f,    3.0f,    0.1f,   -7.5f,    16777216.0f,       1e-40f,
                        -1e-45f, 3.4e38f, 1e-30f, -2.5e10f, 1.0f + FLT_EPSILON};
  for (float a : vals) {
    for (float b : vals) {
      const Exact s = Exact::FromFloat(a) + Exact::FromFloat(b);
      const float rn = a + b;  // nearest-even
      EXPECT_EQ(F32Bits(s.ToFloatRN()) & 0x7FFFFFFFu, F32Bits(rn) & 0x7FFFFFFFu) << a << " + " << b;
      const float rz = s.ToFloatRZ();
      EXPECT_LE(std::fabs(static_cast<double>(rz)), std::fabs(s.ToDouble()) * (1 + 1e-15));
      EXPECT_TRUE(rz == rn || rz == std::nextafter(rn, 0.0f)) << a << " + " << b;
    }
  }
  // Ties to even, and below the smallest subnormal.
  EXPECT_EQ((Exact::FromFloat(16777216.0f) + Exact::FromScaledInt(1, 0)).ToFloatRN(), 16777216.0f);
  EXPECT_EQ((Exact::FromFloat(16777218.0f) + Exact::FromScaledInt(1, 0)).ToFloatRN(), 16777220.0f);
  EXPECT_EQ(Exact::Pow2(-150).ToFloatRN(), 0.0f);
  EXPECT_EQ(Exact::FromScaledInt(3, -151).ToFloatRN(), std::ldexp(1.0f, -149));
  EXPECT_EQ(Exact::Pow2(130).ToFloatRN(), std::numeric_limits<float>::infinity());
  EXPECT_EQ(Exact::Pow2(130).ToFloatRZ(), FLT_MAX);
  EXPECT_EQ(Exact::FromScaledInt(-12345, -20).ShiftRight(3).ToDouble(), -12345.0 / (1 << 23));
  EXPECT_EQ(Exact::FromScaledInt(96, 0).LsbExp(), 5);
  EXPECT_EQ(Exact::FromScaledInt(-96, 0).MsbExp(), 6);
}

// ---- the tables ----

TEST_F(ProbeTest, TablesCoverEveryElement) {
  int count[9] = {};
  for (const MmaCase& mc : cases_->mma) ++count[static_cast<int>(mc.kind)];
  EXPECT_EQ(count[static_cast<int>(MmaKind::kA)], 16 * 64);
  EXPECT_EQ(count[static_cast<int>(MmaKind::kB)], 64 * 8);
  EXPECT_EQ(count[static_cast<int>(MmaKind::kSfa)], 16 * 4);
  EXPECT_EQ(count[static_cast<int>(MmaKind::kSfb)], 8 * 4);
  // The one-hot A case really sits at the register the contract names.
  for (const MmaCase& mc : cases_->mma) {
    if (mc.kind != MmaKind::kA) continue;
    int lane, reg, nib;
    ALocation(mc.p0, mc.p1, &lane, &reg, &nib);
    for (int l = 0; l < 32; ++l) {
      for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(mc.a[l][i], (l == lane && i == reg) ? 0x2u << (4 * nib) : 0u) << mc.name;
      }
    }
  }
  EXPECT_GT(cases_->e2m1.even.size(), 5000u);
}

// ---- a correct device ----

TEST_F(ProbeTest, ContractModelPassesEverything) {
  const Report r = Judge(*cases_, RunModelDevice(*cases_));
  std::fputs(FormatReport(r).c_str(), stdout);
  EXPECT_TRUE(r.passed()) << Failures(r);
  for (const GroupResult& g : r.groups) {
    EXPECT_GT(g.checked, 0) << g.name;
    EXPECT_EQ(g.failed, 0) << g.name;
  }
  // The model is no GPU: its pass is a self-check, and the report says so.
  EXPECT_TRUE(absl::StrContains(FormatReport(r), "SELF-CHECK PASSED; no GPU probed"));
  EXPECT_FALSE(absl::StrContains(FormatReport(r), "PROBE PASSED"));
  const std::string json = ReportJson(r);
  EXPECT_TRUE(absl::StrContains(json, "\"passed\": true"));
  EXPECT_TRUE(absl::StrContains(json, "\"name\": \"SFA\""));
}

TEST_F(ProbeTest, ExactSumRoundedOnceIsTheModel) {
  // The test's own exact-then-RN accumulator equals the emulator's model everywhere: the
  // simulated accumulators below are built on the same terms.
  const Report r = Run(WithElements(ExactRN));
  EXPECT_TRUE(r.passed()) << Failures(r);
}

TEST_F(ProbeTest, HopperLikeFusedAccumulationPassesWithGuardBits) {
  for (int width : {16, 8, 4}) {
    for (int guard = 1; guard <= 3; ++guard) {
      const Report r = Run(WithElements(
          [guard, width](const ElemTerms& t) { return FusedGroups(t, guard, width); }));
      EXPECT_TRUE(r.passed()) << "guard bits " << guard << " width " << width << "\n"
                              << Failures(r);
      if (guard == 1 && width == 16) std::fputs(FormatReport(r).c_str(), stdout);
    }
  }
  // Without a guard bit, the terms 1.25 .. 1.875 next to C = 2^24 (ulp 2) are dropped whole:
  // 64 * 1.75 = 112 > the bound 64.0004. The exact group still passes.
  const Report r0 = Run(WithElements([](const ElemTerms& t) { return FusedGroups(t, 0); }));
  EXPECT_TRUE(r0.layout_ok);
  EXPECT_FALSE(r0.precision_ok);
  EXPECT_TRUE(G(r0, "exact").ok());
  EXPECT_TRUE(Mentions(G(r0, "bound"), "bound/guard_ladder")) << Failures(r0);
}

// Section 8's exact case for one element (the test's own statement of it).
bool IsExactCase(const ElemTerms& t) {
  if (t.nan) return false;
  Exact a = Exact::FromFloat(t.c).Abs();
  int e = t.c == 0 ? 1000 : Exact::FromFloat(t.c).LsbExp();
  for (const Exact& p : t.p) {
    a = a + p.Abs();
    if (!p.IsZero()) e = std::min(e, p.LsbExp());
  }
  return a.IsZero() || a.MsbExp() < e + 24;
}

TEST_F(ProbeTest, OneUlpOffPassesTheBoundButNotExactData) {
  // One ulp away from the exact sum wherever the data is not exact: within the bound.
  const Report inexact = Run(WithElements([](const ElemTerms& t) {
    const float v = ExactRN(t);
    return IsExactCase(t) || !std::isfinite(v) || v == 0 ? v : std::nextafter(v, INFINITY);
  }));
  EXPECT_TRUE(inexact.passed()) << Failures(inexact);
  // One ulp away on exact data: every group with exact data fails (layout cases are exact too).
  const Report exact = Run(WithElements([](const ElemTerms& t) {
    const float v = ExactRN(t);
    return !IsExactCase(t) || !std::isfinite(v) || v == 0 ? v : std::nextafter(v, INFINITY);
  }));
  EXPECT_FALSE(G(exact, "exact").ok());
  EXPECT_TRUE(Mentions(G(exact, "exact"), "bit for bit required"));
  EXPECT_FALSE(G(exact, "subnormal").ok());
  EXPECT_FALSE(exact.layout_ok);
}

// ---- layout faults ----

TEST_F(ProbeTest, SwappedALanesAreNamed) {
  Sim sim;
  sim.inputs = [](MmaCase& mc) {
    for (int i = 0; i < 4; ++i) std::swap(mc.a[3][i], mc.a[7][i]);
  };
  const Report r = Run(sim);
  EXPECT_FALSE(r.layout_ok);
  const GroupResult& a = G(r, "A");
  // Lanes 3 and 7 (t = 3) hold rows {0, 8} / {1, 9} at k 24..31 and 56..63: 64 cases.
  EXPECT_EQ(a.failed, 64);
  EXPECT_TRUE(Mentions(a, "A: register a[0] lane 3 nibble 0 (row 0, k 24) read as row 1, k 24"))
      << Failures(r);
  EXPECT_TRUE(Mentions(a, "A: register a[3] lane 7 nibble 7 (row 9, k 63) read as row 8, k 63"))
      << Failures(r);
  // B's one-hot codes are located through A's k pattern, so the B cases whose k differs in
  // bits 0 and 1 (rows 0/1 and 8/9 of that pattern swapped) fail too; the verdict says so.
  EXPECT_EQ(G(r, "B").failed, 64);
  EXPECT_TRUE(Mentions(G(r, "B"),
                       "B: register b[0] lane 3 nibble 1 (k 25, column 0) read as k 26, "
                       "column 0"))
      << Failures(r);
  EXPECT_TRUE(G(r, "C/D").ok());
  EXPECT_TRUE(G(r, "SFA").ok());
  EXPECT_TRUE(G(r, "SFB").ok());
  EXPECT_TRUE(absl::StrContains(r.verdict, "LAYOUT BUG in A, B"));
  EXPECT_TRUE(absl::StrContains(r.verdict, "located through each other"));
}

TEST_F(ProbeTest, SwappedBRegistersAreNamed) {
  Sim sim;  // the hardware reads b[0] and b[1] of lane 9 the other way round
  sim.inputs = [](MmaCase& mc) { std::swap(mc.b[9][0], mc.b[9][1]); };
  const Report r = Run(sim);
  const GroupResult& b = G(r, "B");
  EXPECT_EQ(b.failed, 16);  // lane 9: column 2, k 8..15 and 40..47
  EXPECT_TRUE(
      Mentions(b, "B: register b[1] lane 9 nibble 2 (k 42, column 2) read as k 10, column 2"))
      << Failures(r);
  EXPECT_TRUE(G(r, "A").ok());
}

TEST_F(ProbeTest, SwappedDLanesAreNamed) {
  Sim sim;
  sim.outputs = [](float(&d)[32][4]) {
    for (int i = 0; i < 4; ++i) std::swap(d[3][i], d[7][i]);
  };
  const Report r = Run(sim);
  EXPECT_FALSE(G(r, "C/D").ok());
  EXPECT_TRUE(Mentions(G(r, "C/D"),
                       "C/D: c[0] of lane 3 (row 0, col 6) came back as d[0] of lane 7 (row 1, "
                       "col 6)"))
      << Failures(r);
  EXPECT_FALSE(r.layout_ok);
}

TEST_F(ProbeTest, WrongScaleByteIsNamed) {
  Sim sim;  // lane 5 (row 9): bytes 1 and 2 read the other way round
  sim.inputs = [](MmaCase& mc) {
    const uint32_t w = mc.sfa[5];
    const uint32_t b1 = (w >> 8) & 0xFF, b2 = (w >> 16) & 0xFF;
    mc.sfa[5] = (w & 0xFF0000FFu) | (b1 << 16) | (b2 << 8);
  };
  const Report r = Run(sim);
  const GroupResult& sfa = G(r, "SFA");
  EXPECT_EQ(sfa.failed, 2);
  EXPECT_TRUE(Mentions(sfa, "SFA: lane 5 byte 2 (row 9, k-block 2) read as row 9 / block 1"))
      << Failures(r);
  EXPECT_TRUE(Mentions(sfa, "SFA: lane 5 byte 1 (row 9, k-block 1) read as row 9 / block 2"));
  EXPECT_TRUE(G(r, "A").ok());
  EXPECT_TRUE(G(r, "B").ok());
  EXPECT_TRUE(G(r, "SFB").ok());
  EXPECT_TRUE(absl::StrContains(r.verdict, "LAYOUT BUG in SFA"));
}

TEST_F(ProbeTest, ScaleFromIgnoredLaneIsNamed) {
  Sim sim;  // rows g + 8 taken from lane 4g + 2 instead of 4g + 1
  sim.inputs = [](MmaCase& mc) {
    for (int g = 0; g < 8; ++g) mc.sfa[4 * g + 1] = mc.sfa[4 * g + 2];
  };
  const Report r = Run(sim);
  const GroupResult& sfa = G(r, "SFA");
  EXPECT_EQ(sfa.failed, 64);  // every case: each shows rows 8..15 reading poison
  EXPECT_TRUE(Mentions(sfa, "row 9 used its scales from ignored lane 6")) << Failures(r);
  EXPECT_TRUE(Mentions(sfa, "SFA: lane 5 byte 0 (row 9, k-block 0) was not read"));

  Sim sim_b;  // columns taken from lane 4g + 1
  sim_b.inputs = [](MmaCase& mc) {
    for (int g = 0; g < 8; ++g) mc.sfb[4 * g] = mc.sfb[4 * g + 1];
  };
  const Report rb = Run(sim_b);
  EXPECT_TRUE(Mentions(G(rb, "SFB"), "column 3 used its scales from ignored lane 13"))
      << Failures(rb);
  EXPECT_TRUE(G(rb, "SFA").ok());
}

// ---- precision faults ----

TEST_F(ProbeTest, TruncatingAccumulationIsAPrecisionDeviation) {
  const Report r = Run(WithElements(SequentialRZ));
  EXPECT_TRUE(r.layout_ok) << Failures(r);
  EXPECT_TRUE(r.conversion_ok);
  EXPECT_FALSE(r.precision_ok);
  EXPECT_TRUE(G(r, "exact").ok());
  const GroupResult& b = G(r, "bound");
  EXPECT_TRUE(Mentions(b,
                       "bound/guard_ladder D[m=9, n=0] (lane 4 d[2]): got 16777216, exact "
                       "16777328, |err| 112 > bound"))
      << Failures(r);
  EXPECT_TRUE(Mentions(b, "consistent with sequential-RZ"));
  EXPECT_TRUE(absl::StrContains(r.verdict, "ACCUMULATION DEVIATION in bound"));
  EXPECT_FALSE(absl::StrContains(r.verdict, "LAYOUT"));
}

TEST_F(ProbeTest, FlushedSubnormalScalesAreNamed) {
  const Report r = Run(WithElements(ExactRN, /*flush=*/true));
  EXPECT_TRUE(r.layout_ok);
  EXPECT_TRUE(G(r, "exact").ok());
  EXPECT_TRUE(G(r, "bound").ok());
  EXPECT_TRUE(G(r, "nan").ok());
  EXPECT_FALSE(G(r, "subnormal").ok());
  EXPECT_TRUE(Mentions(G(r, "subnormal"),
                       "SFA 0x03 (= 3 * 2^-9 = 0.005859375) acted as 0 (flushed to zero)"))
      << Failures(r);
  EXPECT_TRUE(absl::StrContains(r.verdict, "ACCUMULATION DEVIATION in subnormal"));
}

TEST_F(ProbeTest, NanScaleOverZeroCodesIsNamed) {
  const Report r = Run(WithElements(ExactRN, false, /*nan_needs_nonzero=*/true));
  EXPECT_TRUE(r.layout_ok);
  const GroupResult& g = G(r, "nan");
  EXPECT_FALSE(g.ok());
  EXPECT_TRUE(Mentions(g, "nan/sfa_zero_codes D[m=3, n=0] (lane 12 d[0])")) << Failures(r);
  EXPECT_TRUE(Mentions(g, "expected NaN (SFA 0x7F at row 3 block 1"));
  EXPECT_TRUE(Mentions(g, "nan/all_codes_zero"));
  EXPECT_FALSE(Mentions(g, "nan/sfb_codes"));  // nonzero codes: NaN as required
}

TEST_F(ProbeTest, NanFromIgnoredLaneIsNamed) {
  Sim sim;  // the hardware honours a NaN in lane 4g + 2
  sim.inputs = [](MmaCase& mc) {
    for (int g = 0; g < 8; ++g) {
      if ((mc.sfa[4 * g + 2] & 0xFF) == 0x7F) mc.sfa[4 * g] = mc.sfa[4 * g + 2];
    }
  };
  const Report r = Run(sim);
  EXPECT_TRUE(Mentions(G(r, "nan"), "nan/ignored_lanes")) << Failures(r);
  EXPECT_TRUE(Mentions(G(r, "nan"), "= NaN, expected"));
}

// ---- conversion faults ----

TEST_F(ProbeTest, LostZeroSignIsAConversionDifference) {
  Sim sim;
  sim.e2m1 = [](float e, float o) {
    auto conv = [](float v) {
      const uint8_t c = F32ToE2M1(v);
      return c == 0x8 ? uint8_t{0} : c;  // -0 and tiny negatives lose their sign
    };
    return static_cast<uint8_t>(conv(e) | (conv(o) << 4));
  };
  const Report r = Run(sim);
  EXPECT_TRUE(r.layout_ok);
  EXPECT_TRUE(r.precision_ok);
  EXPECT_FALSE(r.conversion_ok);
  EXPECT_TRUE(Mentions(G(r, "e2m1"),
                       "e2m1: low nibble (even element) -0 (0x80000000): got 0x0, "
                       "contract 0x8 [zero sign]"))
      << Failures(r);
  EXPECT_TRUE(absl::StrContains(r.verdict, "E2M1 CONVERSION DIFFERENCE"));
}

TEST_F(ProbeTest, NanCodeIsChecked) {
  Sim sim;
  sim.e2m1 = [](float e, float o) {
    auto conv = [](float v) {
      return std::isnan(v) && std::signbit(v) ? uint8_t{0xF} : F32ToE2M1(v);
    };
    return static_cast<uint8_t>(conv(e) | (conv(o) << 4));
  };
  const Report r = Run(sim);
  EXPECT_TRUE(Mentions(G(r, "e2m1"), "got 0xF, contract 0x7 [NaN]")) << Failures(r);
}

TEST_F(ProbeTest, RawCvtIsMeasuredNotJudged) {
  DeviceResults res = RunModelDevice(*cases_);
  res.raw_cvt = res.e2m1;
  for (size_t i = 0; i < res.raw_cvt.size(); ++i) {
    if (F32Bits(cases_->e2m1.even[i]) == 0x80000000u) res.raw_cvt[i] &= 0xF0;  // -0 -> +0
  }
  const Report r = Judge(*cases_, res);
  EXPECT_TRUE(r.passed());
  bool seen = false;
  for (const std::string& m : r.measurements) {
    seen |= absl::StrContains(m,
                              "raw cvt.rn.satfinite.e2m1x2.f32 differs from the contract on: "
                              "zero sign");
  }
  EXPECT_TRUE(seen);
}

TEST_F(ProbeTest, MissingResultsFail) {
  DeviceResults res = RunModelDevice(*cases_);
  res.d.pop_back();
  res.e2m1.clear();
  const Report r = Judge(*cases_, res);
  EXPECT_FALSE(r.passed());
}

}  // namespace
}  // namespace h3::probe
