#ifndef H3_KERNELS_QUANTIZE_KERNEL_H_
#define H3_KERNELS_QUANTIZE_KERNEL_H_

// Standalone block-16 NVFP4 quantization (contract section 3) of a bf16 [rows, cols] matrix:
// the unfused baseline of the fused kernel's producer warps (same device functions).

#include <cuda_runtime.h>

#include <cstdint>

namespace h3::kernels {

// x: bf16 [rows, cols], 16-byte aligned, cols % 16 == 0; gs: device [1]; codes: [rows, cols/2];
// sf: [rows, cols/16] linear. One thread per 16-element block, one wave of persistent CTAs; no
// validation (caller's job).
cudaError_t LaunchQuantizeNvfp4(const uint16_t* x, int64_t rows, int64_t cols, const float* gs,
                                uint8_t* codes, uint8_t* sf, cudaStream_t stream);

}  // namespace h3::kernels

#endif  // H3_KERNELS_QUANTIZE_KERNEL_H_
