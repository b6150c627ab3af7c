#ifndef H3_HARNESS_PERF_MODEL_REPORT_H_
#define H3_HARNESS_PERF_MODEL_REPORT_H_

// The perf_model tool's printed reports (perf_model_main.cc picks one from its flags).

#include <cstdint>
#include <vector>

#include "harness/perf_model/model.h"
#include "harness/perf_model/reading.h"

namespace h3::perf_model {

inline constexpr double kUs = 1e6;  // seconds -> microseconds

struct ReportOptions {
  bool verbose = false;  // each design's per-stage breakdown
  bool ladder = true;    // the gain of each design choice, cumulatively
};

// The hardware's constants, each with its source.
void PrintHardware(const Hardware& h);

// Per GPU: the calibration, the designs' TFLOP/s per M, their components per M (and the best),
// the ladder, and what caps `current`.
void PrintSm120Report(const std::vector<Hardware>& hws, const std::vector<Design>& designs,
                      const std::vector<int64_t>& ms, const ReportOptions& options);

// Per GPU: each design's low / default / high and P(>= goal) (reading.h), the built configs'
// pick per M, what caps the built default when it is below the goal, and last the headline line
// of every GPU (M = 4096, the built default config).
void PrintReading(const std::vector<Hardware>& hws, const std::vector<Design>& designs,
                  const std::vector<int64_t>& ms, const UncertaintyOptions& options);

// The refit (issue 29, refit_report.cc): fitted parameters, the anchors table with leave-one-out.
void PrintRefit();
// Per GPU at M: the built configs and the CuTe DSL schedules with our fused work, their default
// readings against the default config, and the unfused cuBLASLt pipeline.
void PrintCandidates(const Hardware& h, int64_t m, double goal);
// The unfused pipeline's time over the fused one at `fused_tflops` (x_unfused).
double XUnfused(const Hardware& h, int64_t m, double fused_tflops);

// Issue 30's options (options.h) at M on design d: act_smooth alone and the low-rank branch per
// rank, each term, low / high, and the inputs (options_report.cc).
void PrintOptions(const Hardware& h, const Design& d, int64_t m);

// The model's predictions of the terms measurable on the H200 (h200: H200(), overrides applied).
void PrintH200Calibration(const Hardware& h200);

}  // namespace h3::perf_model

#endif  // H3_HARNESS_PERF_MODEL_REPORT_H_
