#include <atomic>

#include "kernels/launch/targets.cuh"
#include "kernels/device/quantize.cuh"
#include "kernels/launch/quantize_kernel.h"

namespace h3::kernels {
namespace {

constexpr int kThreads = 256;  // = the os table's 256 entries: one each to fill

// Persistent: each CTA tabulates os for the 256 scale bytes once (quantize.cuh OsTable), then
// walks its blocks grid-stride. Row-major [rows, cols] with cols % 16 == 0: block b is elements
// 16b..16b+15 of the flat matrix, its codes bytes 8b..8b+7 and its scale byte b (linear layout).
__global__ void __launch_bounds__(kThreads)
    QuantizeNvfp4Kernel(const uint16_t* __restrict__ x, int64_t blocks, const float* gs,
                        uint8_t* codes, uint8_t* sf) {
  __shared__ float os_by_sf[256];  // [scale byte]
  const QuantParams qp = MakeQuantParams(*gs);
  os_by_sf[threadIdx.x] = OsOfScale(threadIdx.x, qp);
  __syncthreads();
  const OsTable os_src{qp, os_by_sf};
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t b = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; b < blocks;
       b += stride) {
    QuantizeBlockFromGlobal<TargetArch>(x + 16 * b, os_src, codes + 8 * b, sf + b);
  }
}

}  // namespace

cudaError_t LaunchQuantizeNvfp4(const uint16_t* x, int64_t rows, int64_t cols, const float* gs,
                                uint8_t* codes, uint8_t* sf, cudaStream_t stream) {
  const int64_t blocks = rows * (cols / 16);
  if (blocks == 0) return cudaSuccess;
  // One wave of resident CTAs (fewer when there is less work): the table is filled once per CTA.
  // The count depends on the device only: queried once per device, not on every launch.
  constexpr int kMaxDevices = 64;
  static std::atomic<int64_t> resident_by_device[kMaxDevices];
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return e;
  int64_t resident = device < kMaxDevices ? resident_by_device[device].load() : 0;
  if (resident == 0) {
    int sms = 0, per_sm = 0;
    e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (e == cudaSuccess) {
      e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, QuantizeNvfp4Kernel, kThreads, 0);
    }
    if (e != cudaSuccess) return e;
    resident = static_cast<int64_t>(sms) * (per_sm > 0 ? per_sm : 1);
    if (device < kMaxDevices) resident_by_device[device].store(resident);
  }
  const int64_t needed = (blocks + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(needed < resident ? needed : resident);
  QuantizeNvfp4Kernel<<<grid, kThreads, 0, stream>>>(x, blocks, gs, codes, sf);
  return cudaGetLastError();
}

}  // namespace h3::kernels
