#ifndef H3_HARNESS_PROBE_JUDGE_INTERNAL_H_
#define H3_HARNESS_PROBE_JUDGE_INTERNAL_H_

// Private to probe_lib: the pieces of Judge (probe.cc) by area. layout.cc diagnoses layout
// cases; precision.cc judges the precision cases element by element, measures how the device
// accumulates, and judges the e2m1 conversion.

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "harness/probe/probe.h"

namespace h3::probe {

// Equal, or both NaN.
inline bool Same(float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }

inline std::string Num(double v) {
  if (std::isnan(v)) return "NaN";
  return absl::StrFormat("%.9g", v);
}

// An element of D named by its place in the C/D fragment.
inline std::string Elem(int m, int n) {
  int lane, reg;
  CLocation(m, n, &lane, &reg);
  return absl::StrFormat("D[m=%d, n=%d] (lane %d d[%d])", m, n, lane, reg);
}

inline GroupResult& Group(std::vector<GroupResult>& groups, const std::string& name) {
  for (GroupResult& g : groups) {
    if (g.name == name) return g;
  }
  std::abort();  // every group is added before judging
}

inline void AddFailure(GroupResult& g, const JudgeOptions& opt, std::string text) {
  ++g.failed;
  if (static_cast<int>(g.failures.size()) < opt.max_failures) g.failures.push_back(std::move(text));
}

// A layout case (C/D, A, B, SFA, SFB) whose D differs from the model's E: what moved where.
std::string DiagnoseLayout(const MmaCase& mc, const float D[16][8], const float E[16][8]);

// Candidate accumulation models for the measurement.
inline constexpr int kModels = 6;

// The precision cases (exact, bound, subnormal, nan), one at a time, and the measurements of how
// the device accumulates that they allow.
class PrecisionJudge {
 public:
  // Judges every element of one case's D; failures go to g.
  void Case(const MmaCase& mc, const float D[16][8], GroupResult& g, const JudgeOptions& opt);
  // The measurements over the cases seen so far, as report lines.
  void AppendMeasurements(std::vector<std::string>& out) const;

 private:
  struct CaseTally {
    std::string name;
    int64_t disc = 0, none = 0;
    std::array<int64_t, kModels> hits{};
  };
  int64_t discriminating_ = 0, none_ = 0;  // elements where the models differ / match none
  std::array<int64_t, kModels> hits_{};
  double worst_ratio_ = 0;  // |D - exact| / bound, over the non-exact elements
  std::string worst_where_;
  std::map<std::string, std::array<int, 3>> cancel_;  // case -> kept / lost / other
  std::map<std::string, std::vector<float>> order_;   // case -> D
  std::string ladder_;
  std::vector<CaseTally> by_case_;
};

// The e2m1 group: the kernels' Arch::E2m1Byte as the device ran it, against F32ToE2M1.
void JudgeE2m1(const ProbeCases& cases, const DeviceResults& results, GroupResult& g,
               const JudgeOptions& opt);
// The raw cvt.rn.satfinite.e2m1x2.f32 (SM12x only) against the contract, as a measurement.
std::string RawCvtMeasurement(const ProbeCases& cases, const DeviceResults& results);

}  // namespace h3::probe

#endif  // H3_HARNESS_PROBE_JUDGE_INTERNAL_H_
