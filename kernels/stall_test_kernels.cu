#include "kernels/stall_test_kernels.h"

#include "kernels/launch.cuh"
#include "kernels/variant.cuh"

namespace h3::kernels {
namespace {

struct NeverPublish : Product {
  static constexpr bool kPublish = false;
};

}  // namespace

const KernelSet& NeverPublishKernels() {
  static const KernelSet set = MakeKernelSet<NeverPublish>();
  return set;
}

}  // namespace h3::kernels
