#ifndef H3_HARNESS_PROBE_CASES_INTERNAL_H_
#define H3_HARNESS_PROBE_CASES_INTERNAL_H_

// Private to probe_lib: the pieces of BuildCases (probe_cases.cc) by check group. layout_cases.cc
// builds the one-hot layout cases, precision_cases.cc the exact, bound, subnormal and NaN cases;
// both write their operands as matrices (Operands) and Pack them into the MMA's registers.

#include <cstdint>
#include <string>
#include <vector>

#include "harness/probe/probe.h"
#include "harness/testbed/rng.h"

namespace h3::probe::internal {

constexpr uint8_t kOne = 0x38;   // UE4M3 1.0
constexpr uint8_t kTwo = 0x40;   // UE4M3 2.0
constexpr uint8_t k448 = 0x7E;   // UE4M3 448
constexpr uint8_t kNaN = 0x7F;   // UE4M3 NaN
constexpr uint8_t kC1 = 0x2;     // e2m1 1.0
constexpr uint8_t kC2 = 0x4;     // e2m1 2.0
constexpr uint8_t kCHalf = 0x1;  // e2m1 0.5
constexpr uint8_t kC6 = 0x7;     // e2m1 6.0
constexpr uint8_t kCNeg = 0x8;   // e2m1 sign bit

// What the ignored scale lanes hold (SFA: l % 4 in {2, 3}; SFB: l % 4 != 0).
enum class Unused {
  kReplicate,  // row g / column g, as the kernel fills them (kernels/device/fragment_math.h)
  kPoison,     // byte 0x10 + lane in all four bytes: distinct, non-NaN, below 1.0
  kNaN,        // 0x7F in all four bytes
};

// Zero codes and accumulator, every scale `scale`.
Operands Blank(uint8_t scale = kOne);

// The operands in the registers of one mma.m16n8k64 (contract section 7).
MmaCase Pack(MmaKind kind, std::string name, int p0, int p1, const Operands& o,
             Unused sfa_unused = Unused::kReplicate, Unused sfb_unused = Unused::kReplicate);

inline uint8_t RandomCode(testbed::Rng& rng) { return static_cast<uint8_t>(rng.Next() & 0xF); }

// Each appends its group's cases to `out`, in a fixed order (the tables are deterministic).
void AddLayoutCases(std::vector<MmaCase>& out);     // C/D, A, B, SFA, SFB
void AddExactCases(std::vector<MmaCase>& out);      // exact
void AddBoundCases(std::vector<MmaCase>& out);      // bound
void AddSubnormalCases(std::vector<MmaCase>& out);  // subnormal
void AddNanCases(std::vector<MmaCase>& out);        // nan

}  // namespace h3::probe::internal

#endif  // H3_HARNESS_PROBE_CASES_INTERNAL_H_
