#include "harness/probe/probe_kernels.cuh"
#include "kernels/launch/targets.cuh"
#include "kernels/device/ptx.cuh"
#include "kernels/device/quantize.cuh"

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

// ---- The proxy-fence litmus (ready_flags.h's hand-off, in isolation). CTA 2i writes a 1 KiB
// buffer with generic stores and releases a flag; CTA 2i+1 acquires it, then reads the buffer
// with cp.async.bulk (the async proxy, as the load warp's TMA does) and counts words that are
// not this round's. Variant bit 0: the writer's fence.proxy.async.global before its release;
// bit 1: the reader's after its acquire (the product has both). The flags count rounds with
// red.release.gpu.add and are read with ld.acquire.gpu, as ready_flags.h does. Spins are
// bounded (1 s): a flag timeout is counted (the run is void), a copy that never lands traps.
constexpr int kLitmusWords = 256;

__device__ __forceinline__ uint32_t LitmusWord(uint32_t pair, uint32_t round, uint32_t w) {
  uint32_t x = pair * 0x9E3779B9u ^ round * 0x85EBCA6Bu ^ w * 0xC2B2AE35u;
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  return x ^ (x >> 12);
}

// Thread 0: until *flag >= want, or 1 s; false on the timeout.
__device__ __forceinline__ bool AwaitFlag(const uint32_t* flag, uint32_t want) {
  namespace ptx = h3::kernels::ptx;
  const uint64_t t0 = ptx::GlobalTimerNs();
  while (ptx::LdAcquireGpu(flag) < want) {
    if (ptx::GlobalTimerNs() - t0 > 1000000000ull) return false;
  }
  return true;
}

__global__ void __launch_bounds__(128) ProxyLitmusKernel(uint32_t* buf, uint32_t* flags,
                                                         int rounds, int variant,
                                                         unsigned long long* mismatches,
                                                         unsigned long long* timeouts) {
  __shared__ alignas(128) uint32_t tile[kLitmusWords];
  __shared__ alignas(8) uint64_t bar;
  __shared__ int ok;
  const uint32_t pair = blockIdx.x / 2;
  uint32_t* data = buf + static_cast<size_t>(pair) * kLitmusWords;
  uint32_t* ready = flags + 2 * pair;  // writer -> reader: round r + 1 written
  uint32_t* done = ready + 1;          // reader -> writer: round r + 1 read
  const bool writer = (blockIdx.x & 1) == 0;
  const uint32_t bar_addr = static_cast<uint32_t>(__cvta_generic_to_shared(&bar));
  if (!writer && threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar_addr) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  for (int r = 0; r < rounds; ++r) {
    if (threadIdx.x == 0) ok = AwaitFlag(writer ? done : ready, writer ? r : r + 1);
    __syncthreads();
    if (!ok) {
      if (threadIdx.x == 0) atomicAdd(timeouts, 1ull);
      return;
    }
    if (writer) {
      for (int w = threadIdx.x; w < kLitmusWords; w += blockDim.x) {
        data[w] = LitmusWord(pair, r, w);
      }
      if (variant & 1) asm volatile("fence.proxy.async.global;" ::: "memory");
      __threadfence();
      __syncthreads();
      // As PublishUnit: one red.release.gpu.add per round (the flag counts rounds).
      if (threadIdx.x == 0) h3::kernels::ptx::RedReleaseGpuAdd(ready, 1u);
    } else {
      if (threadIdx.x == 0) {
        if (variant & 2) asm volatile("fence.proxy.async.global;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar_addr),
                     "r"(kLitmusWords * 4)
                     : "memory");
        asm volatile(
            "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
                "r"(static_cast<uint32_t>(__cvta_generic_to_shared(tile))),
            "l"(data), "r"(kLitmusWords * 4), "r"(bar_addr)
            : "memory");
      }
      // Every thread waits for the phase (the copy's bytes are then visible), 1 s at most.
      const uint64_t t0 = h3::kernels::ptx::GlobalTimerNs();
      while (!h3::kernels::ptx::MbarTryWait(&bar, static_cast<uint32_t>(r & 1))) {
        if (h3::kernels::ptx::GlobalTimerNs() - t0 > 1000000000ull) {
          if (threadIdx.x == 0) atomicAdd(timeouts, 1ull);
          __trap();  // a bulk copy that never completes: the probe reports the launch error
        }
      }
      unsigned long long bad = 0;
      for (int w = threadIdx.x; w < kLitmusWords; w += blockDim.x) {
        bad += tile[w] != LitmusWord(pair, r, w);
      }
      if (bad) atomicAdd(mismatches, bad);
      __syncthreads();
      if (threadIdx.x == 0) h3::kernels::ptx::RedReleaseGpuAdd(done, 1u);
    }
  }
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

cudaError_t RunProxyLitmus(int pairs, int rounds, LitmusCounts* out) {
  uint32_t* buf = nullptr;
  uint32_t* flags = nullptr;
  unsigned long long* counts = nullptr;  // [mismatches, timeouts]
  cudaError_t e = cudaMalloc(&buf, static_cast<size_t>(pairs) * kLitmusWords * 4);
  if (e == cudaSuccess) e = cudaMalloc(&flags, static_cast<size_t>(pairs) * 2 * 4);
  if (e == cudaSuccess) e = cudaMalloc(&counts, 2 * sizeof(unsigned long long));
  for (int v = 0; v < 4 && e == cudaSuccess; ++v) {
    e = cudaMemset(flags, 0, static_cast<size_t>(pairs) * 2 * 4);
    if (e == cudaSuccess) e = cudaMemset(counts, 0, 2 * sizeof(unsigned long long));
    if (e == cudaSuccess) {
      ProxyLitmusKernel<<<2 * pairs, 128>>>(buf, flags, rounds, v, counts, counts + 1);
      e = cudaGetLastError();
    }
    unsigned long long host[2] = {0, 0};
    if (e == cudaSuccess) e = cudaMemcpy(host, counts, sizeof(host), cudaMemcpyDeviceToHost);
    out->stale_words[v] = host[0];
    out->timeouts[v] = host[1];
  }
  out->pairs = pairs;
  out->rounds = rounds;
  out->ran = e == cudaSuccess;
  cudaFree(buf);
  cudaFree(flags);
  cudaFree(counts);
  return e;
}

}  // namespace h3::probe
