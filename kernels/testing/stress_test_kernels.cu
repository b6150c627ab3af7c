#include "kernels/testing/stress_test_kernels.h"

#include <cstdint>

#include "kernels/launch/launch.cuh"
#include "kernels/device/ptx.cuh"
#include "kernels/device/variant.cuh"

namespace h3::kernels {
namespace {

__device__ __forceinline__ uint32_t Mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  return x ^ (x >> 16);
}

// Pauses of 0-50 us at about one site visit in 8 (one quantized block in 64), chosen by a hash of
// (CTA, thread, site, index): the quantizers publish late and out of order, the load warp and
// the trailing group fall behind at random.
template <int kGridCap_, bool kOneQuantizingCta>
struct Stress : Product {
  static constexpr int kGridCap = kGridCap_;
  __device__ __forceinline__ static bool Quantizes() {
    return !kOneQuantizingCta || blockIdx.x == 0;
  }
  __device__ __forceinline__ static void Pause(PauseSite site, uint32_t i) {
    const uint32_t h = Mix(blockIdx.x * 0x9E3779B9u ^ threadIdx.x * 0x85EBCA6Bu ^
                           (static_cast<uint32_t>(site) << 28) ^ Mix(i));
    const uint32_t rate_mask = site == PauseSite::kQuantizerBlock ? 63u : 7u;
    if ((h & rate_mask) != 0) return;
    __nanosleep((h >> 8) % 50000u);
  }
};

__global__ void OccupierKernel(uint64_t ns, volatile uint32_t* started) {
  extern __shared__ uint8_t smem[];
  if (threadIdx.x == 0) {
    started[blockIdx.x] = 1u;  // host-mapped: the host launches the fused kernel after all are up
    __threadfence_system();
  }
  const uint64_t t0 = ptx::GlobalTimerNs();
  while (ptx::GlobalTimerNs() - t0 < ns) {
    if (threadIdx.x == 0) smem[0] = 1;  // the shared memory is the point: keep it allocated
  }
}

}  // namespace

const KernelSet& StressKernels(StressMode mode) {
  static const KernelSet grid_one = MakeKernelSet<Stress<1, false>>();
  static const KernelSet one_quantizer = MakeKernelSet<Stress<0, true>>();
  return mode == StressMode::kGridOne ? grid_one : one_quantizer;
}

cudaError_t LaunchOccupier(int ctas, int smem_bytes, uint64_t ns, cudaStream_t stream,
                           volatile uint32_t* started) {
  cudaError_t e = cudaFuncSetAttribute(OccupierKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       smem_bytes);
  if (e != cudaSuccess) return e;
  OccupierKernel<<<ctas, 32, smem_bytes, stream>>>(ns, started);
  return cudaGetLastError();
}

}  // namespace h3::kernels
