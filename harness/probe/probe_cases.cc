// The probe's cases (probe.h BuildCases): the operands of each MMA case packed into the
// instruction's registers, the e2m1 conversion inputs, and the tables in their fixed order. The
// MMA cases of each group are built in layout_cases.cc and precision_cases.cc; judging them is
// probe.cc's.

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/formats.h"
#include "harness/probe/cases_internal.h"
#include "harness/probe/probe.h"
#include "harness/testbed/rng.h"

namespace h3::probe {
namespace internal {
namespace {

uint32_t Word(const uint8_t (&bytes)[4]) {
  return uint32_t{bytes[0]} | (uint32_t{bytes[1]} << 8) | (uint32_t{bytes[2]} << 16) |
         (uint32_t{bytes[3]} << 24);
}
uint32_t Splat(uint8_t byte) { return 0x01010101u * byte; }

}  // namespace

Operands Blank(uint8_t scale) {
  Operands o{};
  for (auto& r : o.SA) std::fill(std::begin(r), std::end(r), scale);
  for (auto& r : o.SB) std::fill(std::begin(r), std::end(r), scale);
  return o;
}

MmaCase Pack(MmaKind kind, std::string name, int p0, int p1, const Operands& o, Unused sfa_unused,
             Unused sfb_unused) {
  MmaCase mc;
  mc.kind = kind;
  mc.name = std::move(name);
  mc.p0 = p0;
  mc.p1 = p1;
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) {
      uint32_t w = 0;
      for (int j = 0; j < 8; ++j) {
        w |= uint32_t{o.A[g + 8 * (i & 1)][8 * t + j + 32 * (i >> 1)] & 0xFu} << (4 * j);
      }
      mc.a[lane][i] = w;
      mc.c[lane][i] = o.C[g + 8 * (i >> 1)][2 * t + (i & 1)];
    }
    for (int i = 0; i < 2; ++i) {
      uint32_t w = 0;
      for (int j = 0; j < 8; ++j) w |= uint32_t{o.B[8 * t + j + 32 * i][g] & 0xFu} << (4 * j);
      mc.b[lane][i] = w;
    }
    auto unused = [&](Unused u, const uint8_t(&replica)[4]) {
      switch (u) {
        case Unused::kReplicate:
          return Word(replica);
        case Unused::kPoison:
          return Splat(PoisonByte(lane));
        case Unused::kNaN:
          return Splat(kNaN);
      }
      return Word(replica);
    };
    mc.sfa[lane] = t == 0   ? Word(o.SA[g])
                   : t == 1 ? Word(o.SA[g + 8])
                            : unused(sfa_unused, o.SA[g]);
    mc.sfb[lane] = t == 0 ? Word(o.SB[g]) : unused(sfb_unused, o.SB[g]);
  }
  return mc;
}

}  // namespace internal

namespace {

// Values around every e2m1 rounding threshold, the specials, random near-grid and random bits.
E2m1Cases BuildE2m1Cases() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1e-45f,
                          -1e-45f,
                          1e-40f,
                          -1e-40f,
                          0.1f,
                          -0.1f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          FLT_MAX,
                          -FLT_MAX,
                          7.0f,
                          -7.0f,
                          1e30f,
                          -1e30f};
  for (uint32_t nan_bits :
       {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FFFFFFFu, 0xFFFFFFFFu}) {
    v.push_back(F32FromBits(nan_bits));
  }
  for (float t :
       {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f}) {
    for (float s : {1.0f, -1.0f}) {
      v.push_back(s * std::nextafter(t, 0.0f));
      v.push_back(s * t);
      v.push_back(s * std::nextafter(t, 100.0f));
    }
  }
  testbed::Rng rng(11);
  for (int i = 0; i < 4096; ++i) {
    uint32_t u = static_cast<uint32_t>(rng.Next() >> 32);
    u = (u & 0x807FFFFFu) | ((120u + (u >> 23) % 12u) << 23);  // exponents near the grid
    v.push_back(F32FromBits(u));
  }
  for (int i = 0; i < 1024; ++i) v.push_back(F32FromBits(static_cast<uint32_t>(rng.Next() >> 32)));
  E2m1Cases c;
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i) {
    c.even.push_back(v[i]);
    c.odd.push_back(v[n - 1 - i]);
  }
  return c;
}

}  // namespace

ProbeCases BuildCases() {
  ProbeCases pc;
  internal::AddLayoutCases(pc.mma);
  internal::AddExactCases(pc.mma);
  internal::AddBoundCases(pc.mma);
  internal::AddSubnormalCases(pc.mma);
  internal::AddNanCases(pc.mma);
  pc.e2m1 = BuildE2m1Cases();
  return pc;
}

}  // namespace h3::probe
