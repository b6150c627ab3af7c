// End-to-end proof of the CUDA chain: nvcc object -> cc_test -> runs on a GPU (skips without).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "tools/cuda/gpu_test.h"
#include "tools/cuda/smoke_kernel.h"

namespace h3::smoke {
namespace {

uint16_t Bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);  // exact for the values used below
}

TEST(CudaSmokeTest, KernelRunsAndComputes) {
  H3_SKIP_WITHOUT_GPU();
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  // Table: input -> expected 2x+1, all exact in bf16.
  const std::vector<std::pair<float, float>> cases = {{0.f, 1.f},  {1.f, 3.f},     {-2.f, -3.f},
                                                      {0.5f, 2.f}, {100.f, 201.f}, {-0.5f, 0.f}};
  const int64_t n = static_cast<int64_t>(cases.size());
  std::vector<uint16_t> x(n), want(n), got(n, 0x7FC0);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = Bf16(cases[i].first);
    want[i] = Bf16(cases[i].second);
  }
  uint16_t *dx = nullptr, *dout = nullptr;
  int* darch = nullptr;
  ASSERT_EQ(cudaMalloc(&dx, n * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dout, n * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&darch, sizeof(int)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dx, x.data(), n * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dout, 0xFF, n * 2), cudaSuccess);  // poison: NaN patterns
  int arch = 0;
  ASSERT_EQ(LaunchAxpb(dx, dout, n, darch, nullptr), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got.data(), dout, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(&arch, darch, sizeof(int), cudaMemcpyDeviceToHost), cudaSuccess);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(got[i], want[i]) << "element " << i << " input " << cases[i].first;
  }
  // The SASS that ran matches the device (sm_90a build on Hopper, sm_120a on SM120).
  EXPECT_EQ(arch, prop.major * 100 + prop.minor * 10);
  std::printf("cuda_smoke_test: ran on %s (sm_%d%d), kernel compiled for __CUDA_ARCH__=%d\n",
              prop.name, prop.major, prop.minor, arch);
  cudaFree(dx);
  cudaFree(dout);
  cudaFree(darch);
}

}  // namespace
}  // namespace h3::smoke
