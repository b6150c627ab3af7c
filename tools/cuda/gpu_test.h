#ifndef H3_TOOLS_CUDA_GPU_TEST_H_
#define H3_TOOLS_CUDA_GPU_TEST_H_

// GPU tests call H3_SKIP_WITHOUT_GPU() first: on machines with no CUDA device the test is
// reported as skipped with the reason (./bazelw leaves the tagged GPU tests out there and counts
// them); where a device is present it runs for real. With H3_REQUIRE_GPU=1 in the environment
// (`--config=gpu` sets it) a missing device fails the test instead: a run that asked for the GPU
// tests never passes without running them.

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/cuda_diagnosis.h"

namespace h3::testing {

// Empty when a device is usable, else why not.
inline std::string NoGpuReason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice) {
    int driver = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
    return NoCudaDeviceReason(err, cudaGetErrorName(err), cudaGetErrorString(err), driver,
                              CUDART_VERSION);
  }
  if (err != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorString(err);
  if (count == 0) return "no CUDA device: cudaGetDeviceCount returned 0";
  return "";
}

inline bool GpuRequired() {
  const char* v = std::getenv("H3_REQUIRE_GPU");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace h3::testing

#define H3_SKIP_WITHOUT_GPU()                                                          \
  do {                                                                                 \
    const std::string h3_no_gpu_reason = ::h3::testing::NoGpuReason();                 \
    if (!h3_no_gpu_reason.empty()) {                                                   \
      if (::h3::testing::GpuRequired()) FAIL() << "H3_REQUIRE_GPU=1: " << h3_no_gpu_reason; \
      GTEST_SKIP() << h3_no_gpu_reason;                                                \
    }                                                                                  \
  } while (0)

#endif  // H3_TOOLS_CUDA_GPU_TEST_H_
