#ifndef H3_KERNELS_TESTING_STRESS_VARIANT_CUH_
#define H3_KERNELS_TESTING_STRESS_VARIANT_CUH_

// Testonly: the stress test's Variant (stress_test_kernels.cu, branch_stress_kernels.cu).

#include <cstdint>

#include "kernels/device/variant.cuh"

namespace h3::kernels {

__device__ __forceinline__ uint32_t StressHash(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  return x ^ (x >> 16);
}

// Base (variant.cuh: Product, ProductBranch) with pauses of 0-50 us at about one site visit in 8
// (one quantized block in 64), chosen by a hash of (CTA, thread, site, index): the quantizers
// publish late and out of order, the load warp and the trailing group fall behind at random; and
// a grid cap or a single quantizing CTA.
template <class Base, int kGridCap_, bool kOneQuantizingCta>
struct Stress : Base {
  static constexpr int kGridCap = kGridCap_;
  __device__ __forceinline__ static bool Quantizes() {
    return !kOneQuantizingCta || blockIdx.x == 0;
  }
  __device__ __forceinline__ static void Pause(PauseSite site, uint32_t i) {
    const uint32_t h = StressHash(blockIdx.x * 0x9E3779B9u ^ threadIdx.x * 0x85EBCA6Bu ^
                           (static_cast<uint32_t>(site) << 28) ^ StressHash(i));
    const uint32_t rate_mask = site == PauseSite::kQuantizerBlock ? 63u : 7u;
    if ((h & rate_mask) != 0) return;
    __nanosleep((h >> 8) % 50000u);
  }
};

}  // namespace h3::kernels

#endif  // H3_KERNELS_TESTING_STRESS_VARIANT_CUH_
