#include "harness/sweep/runner.h"

#include <chrono>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "emulator/op.h"
#include "harness/testbed/rows.h"

namespace h3::sweep {

using testbed::Comparison;
using testbed::Problem;

absl::string_view VerdictName(Verdict v) {
  static constexpr absl::string_view kNames[] = {"PASS", "FAIL", "SKIP", "ERROR"};  // enum order
  static_assert(std::size(kNames) == static_cast<size_t>(Verdict::kError) + 1);
  return kNames[static_cast<size_t>(v)];
}

std::vector<int64_t> RowsToCompare(const CaseSpec& spec, const RunnerOptions& options) {
  const OpShape& s = spec.problem.shape;
  const bool all = options.full || s.m * s.n * s.k <= options.full_compare_macs;
  return all ? testbed::AllRows(s.m)
             : testbed::SampleRows(s.m, options.sample_rows, options.seed ^ s.m);
}

void TakeComparison(const Comparison& c, CaseResult& r) {
  r.comparison = c.out_check;
  r.act_check = c.act_check;
  r.checked = c.checked;
  r.mismatches = c.mismatches;
  r.max_ulp = c.max_ulp;
  r.first_mismatch = c.first_mismatch;
}

namespace {

// The emulator's whole op on `p`, in place when asked (out is the residual buffer).
absl::StatusOr<testbed::RunResult> RunEmulator(const Problem& p, GemmPath path, bool in_place) {
  const OpShape& s = p.shape;
  testbed::RunResult r;
  r.act_q.assign(static_cast<size_t>(s.m * (s.k / 2)), 0xFF);
  r.act_sf.assign(static_cast<size_t>(s.m * (s.k / 16)), 0xFF);
  if (in_place) {
    r.out = p.residual;
  } else {
    r.out.assign(static_cast<size_t>(s.m * s.n), 0x7FBF);  // poison: a NaN no path produces
  }
  const OpInputs in = testbed::InputsOf(
      p, in_place ? absl::Span<const uint16_t>(r.out) : absl::Span<const uint16_t>(p.residual));
  OpOutputs out;
  out.out = absl::MakeSpan(r.out);
  out.act_q = absl::MakeSpan(r.act_q);
  out.act_sf = absl::MakeSpan(r.act_sf);
  absl::Status st = RunOp(in, out, path);
  if (!st.ok()) return st;
  return r;
}

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

CaseResult RunCase(const CaseSpec& spec, DeviceBackend* device, testbed::WeightCache& weights,
                   const RunnerOptions& options, const ProgressFn& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  const OpShape& s = spec.problem.shape;
  CaseResult r;
  r.name = spec.name;
  r.backend = device ? "gpu" : "emulator";
  r.m = s.m;
  r.n = s.n;
  r.k = s.k;
  auto error = [&](Verdict v, std::string why) {
    r.verdict = v;
    r.first_mismatch = std::move(why);
    r.seconds = Seconds(t0);
    return r;
  };

  const std::vector<int64_t> rows = RowsToCompare(spec, options);
  r.rows_compared = static_cast<int64_t>(rows.size());
  const bool large = static_cast<int64_t>(rows.size()) * s.n * s.k > (int64_t{1} << 33);

  // The backend under test.
  std::vector<std::pair<std::string, testbed::RunResult>> runs;  // (label, result)
  if (device != nullptr) {
    if (s.m > 4096) progress(absl::StrCat("generating ", s.m, " rows"));
    absl::StatusOr<Problem> full = testbed::GenerateProblem(
        spec.problem, options.seed, testbed::AllRows(s.m), weights, options.threads);
    if (!full.ok()) return error(Verdict::kError, std::string(full.status().message()));
    if (s.m > 4096) progress("running the op on the device");
    absl::StatusOr<testbed::RunResult> dev =
        device->Run(*full, spec.out_is_residual, spec.caller_workspace, rows);
    if (!dev.ok()) {
      // Small shapes the kernel does not tile are skipped; the MiniMax-H3 shape must run.
      const bool h3 = s.n == kH3N && s.k == kH3K && s.g == kH3G;
      const bool unsupported = dev.status().code() == absl::StatusCode::kUnimplemented ||
                               dev.status().code() == absl::StatusCode::kInvalidArgument;
      return error(!h3 && unsupported ? Verdict::kSkip : Verdict::kError,
                   absl::StrCat("device: ", dev.status().ToString()));
    }
    runs.emplace_back("", *std::move(dev));
  }

  // The emulator on the compared rows only (rows are independent in the contract).
  if (large) progress(absl::StrCat("emulating ", rows.size(), " of ", s.m, " rows"));
  absl::StatusOr<Problem> sub =
      testbed::GenerateProblem(spec.problem, options.seed, rows, weights, options.threads);
  if (!sub.ok()) return error(Verdict::kError, std::string(sub.status().message()));
  if (device == nullptr) {
    // Its fast f32 path and its exact path, each against the contract.
    for (GemmPath path : {GemmPath::kFastF32, GemmPath::kExact}) {
      const std::string label = path == GemmPath::kFastF32 ? "fast path: " : "exact path: ";
      absl::StatusOr<testbed::RunResult> emu = RunEmulator(*sub, path, spec.out_is_residual);
      if (!emu.ok()) {
        return error(Verdict::kError, absl::StrCat("emulator ", label, emu.status().ToString()));
      }
      runs.emplace_back(label, *std::move(emu));
    }
  }

  absl::StatusOr<testbed::Reference> ref =
      testbed::MakeReference(*sub, testbed::AllRows(sub->shape.m));
  if (!ref.ok()) return error(Verdict::kError, absl::StrCat("envelope: ", ref.status().ToString()));
  Comparison c;
  for (const auto& [label, got] : runs) {
    testbed::JudgeOptions judge;
    judge.exact_data = spec.problem.data == testbed::DataKind::kExact;
    judge.compare_act = device == nullptr || spec.caller_workspace;
    judge.label = label;
    testbed::Judge(*ref, got, judge, c);
  }
  TakeComparison(c, r);
  r.verdict = c.pass ? Verdict::kPass : Verdict::kFail;
  r.seconds = Seconds(t0);
  return r;
}

}  // namespace h3::sweep
