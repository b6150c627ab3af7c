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
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "harness/int_list_flag.h"
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
          "'golden', 'exact'). Names: <shape>/m=<M>/<data>/<gate_index>/<out|inplace>/<ws|nows>");
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
      "Exit status: 0 when every case passes (or is skipped), 1 on any failure, 2 on bad flags.");
  absl::ParseCommandLine(argc, argv);

  RunnerOptions options;
  options.seed = absl::GetFlag(FLAGS_seed);
  options.full = absl::GetFlag(FLAGS_full);
  options.sample_rows = absl::GetFlag(FLAGS_sample_rows);
  options.threads = absl::GetFlag(FLAGS_threads);
  if (options.threads <= 0) {
    options.threads = std::max(1u, std::thread::hardware_concurrency());
  }
  if (options.sample_rows < 2) {
    std::fprintf(stderr, "--sample_rows: expected >= 2, got %lld\n",
                 static_cast<long long>(options.sample_rows));
    return 2;
  }

  const absl::StatusOr<std::vector<int64_t>> extra =
      ParseIntListFlag("extra_m", absl::GetFlag(FLAGS_extra_m), 0);
  if (!extra.ok()) {
    std::fprintf(stderr, "%s\n", std::string(extra.status().message()).c_str());
    return 2;
  }
  std::vector<CaseSpec> all = DefaultCases();
  for (CaseSpec& c : ExtraMCases(*extra)) all.push_back(std::move(c));
  absl::StatusOr<std::vector<CaseSpec>> cases =
      FilterCases(std::move(all), absl::GetFlag(FLAGS_filter));
  if (!cases.ok()) {
    std::fprintf(stderr, "%s\n", std::string(cases.status().message()).c_str());
    return 2;
  }

  // Backend from the machine (or the flag).
  const std::string backend_flag = absl::GetFlag(FLAGS_backend);
  if (backend_flag != "auto" && backend_flag != "gpu" && backend_flag != "emulator") {
    std::fprintf(stderr, "--backend: expected auto, gpu or emulator, got '%s'\n",
                 backend_flag.c_str());
    return 2;
  }
  std::unique_ptr<DeviceBackend> device;
  std::string backend_line;
  if (backend_flag != "emulator") {
    const std::string emu = absl::GetFlag(FLAGS_sm90_emulation);
    if (emu != "faithful" && emu != "fast") {
      std::fprintf(stderr, "--sm90_emulation: expected faithful or fast, got '%s'\n", emu.c_str());
      return 2;
    }
    absl::StatusOr<std::unique_ptr<DeviceBackend>> gpu =
        MakeGpuBackend(emu == "fast" ? Sm90Emulation::kFast : Sm90Emulation::kFaithful);
    if (gpu.ok()) {
      device = *std::move(gpu);
      backend_line = absl::StrCat(device->Description(), "\n  checked against the CPU emulator");
    } else if (backend_flag == "gpu") {
      std::fprintf(stderr, "--backend=gpu: %s\n", std::string(gpu.status().message()).c_str());
      return 1;
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
  const std::string report = absl::GetFlag(FLAGS_report);
  if (!report.empty()) {
    const std::string path = ResolveUserPath(report);
    absl::Status st = WriteReport(path, results, device ? device->Description() : "emulator");
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", std::string(st.message()).c_str());
      return 2;
    }
    std::printf("report written to %s\n", path.c_str());
  }
  bool pass = true;
  for (const CaseResult& r : results) {
    pass &= r.verdict == Verdict::kPass || r.verdict == Verdict::kSkip;
  }
  std::printf("%s\n", pass ? "SWEEP PASSED" : "SWEEP FAILED");
  return pass ? 0 : 1;
}

}  // namespace
}  // namespace h3::sweep

int main(int argc, char** argv) { return h3::sweep::Main(argc, argv); }
