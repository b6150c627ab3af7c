#include "core/cuda_diagnosis.h"

#include "absl/strings/str_format.h"

namespace h3 {
namespace {

std::string CudaVersion(int v) { return absl::StrFormat("%d.%d", v / 1000, v % 1000 / 10); }

}  // namespace

std::string NoCudaDeviceReason(int cuda_error, absl::string_view error_name,
                               absl::string_view error_string, int driver_version,
                               int runtime_version) {
  const std::string call = absl::StrFormat("cudaGetDeviceCount: %s", error_name);
  const bool no_driver_or_device =
      cuda_error == kCudaErrorInsufficientDriver || cuda_error == kCudaErrorNoDevice;
  if (no_driver_or_device && driver_version <= 0) {
    return absl::StrFormat("no NVIDIA driver or GPU found (%s; no driver is installed)", call);
  }
  if (cuda_error == kCudaErrorInsufficientDriver && driver_version < runtime_version) {
    const std::string minimum =
        runtime_version / 1000 == 13
            ? absl::StrFormat("driver R%d or newer", kMinDriverBranchForCuda13)
            : absl::StrFormat("a driver for CUDA %s or newer", CudaVersion(runtime_version));
    return absl::StrFormat(
        "the NVIDIA driver supports CUDA %s, older than this build's CUDA %s runtime: install "
        "%s (%s)",
        CudaVersion(driver_version), CudaVersion(runtime_version), minimum, call);
  }
  if (cuda_error == kCudaErrorNoDevice) {
    return absl::StrFormat("no NVIDIA GPU found; the driver (CUDA %s) is installed (%s)",
                           CudaVersion(driver_version), call);
  }
  return absl::StrFormat("%s: %s", call, error_string);
}

}  // namespace h3
