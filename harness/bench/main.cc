// The op against what a user would run instead, timed in the same run (contenders.h lists them),
// over M at the MiniMax-H3 shape (N = 5376, K = 7168, G = 9). Each contender is checked once per
// M against the CPU emulator before it is timed; inputs rotate past the L2 (inputs.h); each call
// is timed alone by CUDA events (context.h); the output is Google Benchmark's own (console, and
// --benchmark_out=x.csv --benchmark_out_format=csv|json).
//
//   ./bazelw run -c opt //harness:bench -- --bench_m=4096,16384 --benchmark_repetitions=3
//
// --write_tune_cache[=PATH] also records, per M, the fastest registry config (median of its timed
// calls, among those whose check passed) in the tuning cache that OutProjTile::kAuto and
// Python's tile="auto" read (kernels/tuning/tune_cache.h; without PATH: $MINIMAX_H3_NVFP4_TUNE_CACHE,
// else ~/.cache/minimax_h3_nvfp4/tune.json), as `python -m minimax_h3_nvfp4 tune` does.
//
// Statically linked but for libc/libstdc++ and the NVIDIA driver; cuBLASLt is loaded at run time
// (cublas_lt.h), so the binary copies to a GPU machine as one file.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "benchmark/benchmark.h"
#include "harness/bench/contenders.h"
#include "harness/bench/context.h"
#include "harness/bench/runner.h"
#include "harness/bench/tune_winners.h"
#include "harness/int_list_flag.h"
#include "kernels/out_proj.h"
#include "kernels/tuning/tune_cache.h"

namespace h3 {

// --sm90_emulation=faithful|fast (ADL finds these for the flag of type Sm90Emulation; declared
// before their definitions because no header declares them).
bool AbslParseFlag(absl::string_view text, Sm90Emulation* mode, std::string* error);
std::string AbslUnparseFlag(Sm90Emulation mode);

bool AbslParseFlag(absl::string_view text, Sm90Emulation* mode, std::string* error) {
  if (text == "faithful") {
    *mode = Sm90Emulation::kFaithful;
  } else if (text == "fast") {
    *mode = Sm90Emulation::kFast;
  } else {
    *error = "expected faithful or fast";
    return false;
  }
  return true;
}
std::string AbslUnparseFlag(Sm90Emulation mode) {
  return mode == Sm90Emulation::kFast ? "fast" : "faithful";
}

}  // namespace h3

// 75856: a 720p 5-second clip (estimated).
ABSL_FLAG(std::vector<std::string>, bench_m,
          std::vector<std::string>({"128", "1024", "4096", "16384", "32768", "75856"}),
          "comma-separated M values (tokens)");
ABSL_FLAG(int64_t, bench_k, h3::kH3K,
          "K of every contender (a positive multiple of 256; not 7168: the benchmark names get "
          "/K:<k>), e.g. small K to time the fused op's per-tile fixed cost (epilogue, pipeline "
          "fill) by extrapolating T(K) to K = 0");
ABSL_FLAG(h3::Sm90Emulation, sm90_emulation, h3::Sm90Emulation::kFaithful,
          "sm_90 only: which exact emulation of the block-scaled MMA the fused op runs, faithful "
          "(the SM120 kernel itself) or fast (wgmma consumer loop); see kernels/out_proj.h");
ABSL_FLAG(std::string, cublaslt, "libcublasLt.so.13",
          "the cuBLASLt to load: a soname (searched as the dynamic loader does, then in "
          "/usr/local/cuda/lib64 and beside the binary) or a path, e.g. PyTorch's own copy");

ABSL_FLAG(std::string, write_tune_cache, "",
          "after timing: record each M's fastest registry config in the tuning cache at this "
          "path (\"default\" or the bare flag: $MINIMAX_H3_NVFP4_TUNE_CACHE, else "
          "~/.cache/minimax_h3_nvfp4/tune.json), the file kAuto and Python's tile=\"auto\" read");

namespace h3::bench {
namespace {

constexpr char kDefaultCache[] = "default";

// --write_tune_cache: the winners among the registry configs this run timed, recorded as
// `python -m minimax_h3_nvfp4 tune` records its own (RecordTuneWinners). Says what it wrote on
// stderr.
int WriteTuneCache(const BenchContext& ctx, const std::vector<int64_t>& ms, int64_t k,
                   const std::string& flag) {
  const std::string path = flag == kDefaultCache ? TuneCachePath() : flag;
  const cudaDeviceProp& p = ctx.device().prop;
  TuneDevice device;
  device.name.assign(p.name, strnlen(p.name, sizeof(p.name)));
  device.major = p.major;
  device.minor = p.minor;
  device.sm_count = p.multiProcessorCount;
  if (cudaDriverGetVersion(&device.driver_version) != cudaSuccess) device.driver_version = 0;
  const bool fast = ctx.options().sm90_emulation == Sm90Emulation::kFast;
  const char* variant = TuneVariant(device.major, fast);
  std::vector<int64_t> skipped;
  const std::vector<TuneWinner> winners =
      PickTuneWinners(ctx.tune_times(), ms, device.major == 9 && fast, &skipped);
  for (int64_t m : skipped) {
    std::fprintf(stderr,
                 "tune cache: M=%lld: no registry config was timed and checked; not "
                 "recorded\n",
                 static_cast<long long>(m));
  }
  if (winners.empty()) {
    std::fprintf(stderr,
                 "tune cache: nothing to record (run the fused contenders: "
                 "--benchmark_filter must match fused, fused_128x256_lockstep, fused_128x256, "
                 "fused_128x128)\n");
    return 1;
  }
  const absl::Status s = RecordTuneWinners(path, device, kN, k, variant, winners);
  if (!s.ok()) {
    std::fprintf(stderr, "tune cache: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::string rows;
  for (const TuneWinner& w : winners) {
    absl::StrAppend(&rows, " M=", w.m, " ", w.tile, " (", absl::StrFormat("%.4f", w.median_ms),
                    " ms)");
  }
  std::fprintf(stderr, "tune cache: wrote %s [%s | %s]:%s\n", path.c_str(),
               TuneDeviceKey(device).c_str(), TuneShapeKey(kN, k, variant).c_str(), rows.c_str());
  // Read back by kAuto's own reader: each M must resolve to what was written.
  std::vector<std::string> warnings;
  const TuneCache back = TuneCache::FromFile(path, &warnings);
  std::string picks;
  bool same = true;
  for (const TuneWinner& w : winners) {
    const TuneCache::Choice c = back.Choose(device, w.m, kN, k, variant, &warnings);
    const char* name = FindOutProjTile(c.tile)->name;
    absl::StrAppend(&picks, " M=", w.m, " ", name);
    same = same && c.tuned && w.tile == name;
  }
  for (const std::string& w : warnings)
    std::fprintf(stderr, "tune cache: warning: %s\n", w.c_str());
  std::fprintf(stderr, "tune cache: kAuto reads back:%s\n", picks.c_str());
  if (!same) {
    std::fprintf(stderr, "tune cache: what kAuto reads back differs from what was written\n");
    return 1;
  }
  return 0;
}

constexpr char kUsage[] =
    "Times minimax_h3_nvfp4_out_proj against its unfused baselines.\n"
    "Flags of this binary (absl; --helpfull lists them with their defaults):\n"
    "  --bench_m=128,4096        M values\n"
    "  --bench_k=7168            K (a positive multiple of 256)\n"
    "  --sm90_emulation=faithful|fast\n"
    "  --cublaslt=libcublasLt.so.13\n"
    "  --write_tune_cache[=PATH]  record each M's fastest config for tile auto\n"
    "and Google Benchmark's own --benchmark_* flags:\n";

void PrintHelp() {
  std::fputs(kUsage, stdout);
  benchmark::PrintDefaultHelp();
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  // Google Benchmark takes its --benchmark_* flags (and --help) out of argv; absl parses the
  // rest and rejects what neither knows.
  // The bare --write_tune_cache means the default path (absl wants a value for a string flag).
  static char default_flag[] = "--write_tune_cache=default";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--write_tune_cache") == 0) argv[i] = default_flag;
  }
  benchmark::Initialize(&argc, argv, &PrintHelp);
  const std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() > 1) {
    std::fprintf(stderr, "unexpected argument '%s' (see --help)\n", positional[1]);
    return 2;
  }
  const absl::StatusOr<std::vector<int64_t>> ms =
      ParseIntListFlag("bench_m", absl::GetFlag(FLAGS_bench_m), 1);
  if (!ms.ok()) {
    std::fprintf(stderr, "%s\n", std::string(ms.status().message()).c_str());
    return 2;
  }
  const int64_t k = absl::GetFlag(FLAGS_bench_k);
  if (k < 256 || k % 256 != 0 || k > (int64_t{1} << 30)) {
    std::fprintf(stderr, "--bench_k: expected a positive multiple of 256 up to 2^30, got %lld\n",
                 static_cast<long long>(k));
    return 2;
  }
  const std::string tune_cache = absl::GetFlag(FLAGS_write_tune_cache);
  if (tune_cache == kDefaultCache && TuneCachePath().empty()) {
    std::fprintf(stderr,
                 "--write_tune_cache: no default path (set MINIMAX_H3_NVFP4_TUNE_CACHE, "
                 "XDG_CACHE_HOME or HOME, or give --write_tune_cache=PATH)\n");
    return 2;
  }
  SetBenchK(k);
  const std::string k_suffix = k == kH3K ? "" : absl::StrCat("/K:", k);
  BenchOptions options;
  options.sm90_emulation = absl::GetFlag(FLAGS_sm90_emulation);
  options.cublaslt_library = absl::GetFlag(FLAGS_cublaslt);

  absl::StatusOr<std::unique_ptr<BenchContext>> created = BenchContext::Create(options);
  if (!created.ok()) {
    std::fprintf(stderr, "the benchmark needs a CUDA device; nothing measured: %s\n",
                 created.status().ToString().c_str());
    return absl::IsUnavailable(created.status()) ? 0 : 1;
  }
  BenchContext* ctx = created->get();
  const DeviceInfo& d = ctx->device();
  absl::StatusOr<std::string> build = OutProjBackendName(options.sm90_emulation);
  std::fprintf(
      stderr,
      "device: %s (sm_%d%d, %d SMs, L2 %d MiB); fused op build: %s\n"
      "roofline: %s peak %.1f TFLOP/s (datasheet), memory %.0f GB/s (datasheet); "
      "measured D2D copy (1 GiB, best of 10): %.0f GB/s\n"
      "baselines: %s\n",
      d.prop.name, d.prop.major, d.prop.minor, d.prop.multiProcessorCount, d.prop.l2CacheSize >> 20,
      build.ok() ? build->c_str() : build.status().ToString().c_str(), d.peak_what.c_str(),
      d.peak_op_tflops, d.datasheet_gbps, ctx->copy_gbps(),
      ctx->lt() != nullptr
          ? ctx->lt()->description().c_str()
          : absl::StrCat("cuBLAS contenders skipped: ", ctx->lt_status().ToString()).c_str());
  for (int64_t m : *ms) {
    for (const Contender& c : Contenders()) {
      benchmark::RegisterBenchmark(
          absl::StrCat(c.name, "/M:", m, k_suffix).c_str(),
          [ctx, &c, m](benchmark::State& state) { RunBenchmark(state, *ctx, c, m); })
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          // Each repetition starts in the contender's own steady state (clocks under its load),
          // not in the state the previous contender or the CPU-side check left.
          ->MinWarmUpTime(0.1)
          ->MinTime(0.1);
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (!tune_cache.empty()) return WriteTuneCache(*ctx, *ms, k, tune_cache);
  return 0;
}

}  // namespace
}  // namespace h3::bench

int main(int argc, char** argv) { return h3::bench::Main(argc, argv); }
