#ifndef H3_TOOLS_CUDA_SMOKE_KERNEL_H_
#define H3_TOOLS_CUDA_SMOKE_KERNEL_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace h3::smoke {

// out[i] = bf16(float(x[i]) * 2 + 1) for i < n, computed on the device; returns the launch error.
// Also reports the SASS architecture the kernel was compiled for (e.g. 900) in *arch.
cudaError_t LaunchAxpb(const uint16_t* x, uint16_t* out, int64_t n, int* arch, cudaStream_t stream);

}  // namespace h3::smoke

#endif  // H3_TOOLS_CUDA_SMOKE_KERNEL_H_
