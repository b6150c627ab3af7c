#include "kernels/testing/stress_test_kernels.h"

#include <cstdint>

#include "kernels/launch/launch.cuh"
#include "kernels/device/ptx.cuh"
#include "kernels/device/variant.cuh"
#include "kernels/testing/stress_variant.cuh"

namespace h3::kernels {
namespace {

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
  static const KernelSet grid_one = MakeKernelSet<Stress<Product, 1, false>>();
  static const KernelSet one_quantizer = MakeKernelSet<Stress<Product, 0, true>>();
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
