#include "kernels/stall_host.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "kernels/device/stall.h"

namespace h3::kernels {

// Far above any wait of a correct run: a stage takes microseconds, and the longest wait, a first
// tile's k-chunk behind the quantizers of the first wave, a fraction of one call.
absl::StatusOr<uint64_t> WaitLimitNs() {
  static const absl::StatusOr<uint64_t> limit = []() -> absl::StatusOr<uint64_t> {
#ifdef NDEBUG
    int64_t ms = 60000;
#else
    int64_t ms = 10000;
#endif
    if (const char* env = std::getenv("MINIMAX_H3_NVFP4_WAIT_LIMIT_MS"); env != nullptr) {
      if (!absl::SimpleAtoi(env, &ms) || ms < 1 || ms > 86400000) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "minimax_h3_nvfp4_out_proj: the environment variable MINIMAX_H3_NVFP4_WAIT_LIMIT_MS "
            "must be milliseconds in [1, 86400000], got '%s'",
            env));
      }
    }
    return static_cast<uint64_t>(ms) * 1000000u;
  }();
  return limit;
}

StallReport* StallReportOf(unsigned long long ctx, cudaStream_t stream, bool allocate) {
  struct Entry {
    StallReport* report = nullptr;
    bool failed = false;
  };
  static std::mutex mu;
  static auto* reports = new std::map<unsigned long long, Entry>();
  std::lock_guard<std::mutex> lock(mu);
  Entry& e = (*reports)[ctx];
  if (e.report != nullptr || e.failed || !allocate) return e.report;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess) {
    cudaGetLastError();  // tolerated: no report; the error must not reach the caller's checks
    e.failed = true;
    return nullptr;
  }
  if (capture != cudaStreamCaptureStatusNone) return nullptr;  // later, outside the capture
  // Relaxed: a global-mode capture on another thread would otherwise be invalidated by the
  // allocation.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  void* host = nullptr;
  const cudaError_t err = cudaHostAlloc(&host, sizeof(StallReport), cudaHostAllocMapped);
  cudaThreadExchangeStreamCaptureMode(&mode);
  if (err != cudaSuccess) {
    cudaGetLastError();
    e.failed = true;
    return nullptr;
  }
  std::memset(host, 0, sizeof(StallReport));
  e.report = static_cast<StallReport*>(host);  // UVA: the same address on the device
  return e.report;
}

}  // namespace h3::kernels
