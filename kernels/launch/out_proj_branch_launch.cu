// The product's kernel instances with the low-rank branch given (contract section 13; act_smooth
// optional): every registered tile config, as out_proj_launch.cu, with the branch's
// down-projection in the quantizers and its up-projection before the epilogue (lowrank.cuh).

#include "kernels/device/kernel_set.h"
#include "kernels/launch/launch.cuh"
#include "kernels/device/out_proj_kernel.cuh"

namespace h3::kernels {

const KernelSet& ProductBranchKernels() {
  static const KernelSet set = MakeKernelSet<ProductBranch>();
  return set;
}

}  // namespace h3::kernels
