#ifndef H3_KERNELS_REGISTER_SPLIT_KERNELS_H_
#define H3_KERNELS_REGISTER_SPLIT_KERNELS_H_

// Testonly: the product's 128 x 256 lockstep kernel with a setmaxnreg split that needs more
// registers than its launch gets (128 x 48 + 256 x 232 = 65536 > 384 x 168): launched, its
// consumers' setmaxnreg.inc would wait forever; the host must refuse it (register_split.h).

#include "kernels/device/kernel_set.h"

namespace h3::kernels {

const KernelSet& OverSplitKernels();

}  // namespace h3::kernels

#endif  // H3_KERNELS_REGISTER_SPLIT_KERNELS_H_
