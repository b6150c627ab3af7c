#include "core/scale_layout.h"
#include "kernels/launch/targets.cuh"
#include "kernels/device/quantize.cuh"
#include "kernels/weight_quant/weight_quant_kernel.h"

namespace h3::kernels {
namespace {

constexpr int kThreads = 256;  // = the os table's 256 entries: one each to fill
constexpr int kCtasPerSm = 4;  // 1024 threads per SM in flight: enough loads to cover latency

// amax and the first non-finite element, grid-stride over 16-byte vectors. Magnitudes compare as
// integers (f32 bits, bf16 widened exactly by << 16); the first bad index wins as the largest
// ~index, so neither reduction depends on the order threads run in.
template <bool kF32>
__global__ void __launch_bounds__(kThreads)
    WeightAmaxKernel(const uint4* __restrict__ w, int64_t vecs, WeightAmaxScratch* scratch) {
  constexpr int kPerVec = kF32 ? 4 : 8;
  uint32_t amax = 0;
  unsigned long long not_bad = 0;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t v = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; v < vecs;
       v += stride) {
    const uint4 u = w[v];
    const uint32_t words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int e = 0; e < kPerVec; ++e) {
      const uint32_t mag = kF32 ? (words[e] & 0x7FFFFFFFu)
                                : (((words[e / 2] >> (16 * (e % 2))) & 0x7FFFu) << 16);
      if (mag >= 0x7F800000u) {  // Inf or NaN
        const unsigned long long idx = static_cast<unsigned long long>(v * kPerVec + e);
        not_bad = max(not_bad, ~idx);
      } else {
        amax = max(amax, mag);
      }
    }
  }
  amax = __reduce_max_sync(0xFFFFFFFFu, amax);
#pragma unroll
  for (int off = 16; off > 0; off /= 2) {
    not_bad = max(not_bad, __shfl_xor_sync(0xFFFFFFFFu, not_bad, off));
  }
  __shared__ uint32_t warp_amax[kThreads / 32];
  __shared__ unsigned long long warp_bad[kThreads / 32];
  const int warp = threadIdx.x / 32;
  if (threadIdx.x % 32 == 0) {
    warp_amax[warp] = amax;
    warp_bad[warp] = not_bad;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int i = 1; i < kThreads / 32; ++i) {
      amax = max(amax, warp_amax[i]);
      not_bad = max(not_bad, warp_bad[i]);
    }
    atomicMax(&scratch->amax_bits, amax);
    if (not_bad != 0) atomicMax(&scratch->not_first_bad, not_bad);
  }
}

// One thread per (row r, 4-block column group g) of the padded scale matrix: its 4 blocks of
// row r (the 64 elements k = 64g .. 64g+63) quantized by contract section 3 with the same device
// functions as the activations (quantize.cuh, the Arch policy), their 4 scale bytes one aligned
// word of the 128x4 layout (section 4). Rows >= n and blocks >= k/16 are padding: scale 0x00,
// no codes. Each CTA tabulates os for the 256 scale bytes once (OsTable).
template <bool kF32>
__global__ void __launch_bounds__(kThreads)
    WeightQuantizeKernel(const void* __restrict__ w, int64_t n, int64_t k, float gs,
                         uint8_t* __restrict__ q, uint8_t* __restrict__ sf) {
  __shared__ float os_by_sf[256];  // [scale byte]
  const QuantParams qp = MakeQuantParams(gs);
  os_by_sf[threadIdx.x] = OsOfScale(threadIdx.x, qp);
  __syncthreads();
  const OsTable os_src{qp, os_by_sf};
  const int64_t cols = k / 16;
  const int64_t groups = RoundUpTo(cols, 4) / 4;
  const int64_t total = RoundUpTo(n, 128) * groups;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t t = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; t < total;
       t += stride) {
    const int64_t r = t / groups;
    const int64_t g = t - r * groups;
    uint32_t scale_word = 0;
    if (r < n) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int64_t b = 4 * g + j;
        if (b >= cols) break;
        const int64_t first = r * k + 16 * b;  // the block's first element
        uint32_t packed[2];
        uint32_t s;
        if constexpr (kF32) {
          const uint4* src = static_cast<const uint4*>(w) + first / 4;
          float x[16];
#pragma unroll
          for (int v = 0; v < 4; ++v) {
            const uint4 u = src[v];
            x[4 * v] = __uint_as_float(u.x);
            x[4 * v + 1] = __uint_as_float(u.y);
            x[4 * v + 2] = __uint_as_float(u.z);
            x[4 * v + 3] = __uint_as_float(u.w);
          }
          s = QuantizeBlock16<TargetArch>(x, os_src, packed);
        } else {
          const uint4* src = static_cast<const uint4*>(w) + first / 8;
          const uint4 v0 = src[0];
          const uint4 v1 = src[1];
          const uint32_t words[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
          s = TargetArch::QuantizeBlock(words, os_src, packed);
        }
        *reinterpret_cast<uint2*>(q + first / 2) = make_uint2(packed[0], packed[1]);
        scale_word |= s << (8 * j);
      }
    }
    *reinterpret_cast<uint32_t*>(sf + SwizzledScaleOffset(r, 4 * g, cols)) = scale_word;
  }
}

// CTAs for `threads` threads of work: at most kCtasPerSm per SM (grid-stride beyond that).
cudaError_t GridFor(int64_t threads, unsigned* grid) {
  int device = 0, sms = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e != cudaSuccess) return e;
  const int64_t needed = (threads + kThreads - 1) / kThreads;
  const int64_t cap = static_cast<int64_t>(sms > 0 ? sms : 1) * kCtasPerSm;
  *grid = static_cast<unsigned>(needed < cap ? needed : cap);
  return cudaSuccess;
}

}  // namespace

cudaError_t LaunchWeightAmax(const void* w, bool is_f32, int64_t count,
                             WeightAmaxScratch* scratch, cudaStream_t stream) {
  const int64_t vecs = count / (is_f32 ? 4 : 8);
  if (vecs == 0) return cudaSuccess;
  unsigned grid = 0;
  if (cudaError_t e = GridFor(vecs, &grid); e != cudaSuccess) return e;
  const uint4* v = static_cast<const uint4*>(w);
  if (is_f32) {
    WeightAmaxKernel<true><<<grid, kThreads, 0, stream>>>(v, vecs, scratch);
  } else {
    WeightAmaxKernel<false><<<grid, kThreads, 0, stream>>>(v, vecs, scratch);
  }
  return cudaGetLastError();
}

cudaError_t LaunchWeightQuantize(const void* w, bool is_f32, int64_t n, int64_t k, float gs,
                                 uint8_t* q, uint8_t* sf, cudaStream_t stream) {
  const int64_t threads = RoundUpTo(n, 128) * (RoundUpTo(k / 16, 4) / 4);
  if (threads == 0) return cudaSuccess;
  unsigned grid = 0;
  if (cudaError_t e = GridFor(threads, &grid); e != cudaSuccess) return e;
  if (is_f32) {
    WeightQuantizeKernel<true><<<grid, kThreads, 0, stream>>>(w, n, k, gs, q, sf);
  } else {
    WeightQuantizeKernel<false><<<grid, kThreads, 0, stream>>>(w, n, k, gs, q, sf);
  }
  return cudaGetLastError();
}

}  // namespace h3::kernels
