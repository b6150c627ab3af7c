// The first-contact probe of an SM120 device: does the block-scaled mma.sync read A, B, SFA and
// SFB where docs/contract.md section 7 says, does it accumulate within section 8, does the e2m1
// conversion follow section 2? One line per check group, the first failures in contract terms
// (register, lane, nibble, scale byte), measurements, and a verdict that tells a layout bug from
// an accumulation-precision deviation from a conversion difference.
//
//   ./bazelw run //harness:probe                       # the current GPU (SM12x native, sm_90a
//                                                      # validation build); no GPU: the CPU model
//   ./bazelw run //harness:probe -- --json=probe.json  # also a JSON report

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "harness/cli.h"
#include "harness/probe/probe.h"
#include "harness/probe/probe_device.h"
#include "harness/user_path.h"

ABSL_FLAG(std::string, backend, "auto",
          "auto: the current CUDA device, or the CPU model when there is none (a self-check of "
          "the probe; it measures nothing); gpu: the current CUDA device (exit 1 without one); "
          "model: the contract's CPU model");
ABSL_FLAG(std::string, json, "",
          "also write the report as JSON to this path (relative to where the command ran)");
ABSL_FLAG(int, max_failures, 8, "failure descriptions printed per check group");

namespace h3::probe {
namespace {

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "The first-contact probe of the SM120 block-scaled MMA and e2m1 conversion against "
      "docs/contract.md.\n"
      "Usage: probe [--backend=auto|gpu|model] [--json=PATH] [--max_failures=N]\n"
      "Exit status: 0 when every check passes, 1 when one fails or the device cannot run the\n"
      "probe (--backend=gpu without a usable GPU), 2 on bad flags (a --json path that cannot be\n"
      "written: checked before anything runs).");
  if (std::optional<int> code = ParseToolFlags("probe", argc, argv)) return *code;
  const std::string backend = absl::GetFlag(FLAGS_backend);
  if (backend != "auto" && backend != "gpu" && backend != "model") {
    return PrintError("probe", 2, FlagError("backend", "auto, gpu or model", backend));
  }
  JudgeOptions options;
  options.max_failures = absl::GetFlag(FLAGS_max_failures);
  if (options.max_failures < 0) {
    return PrintError("probe", 2,
                      FlagError("max_failures", ">= 0", std::to_string(options.max_failures)));
  }
  // The report's path is checked now, not after the whole probe has run.
  std::string json_path;
  if (const std::string json = absl::GetFlag(FLAGS_json); !json.empty()) {
    json_path = ResolveUserPath(json);
    if (absl::Status st = CheckOutputPath("json", json_path); !st.ok()) {
      return PrintError("probe", 2, st);
    }
  }

  const ProbeCases cases = BuildCases();
  DeviceResults results;
  if (backend == "model") {
    results = RunModelDevice(cases);
  } else {
    absl::StatusOr<DeviceResults> gpu = RunOnCurrentDevice(cases);
    if (gpu.ok()) {
      results = *std::move(gpu);
    } else if (backend == "auto" && absl::IsUnavailable(gpu.status())) {
      std::printf(
          "%s: judging the contract's CPU model instead - a self-check "
          "of the probe, nothing about hardware is measured\n",
          std::string(gpu.status().message()).c_str());
      results = RunModelDevice(cases);
    } else {
      return PrintError("probe", 1,
                        absl::Status(gpu.status().code(), absl::StrCat("--backend=", backend, ": ",
                                                                       gpu.status().message())));
    }
  }
  const Report report = Judge(cases, results, options);
  std::fputs(FormatReport(report).c_str(), stdout);
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << ReportJson(report);
    f.close();
    if (!f) {
      return PrintError("probe", 1,
                        absl::InternalError(absl::StrCat("--json must be a writable file, got '",
                                                         json_path, "' (writing it failed: ",
                                                         std::strerror(errno), ")")));
    }
    std::printf("JSON report: %s\n", json_path.c_str());
  }
  return report.passed() ? 0 : 1;
}

}  // namespace
}  // namespace h3::probe

int main(int argc, char** argv) { return h3::probe::Main(argc, argv); }
