#ifndef H3_HARNESS_TESTBED_CUDA_H_
#define H3_HARNESS_TESTBED_CUDA_H_

// The CUDA plumbing of the tests, the sweep and the benchmarks, once: errors as absl::Status,
// an RAII device buffer, and host <-> device copies of whole arrays or of selected rows.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace h3::testbed {

// OK, or Internal("<what>: <cudaErrorName>: <message>").
absl::Status CudaStatus(cudaError_t err, const char* what);

// OK when this machine has a CUDA device the runtime can use; else Unavailable(<why>), in the
// words of core/cuda_diagnosis.h: "no NVIDIA driver or GPU found (...)", a driver older than the
// runtime named with its version and the minimum, or "no CUDA device: ..." for the rest.
absl::Status CheckCudaDevice();

}  // namespace h3::testbed

// Returns the CUDA error of `expr` as a Status naming the expression.
#define H3_CUDA_RETURN_IF_ERROR(expr)                                             \
  do {                                                                            \
    const absl::Status h3_cuda_status = ::h3::testbed::CudaStatus((expr), #expr); \
    if (!h3_cuda_status.ok()) return h3_cuda_status;                              \
  } while (0)

// Returns a non-OK absl::Status.
#define H3_RETURN_IF_ERROR(expr)           \
  do {                                     \
    const absl::Status h3_status = (expr); \
    if (!h3_status.ok()) return h3_status; \
  } while (0)

namespace h3::testbed {

// A device allocation of `count` elements of T, freed on destruction. Never null once
// allocated (at least 256 bytes), so M = 0 problems pass pointers an API may check.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), count_(o.count_) {
    o.ptr_ = nullptr;
    o.count_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      Free();
      ptr_ = o.ptr_;
      count_ = o.count_;
      o.ptr_ = nullptr;
      o.count_ = 0;
    }
    return *this;
  }
  ~DeviceBuffer() { Free(); }

  absl::Status Alloc(size_t count) {
    Free();
    void* p = nullptr;
    const size_t bytes = count * sizeof(T) < 256 ? 256 : count * sizeof(T);
    H3_CUDA_RETURN_IF_ERROR(cudaMalloc(&p, bytes));
    ptr_ = static_cast<T*>(p);
    count_ = count;
    return absl::OkStatus();
  }
  // Allocates host.size() elements and copies `host` in.
  absl::Status Upload(absl::Span<const T> host) {
    H3_RETURN_IF_ERROR(Alloc(host.size()));
    if (host.empty()) return absl::OkStatus();
    return CudaStatus(
        cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
        "cudaMemcpy (host to device)");
  }
  // Every byte set to `byte` (e.g. 0xFF: a NaN poison for bf16 and never a UE4M3 scale).
  absl::Status Fill(uint8_t byte) {
    if (count_ == 0) return absl::OkStatus();
    return CudaStatus(cudaMemset(ptr_, byte, bytes()), "cudaMemset");
  }
  absl::StatusOr<std::vector<T>> Download() const {
    std::vector<T> host(count_);
    if (count_ > 0) {
      H3_CUDA_RETURN_IF_ERROR(cudaMemcpy(host.data(), ptr_, bytes(), cudaMemcpyDeviceToHost));
    }
    return host;
  }

  T* get() const { return ptr_; }
  size_t count() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }

 private:
  void Free() {
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = nullptr;
    count_ = 0;
  }
  T* ptr_ = nullptr;
  size_t count_ = 0;
};

// Rows `rows` (ascending) of a [*, row_elems] device array, as [rows.size(), row_elems].
template <typename T>
absl::StatusOr<std::vector<T>> DownloadRows(const T* dev, int64_t row_elems,
                                            absl::Span<const int64_t> rows) {
  std::vector<T> dst(rows.size() * static_cast<size_t>(row_elems));
  if (rows.empty() || row_elems == 0) return dst;
  const bool contiguous = rows.back() - rows.front() + 1 == static_cast<int64_t>(rows.size());
  if (contiguous) {
    H3_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst.data(), dev + rows.front() * row_elems,
                                       dst.size() * sizeof(T), cudaMemcpyDeviceToHost));
    return dst;
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    H3_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst.data() + i * row_elems, dev + rows[i] * row_elems,
                                       row_elems * sizeof(T), cudaMemcpyDeviceToHost));
  }
  return dst;
}

}  // namespace h3::testbed

#endif  // H3_HARNESS_TESTBED_CUDA_H_
