#ifndef H3_TOOLS_CUDA_GPU_TEST_H_
#define H3_TOOLS_CUDA_GPU_TEST_H_

// GPU tests call H3_SKIP_WITHOUT_GPU() first: on machines with no CUDA device (CI) the test is
// reported as skipped with the reason, so `bazel test //...` passes there; where a device is
// present it runs for real. `--config=gpu` selects just these tests (tag "gpu").

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

namespace h3::testing {

// Empty when a device is usable, else why not.
inline std::string NoGpuReason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorString(err);
  if (count == 0) return "no CUDA device: cudaGetDeviceCount returned 0";
  return "";
}

}  // namespace h3::testing

#define H3_SKIP_WITHOUT_GPU()                                          \
  do {                                                                 \
    const std::string h3_no_gpu_reason = ::h3::testing::NoGpuReason(); \
    if (!h3_no_gpu_reason.empty()) GTEST_SKIP() << h3_no_gpu_reason;   \
  } while (0)

#endif  // H3_TOOLS_CUDA_GPU_TEST_H_
