// Spills on purpose, to show the ptxas gate failing the build (tools/cuda/BUILD,
// ptxas_gate_demo): __launch_bounds__(768, 2) caps the kernel at 40 registers per thread (64K
// registers over 1536 threads), and the 64 values it loads all stay live until the first store
// (out may alias in).
__global__ void __launch_bounds__(768, 2) SpillingKernel(const float* in, float* out) {
  float v[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) v[i] = in[threadIdx.x + i * 1024];
#pragma unroll
  for (int i = 0; i < 64; ++i) out[threadIdx.x + i * 1024] = v[i] * v[63 - i] + v[(i + 7) % 64];
}
