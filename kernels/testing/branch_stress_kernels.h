#ifndef H3_KERNELS_TESTING_BRANCH_STRESS_KERNELS_H_
#define H3_KERNELS_TESTING_BRANCH_STRESS_KERNELS_H_

// Testonly: the product's low-rank branch instance (variant.cuh ProductBranch; default tile) under
// the stress test's timing (stress_variant.cuh), with pauses also before a unit's arrival at its
// group's counter and before the group's l is published (PauseSite::kBranchArrive). A library of
// its own: the branch instances spill on sm_120f, so it builds without that gate, like the
// product's (kernels/launch/BUILD out_proj_branch_kernel).

#include "kernels/device/kernel_set.h"
#include "kernels/testing/stress_test_kernels.h"

namespace h3::kernels {

const KernelSet& BranchStressKernels(StressMode mode);

}  // namespace h3::kernels

#endif  // H3_KERNELS_TESTING_BRANCH_STRESS_KERNELS_H_
