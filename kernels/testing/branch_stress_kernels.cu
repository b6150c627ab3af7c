#include "kernels/testing/branch_stress_kernels.h"

#include "kernels/device/variant.cuh"
#include "kernels/launch/launch.cuh"
#include "kernels/testing/stress_variant.cuh"

namespace h3::kernels {

const KernelSet& BranchStressKernels(StressMode mode) {
  using GridOne = Stress<ProductBranch, 1, false>;
  using OneQuantizer = Stress<ProductBranch, 0, true>;
  static const KernelSet grid_one = MakeKernelSet<GridOne, DefaultTileDispatch<GridOne>>();
  static const KernelSet one_quantizer =
      MakeKernelSet<OneQuantizer, DefaultTileDispatch<OneQuantizer>>();
  return mode == StressMode::kGridOne ? grid_one : one_quantizer;
}

}  // namespace h3::kernels
