#ifndef H3_KERNELS_STRESS_TEST_KERNELS_H_
#define H3_KERNELS_STRESS_TEST_KERNELS_H_

// Testonly: the product's kernel under stress (the cross-CTA protocol with unkind timing), and a
// kernel that occupies SMs from another stream. Every stress instance computes the product's
// bits; only its timing and its grid differ.

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/device/kernel_set.h"

namespace h3::kernels {

enum class StressMode {
  kGridOne,        // one CTA runs every tile, pauses everywhere (PauseSite)
  kOneQuantizer,   // the usual grid, only CTA 0's quantizer warps quantize, pauses everywhere
};

const KernelSet& StressKernels(StressMode mode);

// `ctas` CTAs of `smem_bytes` dynamic shared memory each (one per SM when large), each spinning
// for `ns` nanoseconds of %globaltimer, on `stream`; CTA i sets started[i] (host-mapped) to 1
// when it runs.
cudaError_t LaunchOccupier(int ctas, int smem_bytes, uint64_t ns, cudaStream_t stream,
                           volatile uint32_t* started);

}  // namespace h3::kernels

#endif  // H3_KERNELS_STRESS_TEST_KERNELS_H_
