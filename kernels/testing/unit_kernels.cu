#include "kernels/launch/targets.cuh"
#include "kernels/device/epilogue.cuh"
#include "kernels/device/quantize.cuh"
#include "kernels/sm90/mma_emulated.cuh"  // the emulations are tested on every arch
#include "kernels/testing/unit_kernels.h"

namespace h3::kernels {
namespace {

__global__ void OneMmaKernel(const uint32_t* a, const uint32_t* b, const float* c,
                             const uint32_t* sfa, const uint32_t* sfb, float* d_inst, float* d_emu,
                             float* d_frag) {
  const int l = threadIdx.x;
  const uint32_t ar[4] = {a[4 * l], a[4 * l + 1], a[4 * l + 2], a[4 * l + 3]};
  const uint32_t br[2] = {b[2 * l], b[2 * l + 1]};
  float acc[4] = {c[4 * l], c[4 * l + 1], c[4 * l + 2], c[4 * l + 3]};
  TargetArch::Mma(acc, ar, br, sfa[l], sfb[l]);
  float emu[4] = {c[4 * l], c[4 * l + 1], c[4 * l + 2], c[4 * l + 3]};
  sm90::MmaBlockScaledEmulated(emu, ar, br, sfa[l], sfb[l]);
  float frag[4];
  for (int i = 0; i < 4; ++i) frag[i] = __fmul_rn(c[4 * l + i], 1.0f / sm90::kEmuAccScale);
  uint32_t aq[4][4], bq[4][2];
  sm90::DequantAFragment(ar, sfa[l], aq);
  sm90::DequantBFragment(br, sfb[l], bq);
  for (int s = 0; s < 4; ++s) MmaBf16(frag, aq[s], bq[s]);
  for (int i = 0; i < 4; ++i) {
    d_inst[4 * l + i] = acc[i];
    d_emu[4 * l + i] = emu[i];
    d_frag[4 * l + i] = __fmul_rn(frag[i], sm90::kEmuAccScale);
  }
}

__global__ void QuantizeBlocksKernel(const uint16_t* x, int64_t blocks, float gs, uint8_t* codes,
                                     uint8_t* sf) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= blocks) return;
  const OsComputed os_src{MakeQuantParams(gs)};
  QuantizeBlockFromGlobal<TargetArch>(x + 16 * i, os_src, codes + 8 * i, sf + i);
}

__global__ void E2m1Kernel(const float* v, int64_t count, uint8_t* codes) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  codes[i] = static_cast<uint8_t>(TargetArch::E2m1Byte(v[i], v[count - 1 - i]) & 0xFu);
}

__global__ void Bf16x2CvtCheckKernel(unsigned long long* mismatches, uint32_t* first) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < (1ull << 32);
       i += stride) {
    const uint32_t u = static_cast<uint32_t>(i), v = u * 2654435761u;
    const float lo = __uint_as_float(u), hi = __uint_as_float(v);
    const uint32_t want = F32ToBf16Rne(lo) | (F32ToBf16Rne(hi) << 16);
    if (F32x2ToBf16x2Rn(lo, hi) != want) {
      atomicAdd(mismatches, 1ull);
      atomicMin(first, u);
    }
  }
}

}  // namespace

cudaError_t RunBf16x2CvtCheck(unsigned long long* mismatches, uint32_t* first) {
  Bf16x2CvtCheckKernel<<<4096, 256>>>(mismatches, first);
  return cudaGetLastError();
}

cudaError_t RunOneMma(const uint32_t* a, const uint32_t* b, const float* c, const uint32_t* sfa,
                      const uint32_t* sfb, float* d_inst, float* d_emu, float* d_frag) {
  OneMmaKernel<<<1, 32>>>(a, b, c, sfa, sfb, d_inst, d_emu, d_frag);
  return cudaGetLastError();
}

cudaError_t RunQuantizeBlocks(const uint16_t* x, int64_t blocks, float gs, uint8_t* codes,
                              uint8_t* sf) {
  QuantizeBlocksKernel<<<static_cast<unsigned>((blocks + 127) / 128), 128>>>(x, blocks, gs, codes,
                                                                             sf);
  return cudaGetLastError();
}

cudaError_t RunE2m1(const float* v, int64_t count, uint8_t* codes) {
  E2m1Kernel<<<static_cast<unsigned>((count + 255) / 256), 256>>>(v, count, codes);
  return cudaGetLastError();
}

}  // namespace h3::kernels
