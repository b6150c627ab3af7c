#include "harness/testbed/cuda.h"

#include "absl/strings/str_cat.h"

namespace h3::testbed {

absl::Status CudaStatus(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(what, ": ", cudaGetErrorName(err), ": ", cudaGetErrorString(err)));
}

absl::Status CheckCudaDevice() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    return absl::UnavailableError(absl::StrCat("no CUDA device: ", cudaGetErrorString(err)));
  }
  if (count == 0) return absl::UnavailableError("no CUDA device: cudaGetDeviceCount returned 0");
  return absl::OkStatus();
}

}  // namespace h3::testbed
