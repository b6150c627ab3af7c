#ifndef H3_HARNESS_BENCH_BRANCH_TIMING_VARIANTS_H_
#define H3_HARNESS_BENCH_BRANCH_TIMING_VARIANTS_H_

// The branch's timing variants (timing_variants.h kBranchNoUp, kBranchNoDown, kBranchNeither): a
// library of their own, built without the sm_120f spill gate, as the product's branch instances
// are (kernels/launch/BUILD out_proj_branch_kernel).

#include "kernels/device/kernel_set.h"

namespace h3::bench {

// The product's branch instance (default config) with its down-projection (and the l gate) and
// its up-projection each kept or dropped; aborts when both are kept (that is the product).
const kernels::KernelSet& BranchHalvesKernels(bool down, bool up);

}  // namespace h3::bench

#endif  // H3_HARNESS_BENCH_BRANCH_TIMING_VARIANTS_H_
