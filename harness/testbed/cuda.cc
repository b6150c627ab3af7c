#include "harness/testbed/cuda.h"

#include "absl/strings/str_cat.h"
#include "core/cuda_diagnosis.h"

namespace h3::testbed {

absl::Status CudaStatus(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat(what, ": ", cudaGetErrorName(err), ": ", cudaGetErrorString(err)));
}

static_assert(cudaErrorInsufficientDriver == kCudaErrorInsufficientDriver);
static_assert(cudaErrorNoDevice == kCudaErrorNoDevice);

absl::Status CheckCudaDevice() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    int driver = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
    return absl::UnavailableError(NoCudaDeviceReason(
        err, cudaGetErrorName(err), cudaGetErrorString(err), driver, CUDART_VERSION));
  }
  if (count == 0) return absl::UnavailableError("no CUDA device: cudaGetDeviceCount returned 0");
  return absl::OkStatus();
}

}  // namespace h3::testbed
