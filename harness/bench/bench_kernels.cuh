// Standalone kernels for the benchmark's unfused baselines and its input generation.
// Host-callable launchers only (no device code here), so plain C++ can include this header.

#ifndef H3_HARNESS_BENCH_BENCH_KERNELS_CUH_
#define H3_HARNESS_BENCH_BENCH_KERNELS_CUH_

#include <cuda_runtime.h>

#include <cstdint>

namespace h3::bench {

// Uniform bf16 values in [-scale, scale) from a counter-based hash of (seed, index).
cudaError_t FillUniformBf16(uint16_t* p, int64_t count, uint64_t seed, float scale,
                            cudaStream_t stream);
// Random bytes: (hash & mask) | base. Weight codes: mask 0xFF, base 0. UE4M3 scales in
// [2^-3, 2^4): mask 0x1F, base 0x20.
cudaError_t FillRandomBytes(uint8_t* p, int64_t count, uint64_t seed, uint8_t mask, uint8_t base,
                            cudaStream_t stream);
// gate_index: mostly valid rows in [0, g), one in 16 padded (-1).
cudaError_t FillGateIndex(int32_t* p, int64_t m, int64_t g, uint64_t seed, cudaStream_t stream);

// The gated-residual epilogue of contract section 6 as its own kernel, reading the GEMM output
// o ([m, n], f32 or bf16, alpha already applied by the GEMM):
//   out = bf16(f32(residual) + f32(bf16(f32(gate[gate_index[m]]) * f32(o))))
// rows with gate_index outside [0, g) copy residual. n % 8 == 0. out may equal residual.
cudaError_t LaunchEpilogueF32(const float* o, const uint16_t* gate, const int32_t* gate_index,
                              const uint16_t* residual, uint16_t* out, int64_t m, int64_t n,
                              int64_t g, cudaStream_t stream);
cudaError_t LaunchEpilogueBf16(const uint16_t* o, const uint16_t* gate, const int32_t* gate_index,
                               const uint16_t* residual, uint16_t* out, int64_t m, int64_t n,
                               int64_t g, cudaStream_t stream);

// Block-16 NVFP4 quantization of contract section 3 (bit-exact), one thread per block:
// codes [m, k/2]; scales either linear [m, k/16] (the op's act_sf) or, when `swizzled`, in the
// 128x4 layout of contract section 4 over (m, k/16) (what cuBLASLt's VEC16_UE4M3 reads; the
// caller zeroes the padding once). k % 16 == 0. gs: device [1].
cudaError_t LaunchQuantize(const uint16_t* x, int64_t m, int64_t k, const float* gs, uint8_t* codes,
                           uint8_t* scales, bool swizzled, cudaStream_t stream);

}  // namespace h3::bench

#endif  // H3_HARNESS_BENCH_BENCH_KERNELS_CUH_
