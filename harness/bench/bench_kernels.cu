#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cfloat>

#include "harness/bench/bench_kernels.cuh"

namespace h3::bench {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ uint64_t Mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// f32 -> bf16 bits, nearest-even; any NaN -> 0x7FFF (contract notation bf16()).
__device__ __forceinline__ uint16_t ToBf16(float f) {
  if (isnan(f)) return 0x7FFF;
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}
__device__ __forceinline__ float FromBf16(uint16_t b) { return __uint_as_float(uint32_t{b} << 16); }

int Blocks(int64_t threads) {
  const int64_t b = (threads + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 * 16 ? (b > 0 ? b : 1) : 65535 * 16);
}

__global__ void FillUniformBf16Kernel(uint16_t* p, int64_t count, uint64_t seed, float scale) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const uint64_t h = Mix64(seed ^ Mix64(i));
    // 24 random bits -> [-1, 1), exact in f32; one rounding to bf16.
    const float u = static_cast<float>(static_cast<int32_t>(h >> 40) - (1 << 23)) * 0x1p-23f;
    p[i] = ToBf16(__fmul_rn(u, scale));
  }
}

__global__ void FillRandomBytesKernel(uint8_t* p, int64_t count, uint64_t seed, uint8_t mask,
                                      uint8_t base) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    p[i] = static_cast<uint8_t>((Mix64(seed ^ Mix64(i)) & mask) | base);
  }
}

__global__ void FillGateIndexKernel(int32_t* p, int64_t m, int64_t g, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < m;
       i += int64_t{gridDim.x} * blockDim.x) {
    const uint64_t h = Mix64(seed ^ Mix64(i));
    p[i] = (h >> 60) == 0 ? -1 : static_cast<int32_t>(h % static_cast<uint64_t>(g));
  }
}

__device__ __forceinline__ float LoadO(const float* o, int64_t i) { return o[i]; }
__device__ __forceinline__ float LoadO(const uint16_t* o, int64_t i) { return FromBf16(o[i]); }

// One thread per 8 consecutive outputs of a row (one 16-byte residual/out vector).
template <typename T>
__global__ void EpilogueKernel(const T* o, const uint16_t* gate, const int32_t* gate_index,
                               const uint16_t* residual, uint16_t* out, int64_t m, int64_t n,
                               int64_t g) {
  const int64_t vecs = m * (n / 8);
  for (int64_t v = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; v < vecs;
       v += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = v / (n / 8);
    const int64_t col = (v % (n / 8)) * 8;
    const int64_t base = row * n + col;
    const int32_t gi = gate_index[row];
    uint4 res = *reinterpret_cast<const uint4*>(residual + base);
    if (gi < 0 || gi >= g) {
      *reinterpret_cast<uint4*>(out + base) = res;  // bit for bit, -0 and NaN included
      continue;
    }
    const uint4 gv = *reinterpret_cast<const uint4*>(gate + gi * n + col);
    const uint16_t* r16 = reinterpret_cast<const uint16_t*>(&res);
    const uint16_t* g16 = reinterpret_cast<const uint16_t*>(&gv);
    uint4 result;
    uint16_t* o16 = reinterpret_cast<uint16_t*>(&result);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const uint16_t t = ToBf16(__fmul_rn(FromBf16(g16[j]), LoadO(o, base + j)));  // t rounded
      o16[j] = ToBf16(__fadd_rn(FromBf16(r16[j]), FromBf16(t)));                   // out rounded
    }
    *reinterpret_cast<uint4*>(out + base) = result;
  }
}

// e2m1(v) of contract section 2: nearest-even on {0, .5, 1, 1.5, 2, 3, 4, 6}, saturating, the
// sign of a zero result kept, NaN -> 0x7. Written out (sm_90 has no e2m1 cvt).
__device__ __forceinline__ uint32_t E2M1(float v) {
  if (isnan(v)) return 0x7;
  const float a = fabsf(v);
  // Ties go to the even code: 0.25->0, 0.75->1, 1.25->1, 1.75->2, 2.5->2, 3.5->4, 5->4.
  const uint32_t mag = a <= 0.25f   ? 0
                       : a < 0.75f  ? 1
                       : a <= 1.25f ? 2
                       : a < 1.75f  ? 3
                       : a <= 2.5f  ? 4
                       : a < 3.5f   ? 5
                       : a <= 5.f   ? 6
                                    : 7;
  return (signbit(v) ? 0x8u : 0u) | mag;
}

__device__ __forceinline__ int64_t SwizzledOffset(int64_t row, int64_t col, int64_t cols) {
  const int64_t cols4 = (cols + 3) / 4 * 4;
  return (row / 128) * (cols4 / 4) * 512 + (col / 4) * 512 + (row % 32) * 16 +
         ((row % 128) / 32) * 4 + (col % 4);
}

// One thread per block of 16 elements (contract section 3, steps 1-6, each rounding explicit).
__global__ void QuantizeKernel(const uint16_t* x, int64_t m, int64_t k, const float* gs_ptr,
                               uint8_t* codes, uint8_t* scales, bool swizzled) {
  const int64_t cols = k / 16;
  const int64_t blocks = m * cols;
  const float gs = *gs_ptr;
  const float rcp6 = __uint_as_float(0x3E2AAAABu);  // RN(1/6)
  for (int64_t b = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; b < blocks;
       b += int64_t{gridDim.x} * blockDim.x) {
    const uint4* src = reinterpret_cast<const uint4*>(x + b * 16);
    uint4 raw[2] = {src[0], src[1]};
    const uint16_t* h = reinterpret_cast<const uint16_t*>(raw);
    float v[16];
    // 1. amax, NaN-ignoring (fmaxf returns the non-NaN operand): NaN only if all are NaN.
    float amax = fabsf(FromBf16(h[0]));
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      v[i] = FromBf16(h[i]);
      amax = fmaxf(amax, fabsf(v[i]));
    }
    // 2.-3. sfv = amax * (gs * RN(1/6)); sf = e4m3 satfinite (cvt.rn.satfinite on sm_89+).
    const float sfv = __fmul_rn(amax, __fmul_rn(gs, rcp6));
    const uint8_t sf = __nv_cvt_float_to_fp8(sfv, __NV_SATFINITE, __NV_E4M3);
    const float sfd = __half2float(__half(__nv_cvt_fp8_to_halfraw(sf, __NV_E4M3)));
    // 4. os = 0 when amax == 0, else fminf(1 / (sfd * (1 / gs)), FLT_MAX), all correctly rounded.
    const float os =
        amax == 0.f ? 0.f : fminf(__fdiv_rn(1.f, __fmul_rn(sfd, __fdiv_rn(1.f, gs))), FLT_MAX);
    // 5.-6. codes, low nibble = even index.
    uint32_t packed[2] = {0, 0};
#pragma unroll
    for (int i = 0; i < 16; ++i) packed[i / 8] |= E2M1(__fmul_rn(v[i], os)) << (4 * (i % 8));
    *reinterpret_cast<uint2*>(codes + b * 8) = make_uint2(packed[0], packed[1]);
    const int64_t row = b / cols, col = b % cols;
    scales[swizzled ? SwizzledOffset(row, col, cols) : b] = sf;
  }
}

}  // namespace

cudaError_t FillUniformBf16(uint16_t* p, int64_t count, uint64_t seed, float scale,
                            cudaStream_t stream) {
  FillUniformBf16Kernel<<<Blocks(count), kThreads, 0, stream>>>(p, count, seed, scale);
  return cudaGetLastError();
}

cudaError_t FillRandomBytes(uint8_t* p, int64_t count, uint64_t seed, uint8_t mask, uint8_t base,
                            cudaStream_t stream) {
  FillRandomBytesKernel<<<Blocks(count), kThreads, 0, stream>>>(p, count, seed, mask, base);
  return cudaGetLastError();
}

cudaError_t FillGateIndex(int32_t* p, int64_t m, int64_t g, uint64_t seed, cudaStream_t stream) {
  FillGateIndexKernel<<<Blocks(m), kThreads, 0, stream>>>(p, m, g, seed);
  return cudaGetLastError();
}

cudaError_t LaunchEpilogueF32(const float* o, const uint16_t* gate, const int32_t* gate_index,
                              const uint16_t* residual, uint16_t* out, int64_t m, int64_t n,
                              int64_t g, cudaStream_t stream) {
  if (m == 0) return cudaSuccess;
  EpilogueKernel<float>
      <<<Blocks(m * n / 8), kThreads, 0, stream>>>(o, gate, gate_index, residual, out, m, n, g);
  return cudaGetLastError();
}

cudaError_t LaunchEpilogueBf16(const uint16_t* o, const uint16_t* gate, const int32_t* gate_index,
                               const uint16_t* residual, uint16_t* out, int64_t m, int64_t n,
                               int64_t g, cudaStream_t stream) {
  if (m == 0) return cudaSuccess;
  EpilogueKernel<uint16_t>
      <<<Blocks(m * n / 8), kThreads, 0, stream>>>(o, gate, gate_index, residual, out, m, n, g);
  return cudaGetLastError();
}

cudaError_t LaunchQuantize(const uint16_t* x, int64_t m, int64_t k, const float* gs, uint8_t* codes,
                           uint8_t* scales, bool swizzled, cudaStream_t stream) {
  if (m == 0) return cudaSuccess;
  QuantizeKernel<<<Blocks(m * k / 16), kThreads, 0, stream>>>(x, m, k, gs, codes, scales, swizzled);
  return cudaGetLastError();
}

}  // namespace h3::bench
