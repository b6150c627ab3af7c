// Everything a benchmark run shares, in one object owned by main() (no mutable globals): the device
// and its rooflines, the stream and timing events, cuBLASLt (when loadable), the inputs of the
// current M, the tuned cuBLASLt GEMMs, the check verdicts and the times measured so far (for the
// ratio columns).

#ifndef H3_HARNESS_BENCH_CONTEXT_H_
#define H3_HARNESS_BENCH_CONTEXT_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "harness/bench/cublas_lt.h"
#include "harness/bench/device_info.h"
#include "harness/bench/inputs.h"
#include "kernels/out_proj.h"

namespace h3::bench {

struct BenchOptions {
  Sm90Emulation sm90_emulation = Sm90Emulation::kFaithful;
  std::string cublaslt_library = "libcublasLt.so.13";
};

class BenchContext {
 public:
  // Queries the device, measures the copy bandwidth and loads cuBLASLt (its failure is kept in
  // lt_status(), not returned: the other contenders still run).
  static absl::StatusOr<std::unique_ptr<BenchContext>> Create(const BenchOptions& options);
  ~BenchContext();
  BenchContext(const BenchContext&) = delete;
  BenchContext& operator=(const BenchContext&) = delete;

  const BenchOptions& options() const { return options_; }
  const DeviceInfo& device() const { return device_; }
  double copy_gbps() const { return copy_gbps_; }
  cudaStream_t stream() const { return stream_; }
  const CublasLt* lt() const { return lt_.get(); }  // nullptr when not loaded
  const absl::Status& lt_status() const { return lt_status_; }

  // The inputs of M, made on first use (the previous M's are freed first: only one M's rotation
  // sets are resident at a time).
  absl::StatusOr<Inputs*> InputsFor(int64_t m);

  // The cuBLASLt GEMM of this kind and M, created on first use and tuned there: every heuristic
  // candidate is timed in its own steady state (after 60 ms of back-to-back calls), like the
  // benchmark times a call, for 100 ms, through `enqueue(gemm, algo, set)` (one call of candidate
  // `algo` on a rotation set); the fastest median is kept. Prints every candidate's time.
  using GemmCall = std::function<absl::Status(LtMatmul& gemm, int algo, const RotationSet& set)>;
  absl::StatusOr<LtMatmul*> Gemm(LtMatmul::Kind kind, const Inputs& in, const GemmCall& enqueue);

  // `check` run once per (key, M); later calls return the first verdict. Prints it.
  absl::Status CheckOnce(const std::string& key, int64_t m, const std::string& against,
                         const std::function<absl::Status()>& check);

  // The GPU time of one call (ms): a spin kernel first keeps the GPU busy while the host enqueues
  // the start event, the call and the stop event, so host launch latency stays outside.
  absl::StatusOr<float> TimeCall(const std::function<absl::Status()>& enqueue);

  // Mean time (ms) of each (contender, M) measured so far.
  void RecordTime(const std::string& contender, int64_t m, double ms) {
    times_[{contender, m}] = ms;
  }
  const double* FindTime(const std::string& contender, int64_t m) const;

  // Every timed call (ms) of each registry config (Contender::tile) at each M whose check
  // passed: what --write_tune_cache picks the winners from.
  void RecordTuneTimes(const std::string& tile, int64_t m, const std::vector<float>& ms) {
    std::vector<float>& all = tune_times_[tile][m];
    all.insert(all.end(), ms.begin(), ms.end());
  }
  const std::map<std::string, std::map<int64_t, std::vector<float>>>& tune_times() const {
    return tune_times_;
  }

 private:
  BenchContext() = default;
  BenchOptions options_;
  DeviceInfo device_;
  double copy_gbps_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  std::unique_ptr<CublasLt> lt_;
  absl::Status lt_status_;
  std::unique_ptr<Inputs> inputs_;
  std::map<std::pair<LtMatmul::Kind, int64_t>, std::unique_ptr<LtMatmul>> gemms_;
  std::map<std::pair<std::string, int64_t>, absl::Status> checks_;
  std::map<std::pair<std::string, int64_t>, double> times_;
  std::map<std::string, std::map<int64_t, std::vector<float>>> tune_times_;
};

}  // namespace h3::bench

#endif  // H3_HARNESS_BENCH_CONTEXT_H_
