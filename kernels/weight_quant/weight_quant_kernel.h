#ifndef H3_KERNELS_WEIGHT_QUANT_KERNEL_H_
#define H3_KERNELS_WEIGHT_QUANT_KERNEL_H_

// The two kernels of the weight quantizer on the GPU (docs/contract.md section 5; host API:
// kernels/weight_quant/weight_quant.h). No validation here: the host API's job.

#include <cuda_runtime.h>

#include <cstdint>

namespace h3::kernels {

// What the amax pass leaves in device memory; zero it (cudaMemsetAsync) before the pass.
struct WeightAmaxScratch {
  uint32_t amax_bits;      // f32 bits of max |W| over the finite elements (a non-negative f32
                           // orders as its bits, so atomicMax on them is the f32 maximum)
  uint32_t unused;
  unsigned long long not_first_bad;  // ~(flat index of the first non-finite element), 0: none
};

// w: device [count] bf16 bit patterns (uint16) or f32, 16-byte aligned, count % 16 == 0.
cudaError_t LaunchWeightAmax(const void* w, bool is_f32, int64_t count,
                             WeightAmaxScratch* scratch, cudaStream_t stream);

// Quantizes w [n, k] (k % 16 == 0, 16-byte aligned, every value finite) with global scale gs
// (finite, > 0): codes q [n, k/2] (8-byte aligned), scales sf in the 128x4 layout,
// SwizzledScaleBytes(n, k/16) bytes (4-byte aligned), padding written as 0x00.
cudaError_t LaunchWeightQuantize(const void* w, bool is_f32, int64_t n, int64_t k, float gs,
                                 uint8_t* q, uint8_t* sf, cudaStream_t stream);

}  // namespace h3::kernels

#endif  // H3_KERNELS_WEIGHT_QUANT_KERNEL_H_
