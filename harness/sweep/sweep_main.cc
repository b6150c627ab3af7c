// The project's main job: case by case, does the op compute exactly the contract?
//
//   ./bazelw run //harness:sweep                  # the embedded default sweep
//   ./bazelw run //harness:sweep -- --help        # flags
//
// The backend comes from the machine: an sm_120 GPU runs the native kernel, an sm_90 GPU the
// validation build (both against the emulator); with no GPU the emulator runs alone, against
// testdata/'s independent goldens and its fast f32 path against its exact path.

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "harness/int_list_flag.h"
#include "harness/cli.h"
#include "harness/sweep/cases.h"
#include "harness/sweep/golden.h"
#include "harness/sweep/gpu_backend.h"
#include "harness/sweep/report.h"
#include "harness/sweep/runner.h"
#include "harness/testbed/problem.h"
#include "harness/user_path.h"

ABSL_FLAG(std::string, backend, "auto",
          "auto: the GPU when one with a kernel build is present, else the emulator alone; "
          "gpu: the GPU (fails without one); emulator: the emulator alone (goldens, fast vs "
          "exact path)");
ABSL_FLAG(std::string, sm90_emulation, "faithful",
          "sm_90 GPUs only: faithful: the SM120 kernel itself with its block-scaled MMA emulated "
          "from its registers (validates the SM120 code path); fast: the Hopper consumer loop "
          "(dequantized tiles, wgmma)");
ABSL_FLAG(std::string, filter, "",
          "ECMAScript regex; only cases whose name matches run (e.g. 'h3/m=12[789]/', "
          "'golden', 'exact', 'smooth='). Names: "
          "<shape>/m=<M>/<data>/<gate_index>/<out|inplace>/<ws|nows>[/smooth=<pattern>][/lora=<r>]");
ABSL_FLAG(uint64_t, seed, 1, "seed of every generated input (and of the sampled rows)");
ABSL_FLAG(std::vector<std::string>, extra_m, {},
          "comma-separated extra M values, each run at the MiniMax-H3 shape with Gaussian and "
          "with exact data");
ABSL_FLAG(std::string, report, "",
          "write a report: a path ending in .csv or .json (relative to where the command ran)");
ABSL_FLAG(bool, full, false,
          "compare every row of every case (default: large cases compare a sample of rows, "
          "always including the first and the last)");
ABSL_FLAG(int64_t, sample_rows, 24, "rows compared per sampled case");
ABSL_FLAG(bool, list, false, "print the case names and exit");
ABSL_FLAG(int, threads, 0, "threads for input generation (0: all cores)");
ABSL_FLAG(std::string, testdata, "",
          "folder of golden cases (default: testdata/ of the workspace or the current folder)");

namespace h3::sweep {
namespace {

namespace fs = std::filesystem;

std::string DefaultTestdata() {
  if (const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY")) {
    return (fs::path(ws) / "testdata").string();
  }
  return "testdata";
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "The bit-for-bit sweep of minimax_h3_nvfp4_out_proj against its contract.\n"
      "Usage: sweep [--backend=auto|gpu|emulator] [--filter=REGEX] [--seed=N] "
      "[--extra_m=M1,M2] [--report=PATH.csv|.json] [--full] [--list]\n"
      "Exit status: 0 when every case that ran passed and at least one ran (skips are listed),\n"
      "1 on any failure, when every case was skipped, or when --backend=gpu finds no usable GPU,\n"
      "2 on bad flags (a --filter that matches no case, a --report path that cannot be written:\n"
      "checked before anything runs).");
  if (std::optional<int> code = ParseToolFlags("sweep", argc, argv)) return *code;
  auto usage_error = [](const absl::Status& s) { return PrintError("sweep", 2, s); };

  RunnerOptions options;
  options.seed = absl::GetFlag(FLAGS_seed);
  options.full = absl::GetFlag(FLAGS_full);
  options.sample_rows = absl::GetFlag(FLAGS_sample_rows);
  options.threads = absl::GetFlag(FLAGS_threads);
  if (options.threads < 0) {
    return usage_error(
        FlagError("threads", ">= 1, or 0 for all cores", absl::StrCat(options.threads)));
  }
  if (options.threads == 0) {
    options.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  if (options.sample_rows < 2) {
    return usage_error(FlagError("sample_rows", ">= 2", absl::StrCat(options.sample_rows)));
  }
  // The report's path is checked now, not after a run of minutes.
  std::string report_path;
  if (const std::string report = absl::GetFlag(FLAGS_report); !report.empty()) {
    report_path = ResolveUserPath(report);
    if (absl::Status st = CheckReportPath(report_path); !st.ok()) return usage_error(st);
  }

  const absl::StatusOr<std::vector<int64_t>> extra =
      ParseIntListFlag("extra_m", absl::GetFlag(FLAGS_extra_m), 0);
  if (!extra.ok()) return usage_error(extra.status());
  std::vector<CaseSpec> all = DefaultCases();
  for (CaseSpec& c : ExtraMCases(*extra)) all.push_back(std::move(c));
  absl::StatusOr<std::vector<CaseSpec>> cases =
      FilterCases(std::move(all), absl::GetFlag(FLAGS_filter));
  if (!cases.ok()) return usage_error(cases.status());

  // Backend from the machine (or the flag).
  const std::string backend_flag = absl::GetFlag(FLAGS_backend);
  if (backend_flag != "auto" && backend_flag != "gpu" && backend_flag != "emulator") {
    return usage_error(FlagError("backend", "auto, gpu or emulator", backend_flag));
  }
  std::unique_ptr<DeviceBackend> device;
  std::string backend_line;
  if (backend_flag != "emulator") {
    const std::string emu = absl::GetFlag(FLAGS_sm90_emulation);
    if (emu != "faithful" && emu != "fast") {
      return usage_error(FlagError("sm90_emulation", "faithful or fast", emu));
    }
    absl::StatusOr<std::unique_ptr<DeviceBackend>> gpu =
        MakeGpuBackend(emu == "fast" ? Sm90Emulation::kFast : Sm90Emulation::kFaithful);
    if (gpu.ok()) {
      device = *std::move(gpu);
      backend_line = absl::StrCat(device->Description(), "\n  checked against the CPU emulator");
    } else if (backend_flag == "gpu") {
      return PrintError("sweep", 1,
                        absl::Status(gpu.status().code(),
                                     absl::StrCat("--backend=gpu: ", gpu.status().message())));
    } else {
      backend_line = absl::StrCat("EMULATOR ONLY (", gpu.status().message(),
                                  "):\n  the emulator against testdata/'s independent goldens, "
                                  "and its fast f32 path against its exact path");
    }
  } else {
    backend_line =
        "EMULATOR ONLY (--backend=emulator): the emulator against testdata/'s "
        "independent goldens, and its fast f32 path against its exact path";
  }

  // Golden cases (every backend replays them), filtered like the rest.
  std::string testdata = absl::GetFlag(FLAGS_testdata);
  testdata = testdata.empty() ? DefaultTestdata() : ResolveUserPath(testdata);
  std::vector<GoldenCase> goldens;
  {
    std::vector<CaseSpec> named;
    const std::vector<GoldenCase> found = FindGoldenCases(testdata);
    for (const GoldenCase& g : found) {
      CaseSpec c;
      c.name = g.name;
      named.push_back(c);
    }
    absl::StatusOr<std::vector<CaseSpec>> kept =
        FilterCases(std::move(named), absl::GetFlag(FLAGS_filter));
    for (const GoldenCase& g : found) {
      for (const CaseSpec& c : *kept) {
        if (c.name == g.name) goldens.push_back(g);
      }
    }
  }

  const int64_t total = static_cast<int64_t>(goldens.size() + cases->size());
  if (absl::GetFlag(FLAGS_list)) {
    for (const GoldenCase& g : goldens) std::printf("%s\n", g.name.c_str());
    for (const CaseSpec& c : *cases) std::printf("%s\n", c.name.c_str());
    return 0;
  }
  if (total == 0) {
    return usage_error(FlagError("filter", "a regex matching at least one case (see --list)",
                                 absl::GetFlag(FLAGS_filter)));
  }
  std::printf("minimax_h3_nvfp4_out_proj sweep: %lld cases, seed %llu\nbackend: %s\n",
              static_cast<long long>(total), static_cast<unsigned long long>(options.seed),
              backend_line.c_str());
  if (goldens.empty()) {
    std::printf("goldens: none found (no %s/MANIFEST.txt)\n", testdata.c_str());
  } else {
    std::printf("goldens: %zu cases from %s\n", goldens.size(), testdata.c_str());
  }
  std::fflush(stdout);

  std::vector<CaseResult> results;
  int64_t index = 0;
  auto announce = [&](const std::string& name) {
    std::printf("[%3lld/%lld] %s\n", static_cast<long long>(++index), static_cast<long long>(total),
                name.c_str());
    std::fflush(stdout);
  };
  auto show = [&](const CaseResult& r) {
    std::printf("      %s\n", CaseLine(r).c_str());
    std::fflush(stdout);
  };
  for (const GoldenCase& g : goldens) {
    announce(g.name);
    results.push_back(RunGoldenCase(g, device.get()));
    show(results.back());
  }
  testbed::WeightCache weights(options.seed);
  const ProgressFn progress = [](absl::string_view what) {
    std::printf("      ... %.*s\n", static_cast<int>(what.size()), what.data());
    std::fflush(stdout);
  };
  for (const CaseSpec& spec : *cases) {
    announce(spec.name);
    results.push_back(RunCase(spec, device.get(), weights, options, progress));
    show(results.back());
  }

  std::printf("\n%s", SummaryTable(results).c_str());
  if (!report_path.empty()) {
    absl::Status st =
        WriteReport(report_path, results, device ? device->Description() : "emulator");
    if (!st.ok()) return PrintError("sweep", 1, st);
    std::printf("report written to %s\n", report_path.c_str());
  }
  bool pass = true;
  int64_t ran = 0;
  for (const CaseResult& r : results) {
    pass &= r.verdict == Verdict::kPass || r.verdict == Verdict::kSkip;
    ran += r.verdict != Verdict::kSkip;
  }
  if (ran == 0) {
    std::printf("SWEEP FAILED: no case ran (all %lld skipped)\n", static_cast<long long>(total));
    return 1;
  }
  std::printf("%s\n", pass ? "SWEEP PASSED" : "SWEEP FAILED");
  return pass ? 0 : 1;
}

}  // namespace
}  // namespace h3::sweep

int main(int argc, char** argv) { return h3::sweep::Main(argc, argv); }
