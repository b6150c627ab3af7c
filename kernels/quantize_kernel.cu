#include "kernels/quantize.cuh"
#include "kernels/quantize_kernel.h"

namespace h3::kernels {
namespace {

__global__ void QuantizeNvfp4Kernel(const uint16_t* __restrict__ x, int64_t blocks, const float* gs,
                                    uint8_t* codes, uint8_t* sf) {
  const int64_t b = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (b >= blocks) return;
  const QuantParams qp = MakeQuantParams(*gs);
  // Row-major [rows, cols] with cols % 16 == 0: block b is elements 16b..16b+15 of the flat
  // matrix, its codes bytes 8b..8b+7 and its scale byte b of the linear layout.
  QuantizeBlockFromGlobal(x + 16 * b, qp, codes + 8 * b, sf + b);
}

}  // namespace

cudaError_t LaunchQuantizeNvfp4(const uint16_t* x, int64_t rows, int64_t cols, const float* gs,
                                uint8_t* codes, uint8_t* sf, cudaStream_t stream) {
  const int64_t blocks = rows * (cols / 16);
  if (blocks == 0) return cudaSuccess;
  QuantizeNvfp4Kernel<<<static_cast<unsigned>((blocks + 255) / 256), 256, 0, stream>>>(
      x, blocks, gs, codes, sf);
  return cudaGetLastError();
}

}  // namespace h3::kernels
