// The sweep's GPU backend: the kernel (//kernels:out_proj) on the current CUDA device.

#ifndef H3_HARNESS_SWEEP_GPU_BACKEND_H_
#define H3_HARNESS_SWEEP_GPU_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "harness/sweep/runner.h"
#include "kernels/out_proj.h"

namespace h3::sweep {

// The GPU backend when a CUDA device is present and the kernel has a build for it; otherwise an
// error saying plainly why not (no device, no driver, unsupported architecture).
// On sm_90, `sm90_emulation` picks the validation kernel (kernels/out_proj.h).
absl::StatusOr<std::unique_ptr<DeviceBackend>> MakeGpuBackend(Sm90Emulation sm90_emulation);

}  // namespace h3::sweep

#endif  // H3_HARNESS_SWEEP_GPU_BACKEND_H_
