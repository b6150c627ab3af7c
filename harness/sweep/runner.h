// Runs one sweep case: generates its inputs, runs the backend under test, and compares with the
// emulator (contract envelope for `out`, bit-exact for act_q/act_sf).

#ifndef H3_HARNESS_SWEEP_RUNNER_H_
#define H3_HARNESS_SWEEP_RUNNER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "harness/sweep/cases.h"
#include "harness/testbed/compare.h"
#include "harness/testbed/problem.h"

namespace h3::sweep {

// A backend that runs the whole op (all M rows) somewhere other than the emulator.
class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  // Plain words for the output, e.g. "GPU: sm_90a validation build (emulated block-scaled MMA)".
  virtual std::string Description() const = 0;
  // Runs the op on `full` (every row of the case) and returns rows `rows` (act_q/act_sf only
  // with caller_workspace). Errors are the op's own status (e.g. an unsupported shape) or a CUDA
  // failure.
  virtual absl::StatusOr<testbed::RunResult> Run(const testbed::Problem& full, bool out_is_residual,
                                                 bool caller_workspace,
                                                 absl::Span<const int64_t> rows) = 0;
};

struct RunnerOptions {
  uint64_t seed = 1;
  bool full = false;                             // compare every row of every case
  int64_t sample_rows = 24;                      // rows compared when a case is sampled
  int64_t full_compare_macs = int64_t{1} << 32;  // compare all rows when M*N*K <= this
  int threads = 1;
};

enum class Verdict { kPass, kFail, kSkip, kError };
absl::string_view VerdictName(Verdict v);

struct CaseResult {
  std::string name;
  Verdict verdict = Verdict::kError;
  std::string backend;     // "gpu" / "emulator" / "golden"
  std::string comparison;  // "bit-exact", "bound", "none" (M = 0)
  std::string act_check;   // "bit-exact", "n/a (internal workspace)", "none"
  int64_t m = 0, n = 0, k = 0;
  int64_t rows_compared = 0;
  int64_t checked = 0, mismatches = 0, max_ulp = 0;
  std::string first_mismatch;  // "" when none; for errors/skips, the reason
  double seconds = 0;
};

// Copies a comparison's verdict material into `r` (the verdict itself stays the caller's).
void TakeComparison(const testbed::Comparison& c, CaseResult& r);

using ProgressFn = std::function<void(absl::string_view)>;

// Runs one case. `device` == nullptr: emulator-only (the fast f32 path and the exact path, both
// against the exact envelope). Otherwise the device backend against the emulator.
CaseResult RunCase(const CaseSpec& spec, DeviceBackend* device, testbed::WeightCache& weights,
                   const RunnerOptions& options, const ProgressFn& progress);

// The rows a case compares under `options`.
std::vector<int64_t> RowsToCompare(const CaseSpec& spec, const RunnerOptions& options);

}  // namespace h3::sweep

#endif  // H3_HARNESS_SWEEP_RUNNER_H_
