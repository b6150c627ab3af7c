// The product's kernel instances with act_smooth given (contract section 12): every registered
// tile config, as out_proj_launch.cu, with the quantizers' smoothed input (variant.cuh). Its own
// translation unit: the two sets compile in parallel, and the plain set's code is unchanged.

#include "kernels/device/kernel_set.h"
#include "kernels/launch/launch.cuh"
#include "kernels/device/out_proj_kernel.cuh"

namespace h3::kernels {

const KernelSet& ProductSmoothedKernels() {
  static const KernelSet set = MakeKernelSet<ProductSmoothed>();
  return set;
}

}  // namespace h3::kernels
