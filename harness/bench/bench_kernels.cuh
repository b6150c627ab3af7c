// The benchmark's own device code: input generation, the standalone gated-residual epilogue of the
// unfused baselines, and the scale swizzle cuBLASLt's NVFP4 GEMM needs. Host-callable launchers
// only (no device code in this header), so plain C++ includes it. The quantize baseline is the
// kernel's own standalone quantizer (kernels/launch/quantize_kernel.h), not a kernel of this file.

#ifndef H3_HARNESS_BENCH_BENCH_KERNELS_CUH_
#define H3_HARNESS_BENCH_BENCH_KERNELS_CUH_

#include <cuda_runtime.h>

#include <cstdint>

namespace h3::bench {

// Element (r, c) of every fill is a pure function of testbed::Hash(seed, tensor, r, c)
// (harness/testbed/rng.h, the same splitmix64 the host tests use), so a rotation set is
// reproducible from its seed alone.

// x: bf16 [rows, cols], uniform in [-scale, scale): 24 random bits, one rounding to bf16.
cudaError_t FillUniformBf16(uint16_t* x, int64_t rows, int64_t cols, uint64_t seed, uint64_t tensor,
                            float scale, cudaStream_t stream);
// bytes: [count], (hash & mask) | base. Weight codes: mask 0xFF, base 0x00; UE4M3 scales in
// [2^-3, 2): mask 0x1F, base 0x20.
cudaError_t FillRandomBytes(uint8_t* bytes, int64_t count, uint64_t seed, uint64_t tensor,
                            uint8_t mask, uint8_t base, cudaStream_t stream);
// gate_index: [m], in [0, g), with one row in 16 padded (-1: out copies residual).
cudaError_t FillGateIndex(int32_t* gate_index, int64_t m, int64_t g, uint64_t seed, uint64_t tensor,
                          cudaStream_t stream);

// The gated residual of docs/contract.md section 6 as its own kernel, on the GEMM's output o
// ([m, n] f32 or bf16, alpha already applied):
//   out[r, c] = bf16(f32(residual[r, c]) + f32(bf16(f32(gate[gate_index[r], c]) * f32(o[r, c]))))
// Rows whose gate_index lies outside [0, g) copy residual bit for bit. gate: bf16 [g, n];
// residual, out: bf16 [m, n] (out may equal residual). n % 8 == 0, every pointer 16-byte aligned:
// each thread moves 16-byte vectors (8 outputs), o/residual read and out written with streaming
// cache hints (touched once), gate read through L1/L2 (97 KiB at the MiniMax-H3 shape).
cudaError_t LaunchEpilogueF32(const float* o, const uint16_t* gate, const int32_t* gate_index,
                              const uint16_t* residual, uint16_t* out, int64_t m, int64_t n,
                              int64_t g, cudaStream_t stream);
cudaError_t LaunchEpilogueBf16(const uint16_t* o, const uint16_t* gate, const int32_t* gate_index,
                               const uint16_t* residual, uint16_t* out, int64_t m, int64_t n,
                               int64_t g, cudaStream_t stream);

// Linear block scales [rows, cols] -> the 128x4 swizzled layout (core/scale_layout.h) that
// cuBLASLt's VEC16_UE4M3 scale mode reads, SwizzledScaleBytes(rows, cols) bytes. cols % 4 == 0
// (one 32-bit word per thread). The caller zeroes the padding once; it is never written here.
cudaError_t LaunchSwizzleScales(const uint8_t* linear, int64_t rows, int64_t cols,
                                uint8_t* swizzled, cudaStream_t stream);

// Spins on the GPU for `ns` nanoseconds. Enqueued before a timed call, it keeps the GPU busy while
// the host enqueues the start event, the call and the stop event, so the measured interval holds
// the call's GPU time and not the host's launch latency.
cudaError_t LaunchSpin(int64_t ns, cudaStream_t stream);

// An empty kernel, <<<1, 32, 0, stream>>>, through cudaLaunchKernel (what <<<>>> compiles to)
// with its error returned: the host cost of one launch alone (host_cost.cc).
cudaError_t LaunchEmpty(cudaStream_t stream);

}  // namespace h3::bench

#endif  // H3_HARNESS_BENCH_BENCH_KERNELS_CUH_
