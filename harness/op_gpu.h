// The GPU backend of //harness:op: the kernel's host API (//kernels:out_proj)
// on the current CUDA device, native sm_120a or the sm_90a validation build.

#ifndef H3_HARNESS_OP_GPU_H_
#define H3_HARNESS_OP_GPU_H_

#include <string>

#include "absl/status/statusor.h"
#include "harness/op_io.h"

namespace h3 {

// Copies the inputs to the device, runs MinimaxH3Nvfp4OutProj in checked mode
// with caller workspaces for act_q/act_sf, and copies the results back.
// Unavailable when this binary has no GPU backend or the machine no CUDA
// device; the kernel's own errors (unsupported device or shape) pass through.
// On success *backend_name says which build ran.
absl::StatusOr<OpResults> RunOpGpu(const OpFiles& in, std::string* backend_name);

}  // namespace h3

#endif  // H3_HARNESS_OP_GPU_H_
