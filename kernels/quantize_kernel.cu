// The standalone quantizer: the same device functions as the fused kernel's quantizer warps
// (quantize.cuh), laid out for bandwidth. Two lanes share one 16-element block: lane 2i+h loads
// the block's half h (16 bytes), so a warp reads 512 contiguous bytes per load and writes 128
// contiguous code bytes per store; the block's amax is combined across the pair by one shuffle.

#include "kernels/quantize.cuh"
#include "kernels/quantize_kernel.h"

namespace h3::kernels {
namespace {

// Thread t: elements 8t .. 8t+7 of the flat [rows, cols] matrix (cols % 16 == 0), i.e. half
// t % 2 of block t / 2; codes bytes 4t .. 4t+3; the even lane writes scale byte t / 2.
__global__ void QuantizeNvfp4Kernel(const uint16_t* __restrict__ x, int64_t halves,
                                    const float* gs, uint8_t* __restrict__ codes,
                                    uint8_t* __restrict__ sf) {
  const int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const bool active = t < halves;  // halves is even: both lanes of a pair agree
  const QuantParams qp = MakeQuantParams(*gs);
  uint4 v = make_uint4(0, 0, 0, 0);
  if (active) v = __ldcs(reinterpret_cast<const uint4*>(x) + t);  // streamed: read once
  float e[8];
  Bf16x2ToF32(v.x, e[0], e[1]);
  Bf16x2ToF32(v.y, e[2], e[3]);
  Bf16x2ToF32(v.z, e[4], e[5]);
  Bf16x2ToF32(v.w, e[6], e[7]);
  // 1. amax, NaN-ignoring: fmaxf over the half, then over the pair (the same set of |x|).
  float amax = fabsf(e[0]);
#pragma unroll
  for (int i = 1; i < 8; ++i) amax = fmaxf(amax, fabsf(e[i]));
  amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, 1));
  float os;
  const uint32_t s = BlockScale(amax, qp, &os);
  const uint32_t word = EncodeE2m1x8(e, os);
  if (!active) return;
  reinterpret_cast<uint32_t*>(codes)[t] = word;
  if ((t & 1) == 0) sf[t >> 1] = static_cast<uint8_t>(s);
}

}  // namespace

cudaError_t LaunchQuantizeNvfp4(const uint16_t* x, int64_t rows, int64_t cols, const float* gs,
                                uint8_t* codes, uint8_t* sf, cudaStream_t stream) {
  const int64_t halves = 2 * rows * (cols / 16);
  if (halves == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  QuantizeNvfp4Kernel<<<static_cast<unsigned>((halves + kThreads - 1) / kThreads), kThreads, 0,
                        stream>>>(x, halves, gs, codes, sf);
  return cudaGetLastError();
}

}  // namespace h3::kernels
