#ifndef H3_CORE_CUDA_DIAGNOSIS_H_
#define H3_CORE_CUDA_DIAGNOSIS_H_

// Why the CUDA runtime found no usable device, worded for the user who has to act on it. The
// runtime says "CUDA driver version is insufficient for CUDA runtime version" both when no
// driver is installed at all and when an old one is: these are told apart by the driver version
// (0 when there is no driver). Plain integers, no CUDA headers: every layer can use it, and it is
// tested on machines without CUDA.

#include <string>

#include "absl/strings/string_view.h"

namespace h3 {

// cudaError_t values this depends on (static_assert'ed against cuda_runtime.h where it is used).
inline constexpr int kCudaErrorInsufficientDriver = 35;
inline constexpr int kCudaErrorNoDevice = 100;

// The driver the CUDA 13.0 runtime needs (NVIDIA's CUDA 13.0 release notes: R580 or newer).
inline constexpr int kMinDriverBranchForCuda13 = 580;

// `cuda_error`, `error_name`, `error_string`: what cudaGetDeviceCount returned;
// `driver_version`: cudaDriverGetVersion's (1000 * major + 10 * minor; 0 = no driver installed);
// `runtime_version`: the runtime linked into the binary (CUDART_VERSION). Examples:
//   "no NVIDIA driver or GPU found (cudaGetDeviceCount: cudaErrorInsufficientDriver; no driver
//    is installed)"
//   "the NVIDIA driver supports CUDA 12.8, older than this build's CUDA 13.0 runtime: install
//    driver R580 or newer (cudaGetDeviceCount: cudaErrorInsufficientDriver)"
std::string NoCudaDeviceReason(int cuda_error, absl::string_view error_name,
                               absl::string_view error_string, int driver_version,
                               int runtime_version);

}  // namespace h3

#endif  // H3_CORE_CUDA_DIAGNOSIS_H_
