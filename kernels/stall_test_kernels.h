#ifndef H3_KERNELS_STALL_TEST_KERNELS_H_
#define H3_KERNELS_STALL_TEST_KERNELS_H_

// Testonly: the product's kernel with quantizer warps that never publish a ready flag, so every
// load warp waits on a flag nobody sets and must give up (kernels/stall.h).

#include "kernels/kernel_set.h"

namespace h3::kernels {

const KernelSet& NeverPublishKernels();

}  // namespace h3::kernels

#endif  // H3_KERNELS_STALL_TEST_KERNELS_H_
