#include "harness/probe/probe_kernels.cuh"
#include "kernels/arch.cuh"
#include "kernels/quantize.cuh"

namespace h3::probe {
namespace {

// Block i = case i, one warp: the lanes load their own registers and issue one MMA.
__global__ void MmaBatchKernel(const uint32_t* __restrict__ a, const uint32_t* __restrict__ b,
                               const float* __restrict__ c, const uint32_t* __restrict__ sfa,
                               const uint32_t* __restrict__ sfb, float* __restrict__ d) {
  const int64_t i = blockIdx.x;
  const int l = threadIdx.x;
  const uint32_t* ai = a + (i * 32 + l) * 4;
  const uint32_t* bi = b + (i * 32 + l) * 2;
  const float* ci = c + (i * 32 + l) * 4;
  const uint32_t ar[4] = {ai[0], ai[1], ai[2], ai[3]};
  const uint32_t br[2] = {bi[0], bi[1]};
  float acc[4] = {ci[0], ci[1], ci[2], ci[3]};
  h3::kernels::TargetArch::Mma(acc, ar, br, sfa[i * 32 + l], sfb[i * 32 + l]);
  float* di = d + (i * 32 + l) * 4;
  for (int r = 0; r < 4; ++r) di[r] = acc[r];
}

__global__ void E2m1BatchKernel(const float* __restrict__ even, const float* __restrict__ odd,
                                int64_t count, uint8_t* __restrict__ bytes,
                                uint8_t* __restrict__ raw) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  bytes[i] = static_cast<uint8_t>(h3::kernels::TargetArch::E2m1Byte(even[i], odd[i]));
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1200
  // The bare instruction, without F32x2ToE2m1ByteNative's NaN / zero-sign fix-ups: a -> high
  // nibble.
  uint16_t r;
  asm("{\n .reg .b8 t;\n cvt.rn.satfinite.e2m1x2.f32 t, %1, %2;\n cvt.u16.u8 %0, t;\n}"
      : "=h"(r)
      : "f"(odd[i]), "f"(even[i]));
  raw[i] = static_cast<uint8_t>(r & 0xFFu);
#else
  raw[i] = 0xFF;
#endif
}

__global__ void BuildInfoKernel(int* info) {
#if defined(__CUDA_ARCH__)
  info[0] = __CUDA_ARCH__;
#if __CUDA_ARCH__ >= 1200
  info[2] = 1;
#else
  info[2] = 0;
#endif
#endif
  info[1] = h3::kernels::TargetArch::kNativeMma ? 1 : 0;
}

}  // namespace

cudaError_t LaunchMmaBatch(const uint32_t* a, const uint32_t* b, const float* c,
                           const uint32_t* sfa, const uint32_t* sfb, int64_t cases, float* d) {
  if (cases <= 0) return cudaSuccess;
  if (cases > 0x7FFFFFFF) return cudaErrorInvalidValue;
  MmaBatchKernel<<<static_cast<unsigned>(cases), 32>>>(a, b, c, sfa, sfb, d);
  return cudaGetLastError();
}

cudaError_t LaunchE2m1Batch(const float* even, const float* odd, int64_t count, uint8_t* bytes,
                            uint8_t* raw) {
  if (count <= 0) return cudaSuccess;
  E2m1BatchKernel<<<static_cast<unsigned>((count + 255) / 256), 256>>>(even, odd, count, bytes,
                                                                       raw);
  return cudaGetLastError();
}

cudaError_t LaunchBuildInfo(int* info) {
  BuildInfoKernel<<<1, 1>>>(info);
  return cudaGetLastError();
}

}  // namespace h3::probe
