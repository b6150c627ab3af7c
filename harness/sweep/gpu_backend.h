// The sweep's GPU backend: the kernel (//kernels:out_proj) on the current CUDA device.

#ifndef H3_HARNESS_SWEEP_GPU_BACKEND_H_
#define H3_HARNESS_SWEEP_GPU_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "harness/sweep/runner.h"

namespace h3::sweep {

// The GPU backend when a CUDA device is present and the kernel has a build for it; otherwise an
// error saying plainly why not (no device, no driver, unsupported architecture).
absl::StatusOr<std::unique_ptr<DeviceBackend>> MakeGpuBackend();

}  // namespace h3::sweep

#endif  // H3_HARNESS_SWEEP_GPU_BACKEND_H_
