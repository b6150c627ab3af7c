#ifndef H3_HARNESS_PROBE_PROBE_H_
#define H3_HARNESS_PROBE_PROBE_H_

// The first-contact probe of an SM120 device (`./bazelw run //harness:probe`): does the
// block-scaled mma.sync read A, B, SFA and SFB where docs/contract.md section 7 says, does it
// accumulate within section 8, and does the e2m1 conversion follow section 2?
//
// This library is the CPU half: it builds the case tables (single-warp MMAs, e2m1 inputs),
// judges what a device returned against the contract's CPU model (emulator/mma_model.h) and
// names what went wrong in the contract's terms (register, lane, nibble, scale byte). The GPU
// half (probe_device.h, probe_kernels.cuh) only runs the tables. Everything here runs without a
// GPU, so the judging itself is tested on the CPU against simulated devices (probe_test.cc).
//
// Check groups and their areas:
//   layout:     C/D (accumulator pass-through), A, B (one-hot e2m1 codes), SFA, SFB (one-hot
//               scale bytes, ignored lanes poisoned)
//   precision:  exact (sums that need all 24 bits: bit-exact), bound (partial sums that need more
//               than 24 bits: section 8's bound), subnormal (UE4M3 0x01-0x07), nan (scale 0x7F)
//   conversion: e2m1 (Arch::E2m1Byte: NaN, signed zeros, ties, saturation)
// The final verdict separates the three areas, so a failing sweep on that device can be told to
// be a layout bug, an accumulation-precision deviation or a conversion difference.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/probe/litmus.h"

namespace h3::probe {

// ---- Exact arithmetic on the values of one MMA --------------------------------------------
// A fixed-point number with 384-bit two's complement significand and lsb 2^-200: every finite
// binary32 value (lsb >= 2^-149, magnitude < 2^128), every product of the instruction (multiples
// of 2^-20) and every sum of a few hundred of them is exact.
class Exact {
 public:
  Exact() { w_.fill(0); }
  static Exact FromFloat(float f);  // f finite
  // v * 2^exp2, exp2 >= -200.
  static Exact FromScaledInt(int64_t v, int exp2);
  // 2^exp2.
  static Exact Pow2(int exp2) { return FromScaledInt(1, exp2); }

  Exact operator+(const Exact& o) const;
  Exact operator-(const Exact& o) const { return *this + (-o); }
  Exact operator-() const;
  Exact Abs() const { return IsNegative() ? -*this : *this; }
  // Arithmetic shift right by n bits (exact when no set bit is shifted out).
  Exact ShiftRight(int n) const;
  bool IsNegative() const { return (w_[kLimbs - 1] >> 63) != 0; }
  bool IsZero() const;
  // Sign of (this - o): -1, 0, 1.
  int Compare(const Exact& o) const;
  bool operator==(const Exact& o) const { return Compare(o) == 0; }
  bool operator<(const Exact& o) const { return Compare(o) < 0; }
  bool operator<=(const Exact& o) const { return Compare(o) <= 0; }
  // Exponent of the highest / lowest set bit of |this| (zero: undefined, returns -1000).
  int MsbExp() const;
  int LsbExp() const;
  // Rounded to binary32: nearest-even (overflow to Inf) or toward zero (overflow to FLT_MAX);
  // an exact zero is +0, a nonzero value rounding to zero keeps its sign.
  float ToFloatRN() const { return ToFloat(false); }
  float ToFloatRZ() const { return ToFloat(true); }
  double ToDouble() const;

 private:
  static constexpr int kLimbs = 6;
  static constexpr int kLsbExp = -200;
  float ToFloat(bool toward_zero) const;
  bool Bit(int i) const { return (w_[i / 64] >> (i % 64)) & 1; }
  std::array<uint64_t, kLimbs> w_;
};

// ---- The cases ------------------------------------------------------------------------------

enum class Area { kLayout, kPrecision, kConversion };
const char* AreaName(Area a);

// Which check a single-warp MMA case belongs to, and the one-hot element it carries.
enum class MmaKind {
  kCD,         // C passes through to D (A = B = 0); p0 = variant
  kA,          // one-hot A code at (row p0, k p1)
  kB,          // one-hot B code at (k p0, column p1)
  kSfa,        // one-hot SFA byte at (row p0, block p1)
  kSfb,        // one-hot SFB byte at (column p0, block p1)
  kExact,      // exact data needing all 24 bits: bit-exact
  kBound,      // partial sums beyond 24 bits: section 8's bound (and measurement)
  kSubnormal,  // subnormal UE4M3 scales: exact data, bit-exact
  kNan,        // 0x7F scales: NaN rows/columns, ignored lanes
};
// The group name of a kind: "C/D", "A", "B", "SFA", "SFB", "exact", "bound", "subnormal", "nan".
const char* GroupName(MmaKind k);
Area AreaOf(MmaKind k);

// One mma.m16n8k64 block-scaled instruction's operands, in registers (contract section 7).
struct MmaCase {
  MmaKind kind = MmaKind::kCD;
  std::string name;
  int p0 = 0, p1 = 0;
  uint32_t a[32][4] = {};
  uint32_t b[32][2] = {};
  float c[32][4] = {};
  uint32_t sfa[32] = {};
  uint32_t sfb[32] = {};
};

// The e2m1 conversion inputs: byte i = Arch::E2m1Byte(even[i], odd[i]) (even: low nibble).
struct E2m1Cases {
  std::vector<float> even, odd;
};

struct ProbeCases {
  std::vector<MmaCase> mma;
  E2m1Cases e2m1;
};

// The probe's tables (deterministic).
ProbeCases BuildCases();

// What a device returned. d: [mma.size()][32][4] f32, lane-major like c. e2m1: one byte per
// pair. raw_cvt: the bare cvt.rn.satfinite.e2m1x2.f32 (SM12x family build only; empty elsewhere).
struct DeviceResults {
  std::string device;       // "NVIDIA ... (sm_XY, N SMs)" or "CPU model"
  std::string device_code;  // which build of the instruction ran
  bool native = false;      // the native SM12x instruction (else an emulation / the model)
  std::vector<float> d;
  std::vector<uint8_t> e2m1;
  std::vector<uint8_t> raw_cvt;
  LitmusCounts litmus;  // the proxy-fence litmus (litmus.h); not run on the CPU model
};

// The contract's CPU model as a device: emulator/mma_model.h's MmaM16N8K64BlockScaled (the
// exact sum rounded once) and emulator/formats.h's F32ToE2M1. The probe must pass on it.
DeviceResults RunModelDevice(const ProbeCases& cases);

// ---- The judgement --------------------------------------------------------------------------

struct GroupResult {
  Area area = Area::kLayout;
  std::string name;  // GroupName / "e2m1"
  std::string what;  // one phrase: what the group checks
  std::string unit;  // "cases", "elements", "conversions"
  int64_t checked = 0;
  int64_t failed = 0;
  std::vector<std::string> failures;  // the first few, in contract terms
  bool ok() const { return failed == 0; }
};

struct Report {
  DeviceResults device_info;  // d/e2m1/raw_cvt cleared
  std::vector<GroupResult> groups;
  std::vector<std::string> measurements;  // observations, never pass/fail
  bool layout_ok = true, precision_ok = true, conversion_ok = true;
  // The proxy-fence litmus read stale data with both fences (the product's protocol) in place.
  bool protocol_broken = false;
  std::string verdict;  // one paragraph
  bool passed() const { return layout_ok && precision_ok && conversion_ok && !protocol_broken; }
};

struct JudgeOptions {
  int max_failures = 8;  // failure descriptions kept per group
};

Report Judge(const ProbeCases& cases, const DeviceResults& results,
             const JudgeOptions& options = {});

// The text report (one line per group, the first failures, measurements, verdict) and the same
// as JSON.
std::string FormatReport(const Report& report);
std::string ReportJson(const Report& report);

// ---- Helpers shared with the tests -----------------------------------------------------------

// The contract's fragment index math (section 7), lane l: g = l / 4, t = l % 4.
struct Operands {
  uint8_t A[16][64];  // e2m1 codes
  uint8_t B[64][8];
  uint8_t SA[16][4];  // scale bytes
  uint8_t SB[8][4];
  float C[16][8];
};
Operands Unpack(const MmaCase& mc);

// The scale byte an ignored lane holds in the poisoned layout cases: 0x10 + lane (distinct,
// non-NaN, below 1.0), so a value read from an ignored lane names the lane.
inline uint8_t PoisonByte(int lane) { return static_cast<uint8_t>(0x10 + lane); }

// D[m][n] from d[32][4].
void UnpackD(const float* d, float D[16][8]);
// The (lane, register, nibble) holding A[row][k] / B[k][col]; the (lane, register) of C/D (row,
// col).
void ALocation(int row, int k, int* lane, int* reg, int* nibble);
void BLocation(int k, int col, int* lane, int* reg, int* nibble);
void CLocation(int row, int col, int* lane, int* reg);

}  // namespace h3::probe

#endif  // H3_HARNESS_PROBE_PROBE_H_
