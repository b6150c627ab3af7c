// The C ABI's CUDA device queries (capi.h): device count and properties, for the tuning cache's
// key (python/minimax_h3_nvfp4/tuning.py) and `python -m minimax_h3_nvfp4 info`. None of them
// enqueues work, so they may run while a stream is being captured.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/cuda_diagnosis.h"
#include "python/native/capi.h"
#include "python/native/last_error.h"

using ::h3::capi::Done;
using ::h3::capi::Fail;

extern "C" {

int32_t h3_device_count(int32_t* count) {
  constexpr char kFn[] = "h3_device_count";
  if (count == nullptr) {
    return Fail(absl::InvalidArgumentError("h3_device_count: count must be a pointer, got NULL"),
                kFn);
  }
  *count = 0;
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    int driver = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
    static_assert(h3::kCudaErrorNoDevice == cudaErrorNoDevice);
    const cudaError_t why = e != cudaSuccess ? e : cudaErrorNoDevice;
    return Fail(absl::FailedPreconditionError(h3::NoCudaDeviceReason(
                    why, cudaGetErrorName(why), cudaGetErrorString(why), driver, CUDART_VERSION)),
                kFn);
  }
  *count = n;
  return Done(absl::OkStatus(), kFn);
}

int32_t h3_device_properties(int32_t device, H3DeviceProperties* props) {
  constexpr char kFn[] = "h3_device_properties";
  if (props == nullptr) {
    return Fail(
        absl::InvalidArgumentError("h3_device_properties: props must be a pointer, got NULL"),
        kFn);
  }
  if (device < 0) {
    return Fail(absl::InvalidArgumentError(absl::StrFormat(
                    "h3_device_properties: device must be a CUDA device ordinal >= 0, got %d",
                    device)),
                kFn);
  }
  auto cuda_failed = [&](cudaError_t e, const char* what) {
    return Fail(absl::InternalError(absl::StrFormat("%s: %s failed for device %d: %s (%s)", kFn,
                                                    what, device, cudaGetErrorName(e),
                                                    cudaGetErrorString(e))),
                kFn);
  };
  cudaDeviceProp p;
  cudaError_t e = cudaGetDeviceProperties(&p, device);
  if (e != cudaSuccess) return cuda_failed(e, "cudaGetDeviceProperties");
  int driver = 0;
  e = cudaDriverGetVersion(&driver);
  if (e != cudaSuccess) return cuda_failed(e, "cudaDriverGetVersion");
  std::memset(props, 0, sizeof(*props));
  const size_t len = strnlen(p.name, sizeof(p.name));
  std::memcpy(props->name, p.name, std::min(len, sizeof(props->name) - 1));
  props->major = p.major;
  props->minor = p.minor;
  props->sm_count = p.multiProcessorCount;
  props->driver_version = driver;
  return Done(absl::OkStatus(), kFn);
}

}  // extern "C"
