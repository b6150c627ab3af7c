#include "harness/bench/runner.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "harness/perf_model/model.h"
#include "harness/perf_model/reading.h"

namespace h3::bench {
namespace {

void Skip(benchmark::State& state, const absl::Status& why) {
  state.SkipWithError(why.ToString().c_str());
  for (auto _ : state) {
  }
}

// Google Benchmark's CSV header comes from the first benchmark and every later counter must be
// in it: every benchmark sets every counter (0 = not applicable).
void SetCounters(benchmark::State& state, BenchContext& ctx, const Contender& c, int64_t m,
                 int rotation, bool check_ok, double ms) {
  const std::string name = c.name;
  const bool fused_op = name.rfind("fused", 0) == 0;
  const DeviceInfo& d = ctx.device();
  for (const char* k : {"ms", "TFLOPs", "GBps", "pct_peak_flops", "pct_copy_bw", "pct_datasheet_bw",
                        "x_vs_bf16_gemm", "x_vs_bf16_unfused", "x_vs_nvfp4_unfused", "x_vs_copy",
                        "model_ms", "model_TFLOPs", "one_warp_mma", "model_one_warp_mma",
                        "model_exposed_epilogue_ms", "model_tma_latency_us",
                        "model_tma_latency_loaded_us", "model_l2_tbps"}) {
    state.counters[k] = 0;
  }
  state.counters["rotation"] = rotation;
  state.counters["check_ok"] = check_ok ? 1 : 0;
  state.counters["ms"] = ms;
  const double s = ms / 1e3;
  const double flops = c.flops(m);
  if (flops > 0) {
    const double tflops = flops / s / 1e12;
    state.counters["TFLOPs"] = tflops;
    const double peak = fused_op                  ? d.peak_op_tflops
                        : name == "nvfp4_unfused" ? d.peak_nvfp4_tflops
                                                  : d.peak_bf16_tflops;
    if (peak > 0) state.counters["pct_peak_flops"] = 100 * tflops / peak;
  }
  // On an SM12x device: the performance model's honest reading of this fused time (the built
  // design on this GPU's SM count, calibrated to the cuBLASLt anchor; harness/perf_model
  // reading.h), so the first SM120 run shows where the model is wrong, and beside it the model's
  // values of the inputs such a run measures (one_warp_mma, fused - fused_no_epilogue, the TMA
  // latency, the L2 bandwidth). 0 elsewhere: the model has no Hopper MMA. fused_128x256_one_group
  // gets no model_ms: it measures one of the model's inputs instead (one_warp_mma below).
  if (fused_op && d.prop.major == 12) {
    if (const perf_model::Hardware* hw =
            perf_model::Sm120HardwareForSmCount(d.prop.multiProcessorCount)) {
      perf_model::Problem problem;
      problem.m = m;
      problem.k = BenchK();
      // The row's config (contenders.h): fused_128x256_lockstep*, fused_128x256*,
      // fused_128x128*, else the default's (the staged 128x128; contenders.cc asserts it).
      perf_model::Design design = name.rfind("fused_128x256_lockstep", 0) == 0
                                      ? perf_model::CurrentLockstepDesign()
                                  : name.rfind("fused_128x256", 0) == 0
                                      ? perf_model::CurrentDesign()
                                  : name.rfind("fused_128x128", 0) == 0
                                      ? perf_model::Current128Design()
                                      : perf_model::BuiltDesigns()[0];
      const perf_model::MeasurableInputs mi =
          perf_model::ModelMeasurableInputs(*hw, design, problem);
      state.counters["model_one_warp_mma"] = mi.one_warp_mma;
      state.counters["model_exposed_epilogue_ms"] = mi.exposed_epilogue_s * 1e3;
      state.counters["model_tma_latency_us"] = mi.tma_latency_s * 1e6;
      state.counters["model_tma_latency_loaded_us"] = mi.tma_latency_loaded_s * 1e6;
      state.counters["model_l2_tbps"] = mi.l2_bytes_per_s * 1e-12;
      if (name != "fused_128x256_one_group") {
        if (name.find("no_epilogue") != std::string::npos) {
          design.epilogue = perf_model::Epilogue::kNone;
        }
        const perf_model::Reading r = perf_model::Read(*hw, design, problem);
        state.counters["model_TFLOPs"] = r.tflops;
        state.counters["model_ms"] = r.seconds * 1e3;
      }
    }
  }
  // The rate one MMA warp per sub-partition sustains, as a fraction of two warps' (the perf
  // model's single_warp_mma), on the skewed config whose alone phases rest on it:
  // fused_128x256_no_epilogue runs both warpgroups' MMAs, fused_128x256_one_group half of them
  // with one warpgroup; the rest of both runs (quantizer, loads) is the same.
  if (name == "fused_128x256_one_group") {
    if (const double* t2 = ctx.FindTime("fused_128x256_no_epilogue", m)) {
      state.counters["one_warp_mma"] = *t2 / (2 * ms);
    }
  }
  const double gbps = c.bytes(m) / s / 1e9;
  state.counters["GBps"] = gbps;
  if (ctx.copy_gbps() > 0) state.counters["pct_copy_bw"] = 100 * gbps / ctx.copy_gbps();
  if (d.datasheet_gbps > 0) state.counters["pct_datasheet_bw"] = 100 * gbps / d.datasheet_gbps;
  // Ratios, baseline time / this time (> 1: this one is faster), against baselines timed
  // earlier in the run: every contender against the copy, the fused op against the GEMMs.
  for (const char* base : {"bf16_gemm", "bf16_unfused", "nvfp4_unfused", "copy"}) {
    const double* t = ctx.FindTime(base, m);
    if (t != nullptr && name != base && (fused_op || std::string(base) == "copy")) {
      state.counters[absl::StrCat("x_vs_", base)] = *t / ms;
    }
  }
}

}  // namespace

void RunBenchmark(benchmark::State& state, BenchContext& ctx, const Contender& c, int64_t m) {
  absl::StatusOr<Inputs*> inputs = ctx.InputsFor(m);
  if (!inputs.ok()) return Skip(state, inputs.status());
  const Inputs& in = **inputs;
  if (absl::Status ready = c.prepare(ctx, in); !ready.ok()) return Skip(state, ready);
  const bool check_ok = c.check(ctx, in).ok();
  // Warm-up on set 0 (module load, first-call allocations), untimed.
  absl::Status warm = c.enqueue(ctx, in, *in.sets[0]);
  warm.Update(testbed::CudaStatus(cudaStreamSynchronize(ctx.stream()), "cudaStreamSynchronize"));
  if (!warm.ok()) return Skip(state, warm);

  const int rotation = static_cast<int>(in.sets.size());
  double total_ms = 0;
  int64_t calls = 0;
  std::vector<float> call_ms;
  for (auto _ : state) {
    const RotationSet& s = *in.sets[calls % rotation];
    absl::StatusOr<float> ms = ctx.TimeCall([&] { return c.enqueue(ctx, in, s); });
    if (!ms.ok()) {
      state.SkipWithError(ms.status().ToString().c_str());
      break;
    }
    state.SetIterationTime(*ms / 1e3);
    total_ms += *ms;
    call_ms.push_back(*ms);
    ++calls;
  }
  if (calls == 0) return;
  if (c.tile != nullptr && check_ok) ctx.RecordTuneTimes(c.tile, m, call_ms);
  const double mean_ms = total_ms / calls;
  ctx.RecordTime(c.name, m, mean_ms);
  SetCounters(state, ctx, c, m, rotation, check_ok, mean_ms);
}

}  // namespace h3::bench
