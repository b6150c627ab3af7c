// The host time of one eager call of the op and of its CUDA pieces: where the ~8-10 us that
// Python's ctypes call of the C ABI (h3_out_proj_gpu) costs on the H200's host goes - ctypes, the
// C ABI's checks, the host API's own work (validation, tile choice, TMA descriptors) or the
// driver's (the ready flags' cudaMemsetAsync, the launch). Each row times batches of kBatch calls
// (std::chrono::steady_clock around the batch only) and synchronizes the stream after the clock
// stops, so the GPU's queue never fills and never blocks the host; the Time column is the batch's
// time / kBatch: host time per call, not GPU time. The numbers are the H200 host's (its CPU, its
// driver); an SM120 host will differ, the shares more than the sums carry over.
//
//   .dev/bin/host_cost --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//   (tools/device/stage.sh builds it; here: ./bazelw run -c opt //harness/bench:host_cost)
//
// Rows: cudaGetDevice; cudaStreamIsCapturing (non-blocking stream); cudaMemsetAsync/256B;
// empty_launch (<<<1, 32>>>, bench_kernels.cuh); op/M:m/zeroed:z/emu (MinimaxH3Nvfp4OutProj,
// kAsync, every buffer the caller's so the op allocates nothing; zeroed:1 sets
// ready_flags_zeroed, which skips the op's cudaMemsetAsync; emu = sm90_emulation, ignored on
// sm_120); capi/M:m/zeroed:z/emu (h3_out_proj_gpu from C++ as Python calls it: device given,
// cached_workspace = 1, ready_flags_zeroed = z). The op at zero codes and unit scales: its GPU time is
// not what is timed.

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "core/scale_layout.h"
#include "core/shape.h"
#include "harness/bench/bench_kernels.cuh"
#include "harness/testbed/cuda.h"
#include "kernels/out_proj.h"
#include "python/native/capi.h"

namespace h3::bench {
namespace {

using testbed::CudaStatus;
using testbed::DeviceBuffer;

constexpr int kBatch = 64;
constexpr int kBatches = 20;  // per repetition: 1280 calls

bool Failed(cudaError_t e) { return e != cudaSuccess; }
bool Failed(const absl::Status& s) { return !s.ok(); }
bool Failed(int32_t capi_code) { return capi_code != H3_OK; }
std::string Message(cudaError_t e, const char* what) { return CudaStatus(e, what).ToString(); }
std::string Message(const absl::Status& s, const char*) { return s.ToString(); }
std::string Message(int32_t code, const char*) {
  return absl::StrCat("h3_out_proj_gpu returned ", code, ": ", h3_last_error());
}

// False (and the benchmark skipped with `s`) unless s is OK.
bool Ok(benchmark::State& state, const absl::Status& s) {
  if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  return s.ok();
}

// A non-blocking stream (as torch's side streams are), destroyed with the benchmark; its Create
// also checks that there is a CUDA device.
class Stream {
 public:
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (s_ != nullptr) cudaStreamDestroy(s_);
  }
  absl::Status Create() {
    H3_RETURN_IF_ERROR(testbed::CheckCudaDevice());
    return CudaStatus(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking),
                      "cudaStreamCreateWithFlags");
  }
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// Times `call` (returning cudaError_t, absl::Status or a C ABI code) in batches of kBatch.
template <typename Call>
void TimeBatches(benchmark::State& state, const char* what, cudaStream_t stream, Call call) {
  for (auto _ : state) {
    decltype(call()) result{};
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i) {
      result = call();
      if (Failed(result)) break;
    }
    const auto stop = std::chrono::steady_clock::now();
    if (Failed(result)) {
      state.SkipWithError(Message(result, what).c_str());
      break;
    }
    if (!Ok(state, CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize"))) break;
    state.SetIterationTime(std::chrono::duration<double>(stop - start).count() / kBatch);
  }
}

// The op's operands at the MiniMax-H3 shape, M rows, every workspace given: zero activations,
// weight codes, gate and residual; unit scales (UE4M3 0x38, global 1.0); gate_index 0.
struct OpInputs {
  DeviceBuffer<uint16_t> attn_out, gate, residual, out;
  DeviceBuffer<uint8_t> w_q, w_sf, act_q, act_sf, flags;
  DeviceBuffer<float> act_gs;
  DeviceBuffer<int32_t> gate_index;
  OutProjArgs args;

  absl::Status Create(int64_t m) {
    const int64_t n = kH3N, k = kH3K, g = kH3G;
    const auto filled = [](auto& buf, int64_t count, uint8_t byte) {
      absl::Status s = buf.Alloc(static_cast<size_t>(count));
      return s.ok() ? buf.Fill(byte) : s;
    };
    for (absl::Status s :
         {filled(attn_out, m * k, 0), filled(gate, g * n, 0), filled(residual, m * n, 0),
          filled(out, m * n, 0), filled(w_q, n * k / 2, 0),
          filled(w_sf, SwizzledScaleBytes(n, k / 16), 0x38), filled(act_q, m * k / 2, 0),
          filled(act_sf, m * k / 16, 0), filled(flags, OutProjReadyFlagBytes(m), 0),
          filled(gate_index, m, 0), act_gs.Upload({1.0f})}) {
      H3_RETURN_IF_ERROR(s);
    }
    args.attn_out = Operand::Of(attn_out.get(), {m, k});
    args.o_weight_q = Operand::Of(w_q.get(), {n, k / 2});
    args.o_weight_sf = Operand::Of(w_sf.get(), {SwizzledScaleBytes(n, k / 16)});
    args.o_weight_global_scale_value = 1.0f;
    args.act_global_scale = Operand::Of(act_gs.get(), {1});
    args.gate = Operand::Of(gate.get(), {g, n});
    args.gate_index = Operand::Of(gate_index.get(), {m});
    args.residual = Operand::Of(residual.get(), {m, n});
    args.out = Operand::Of(out.get(), {m, n});
    args.act_q = Operand::Of(act_q.get(), {m, k / 2});
    args.act_sf = Operand::Of(act_sf.get(), {m, k / 16});
    args.ready_flags = Operand::Of(flags.get(), {OutProjReadyFlagBytes(m)});
    return absl::OkStatus();
  }
};

H3Array Array(const Operand& o) {
  H3Array a{const_cast<void*>(o.data), o.ndim, {}};
  for (int i = 0; i < 4; ++i) a.shape[i] = o.shape[i];
  return a;
}

// The C ABI's view of the same operands, as Python's eager path passes them.
H3OutProjArgs CapiArgs(const OutProjArgs& p, int device) {
  H3OutProjArgs a{};
  a.version = H3_CAPI_VERSION;
#define H3_OPERAND(name, ...) a.name = Array(p.name);
#include "core/operands.def"
#undef H3_OPERAND
  a.o_weight_global_scale_value = p.o_weight_global_scale_value;
  a.cached_workspace = 1;
  a.sm90_emulation = p.sm90_emulation == Sm90Emulation::kFast ? 1 : 0;
  a.device = device;
  a.ready_flags_zeroed = p.ready_flags_zeroed ? 1 : 0;
  return a;
}

void BM_Op(benchmark::State& state, int64_t m, bool zeroed, Sm90Emulation emu, bool capi) {
  Stream stream;
  OpInputs in;
  if (!Ok(state, stream.Create()) || !Ok(state, in.Create(m))) return;
  in.args.sm90_emulation = emu;
  // One checked call first: a kernel error shows here rather than as a row of fast failures, and
  // the process's first-call work (the tuning cache, per-context lookups) stays out of the rows.
  if (!Ok(state, MinimaxH3Nvfp4OutProj(in.args, stream.get(), CheckMode::kChecked))) return;
  in.args.ready_flags_zeroed = zeroed;  // the kernel left the flags zero
  cudaStream_t s = stream.get();
  if (!capi) {
    TimeBatches(state, "", s, [&] { return MinimaxH3Nvfp4OutProj(in.args, s, CheckMode::kAsync); });
    return;
  }
  int device = 0;
  if (!Ok(state, CudaStatus(cudaGetDevice(&device), "cudaGetDevice"))) return;
  const H3OutProjArgs a = CapiArgs(in.args, device);
  TimeBatches(state, "", s, [&] { return h3_out_proj_gpu(&a, s); });
}

template <typename Call>
void BM_Cuda(benchmark::State& state, const char* what, Call call) {
  Stream stream;
  if (!Ok(state, stream.Create())) return;
  DeviceBuffer<uint8_t> buf;
  if (!Ok(state, buf.Alloc(256))) return;
  TimeBatches(state, what, stream.get(), [&] { return call(stream.get(), buf.get()); });
}

int Main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) == cudaSuccess &&
      cudaGetDeviceProperties(&prop, device) == cudaSuccess) {
    std::fprintf(stderr, "device %d: %s (sm_%d%d); host time per call, batches of %d\n", device,
                 prop.name, prop.major, prop.minor, kBatch);
  }
  const auto add = [](const std::string& name, auto fn) {
    benchmark::RegisterBenchmark(name.c_str(), fn)
        ->UseManualTime()
        ->Unit(benchmark::kNanosecond)
        // A fixed count: a time-based one counts host time alone, and at the op's GPU time
        // (~0.27 ms per call for the faithful build at M = 1) would wait minutes per row.
        ->Iterations(kBatches);
  };
  add("cudaGetDevice", [](benchmark::State& st) {
    int d = 0;
    BM_Cuda(st, "cudaGetDevice", [&](cudaStream_t, void*) { return cudaGetDevice(&d); });
  });
  add("cudaStreamIsCapturing", [](benchmark::State& st) {
    cudaStreamCaptureStatus c{};
    BM_Cuda(st, "cudaStreamIsCapturing",
            [&](cudaStream_t s, void*) { return cudaStreamIsCapturing(s, &c); });
  });
  add("cudaMemsetAsync/256B", [](benchmark::State& st) {
    BM_Cuda(st, "cudaMemsetAsync",
            [](cudaStream_t s, void* p) { return cudaMemsetAsync(p, 0, 256, s); });
  });
  add("empty_launch", [](benchmark::State& st) {
    BM_Cuda(st, "LaunchEmpty", [](cudaStream_t s, void*) { return LaunchEmpty(s); });
  });
  for (int64_t m : {1, 128}) {
    for (Sm90Emulation emu : {Sm90Emulation::kFaithful, Sm90Emulation::kFast}) {
      const char* e = emu == Sm90Emulation::kFast ? "fast" : "faithful";
      for (bool capi : {false, true}) {
        for (bool zeroed : {false, true}) {
          add(absl::StrCat(capi ? "capi" : "op", "/M:", m, "/zeroed:", zeroed ? 1 : 0, "/", e),
              [=](benchmark::State& st) { BM_Op(st, m, zeroed, emu, capi); });
        }
      }
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace
}  // namespace h3::bench

int main(int argc, char** argv) { return h3::bench::Main(argc, argv); }
