// ./bazelw run //harness:perf_model [-- --hardware=rtx5090|rtx_pro_6000|all --m=4096,16384
//                                       --design=all|current,v2_... --calibrate_h200 --verbose]
//
// Prints the performance model's components and predicted TFLOP/s for the current kernel and the
// v2 candidates (model.h), on the RTX 5090 and the RTX PRO 6000, and names the best design per
// M. A model, not a measurement: see each constant's source, `ASSUMED` marks the unmeasured ones.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "harness/int_list_flag.h"
#include "harness/perf_model/model.h"
#include "harness/perf_model/reading.h"
#include "harness/perf_model/report.h"

ABSL_FLAG(std::string, hardware, "all", "rtx5090, rtx_pro_6000 or all (both)");
ABSL_FLAG(std::string, m, "128,1024,4096,16384,75856", "comma-separated M values");
ABSL_FLAG(std::string, design, "all",
          "comma-separated design names (current, v2_..., L0_..L8_ ladder steps, "
          "ref_gemm_128x256_k128_s3, x_256x256_k256_s2) or all");
ABSL_FLAG(bool, ladder, true, "print the gain of each design choice, cumulatively");
ABSL_FLAG(bool, verbose, false, "print each design's per-stage breakdown");
ABSL_FLAG(bool, calibrate_h200, false,
          "print the model's predictions of the terms measurable on the H200, instead");
ABSL_FLAG(double, l2_tbps, 0, "override the L2 bandwidth (TB/s) of every hardware (sensitivity)");
ABSL_FLAG(double, tma_latency_ns, 0, "override the TMA stage latency (ns)");
ABSL_FLAG(double, dram_latency_ns, 0, "override the DRAM latency (ns)");
ABSL_FLAG(int, samples, 2000, "Monte Carlo draws of the assumed inputs (the honest reading)");
ABSL_FLAG(uint64_t, seed, 18, "seed of the Monte Carlo draws");

namespace h3::perf_model {
namespace {

void ApplyOverrides(Hardware& h) {
  if (absl::GetFlag(FLAGS_l2_tbps) > 0) {
    h.l2_bytes_per_s = {absl::GetFlag(FLAGS_l2_tbps) * 1e12, "--l2_tbps override", true};
  }
  if (absl::GetFlag(FLAGS_tma_latency_ns) > 0) {
    h.tma_latency_s = {absl::GetFlag(FLAGS_tma_latency_ns) * 1e-9, "--tma_latency_ns override",
                       true};
  }
  if (absl::GetFlag(FLAGS_dram_latency_ns) > 0) {
    h.dram_latency_s = {absl::GetFlag(FLAGS_dram_latency_ns) * 1e-9, "--dram_latency_ns override",
                        true};
  }
}

std::vector<int64_t> ParseMs() {
  const std::vector<std::string> tokens =
      absl::StrSplit(absl::GetFlag(FLAGS_m), ',', absl::SkipEmpty());
  absl::StatusOr<std::vector<int64_t>> ms = ParseIntListFlag("m", tokens, 0);
  if (!ms.ok()) {
    std::fprintf(stderr, "%s\n", std::string(ms.status().message()).c_str());
    std::exit(2);
  }
  return *std::move(ms);
}

std::vector<Design> SelectedDesigns() {
  const std::string sel = absl::GetFlag(FLAGS_design);
  std::vector<Design> out;
  if (sel == "all") {
    for (const Design& d : BuiltDesigns()) out.push_back(d);
    out.push_back(V1Design());
    for (const Design& d : CandidateDesigns()) out.push_back(d);
    for (const Design& d : CuteScheduleDesigns()) out.push_back(d);
    return out;
  }
  for (absl::string_view s : absl::StrSplit(sel, ',', absl::SkipEmpty())) {
    const Design* d = FindDesign(std::string(s));
    if (d == nullptr) {
      std::fprintf(stderr, "unknown --design '%s'\n", std::string(s).c_str());
      std::exit(2);
    }
    out.push_back(*d);
  }
  return out;
}

}  // namespace
}  // namespace h3::perf_model

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  using namespace h3::perf_model;
  if (absl::GetFlag(FLAGS_calibrate_h200)) {
    Hardware h = H200();
    ApplyOverrides(h);
    PrintH200Calibration(h);
    return 0;
  }
  std::vector<Hardware> hws;
  const std::string hw = absl::GetFlag(FLAGS_hardware);
  if (hw == "rtx5090" || hw == "all") hws.push_back(Rtx5090());
  if (hw == "rtx_pro_6000" || hw == "all") hws.push_back(RtxPro6000());
  if (hws.empty()) {
    std::fprintf(stderr, "unknown --hardware '%s' (rtx5090, rtx_pro_6000, all)\n", hw.c_str());
    return 2;
  }
  for (Hardware& h : hws) ApplyOverrides(h);
  const std::vector<int64_t> ms = ParseMs();
  const std::vector<Design> designs = SelectedDesigns();
  ReportOptions options;
  options.verbose = absl::GetFlag(FLAGS_verbose);
  options.ladder = absl::GetFlag(FLAGS_ladder);
  PrintSm120Report(hws, designs, ms, options);
  UncertaintyOptions uncertainty;
  uncertainty.samples = absl::GetFlag(FLAGS_samples);
  uncertainty.seed = absl::GetFlag(FLAGS_seed);
  if (uncertainty.samples < 1) {
    std::fprintf(stderr, "--samples must be >= 1, got %d\n", uncertainty.samples);
    return 2;
  }
  PrintReading(hws, designs, ms, uncertainty);
  return 0;
}
