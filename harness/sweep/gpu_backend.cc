#include "harness/sweep/gpu_backend.h"

#include <cuda_runtime.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "harness/testbed/cuda.h"
#include "harness/testbed/gpu_run.h"
#include "harness/testbed/problem.h"
#include "kernels/out_proj.h"

namespace h3::sweep {
namespace {

// The case table's small shapes are shapes the kernel tiles (the tile M is checked by
// harness/testbed/gpu_run.cc).
static_assert(kSmallShape.n % kOutProjNMultiple == 0 && kSmallShape.k % kOutProjKMultiple == 0 &&
                  kSmallShapeG3.n % kOutProjNMultiple == 0 &&
                  kSmallShapeG3.k % kOutProjKMultiple == 0,
              "the sweep's small shapes must be shapes the kernel tiles");

class GpuBackend : public DeviceBackend {
 public:
  GpuBackend(std::string description, Sm90Emulation sm90_emulation)
      : description_(std::move(description)), sm90_emulation_(sm90_emulation) {}
  std::string Description() const override { return description_; }

  absl::StatusOr<testbed::RunResult> Run(const testbed::Problem& p, bool out_is_residual,
                                         bool caller_workspace,
                                         absl::Span<const int64_t> rows) override {
    testbed::RunOptions options;
    options.out_is_residual = out_is_residual;
    options.caller_workspace = caller_workspace;
    options.sm90_emulation = sm90_emulation_;
    options.check = CheckMode::kChecked;
    return testbed::RunOnGpu(testbed::InputsOf(p), options, rows);
  }

 private:
  std::string description_;
  Sm90Emulation sm90_emulation_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceBackend>> MakeGpuBackend(Sm90Emulation sm90_emulation) {
  H3_RETURN_IF_ERROR(testbed::CheckCudaDevice());
  int dev = 0;
  H3_CUDA_RETURN_IF_ERROR(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  H3_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, dev));
  absl::StatusOr<std::string> build = OutProjBackendName(sm90_emulation);
  if (!build.ok()) {
    return absl::UnavailableError(
        absl::StrFormat("%s (sm_%d%d): the kernel has no build for it: %s", prop.name, prop.major,
                        prop.minor, build.status().message()));
  }
  std::string what = absl::StrFormat("GPU %s (sm_%d%d, %d SMs): kernel build \"%s\"", prop.name,
                                     prop.major, prop.minor, prop.multiProcessorCount, *build);
  if (prop.major == 9) {
    absl::StrAppend(&what,
                    "\n  NOTE: this is the sm_90a VALIDATION build. The SM120 block-scaled MMA is "
                    "replaced by an exact emulation; it checks the kernel's data movement, "
                    "quantizer and epilogue against the contract, not the SM120 instruction.");
    if (sm90_emulation == Sm90Emulation::kFast) {
      absl::StrAppend(&what,
                      "\n  NOTE: --sm90_emulation=fast: the consumer loop is the Hopper one "
                      "(dequantized tiles, wgmma), not the SM120 kernel's fragment path.");
    }
  }
  return std::unique_ptr<DeviceBackend>(new GpuBackend(std::move(what), sm90_emulation));
}

}  // namespace h3::sweep
