// The product's kernel instances: every registered tile config (tiles.h) for sm_120f and, with the
// same source, the sm_90a validation builds (launch.cuh).

#include "kernels/device/kernel_set.h"
#include "kernels/launch/launch.cuh"
#include "kernels/device/out_proj_kernel.cuh"

namespace h3::kernels {

const KernelSet& ProductKernels() {
  static const KernelSet set = MakeKernelSet<Product>();
  return set;
}

}  // namespace h3::kernels
