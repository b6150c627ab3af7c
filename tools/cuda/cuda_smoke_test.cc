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

// The __CUDA_ARCH__ of the image the runtime picks on a device of compute capability
// major.minor, from the archs the smoke kernel is built for: sm_90a runs on 9.0 only (900), and
// sm_120f is the SM12x family build, one image (__CUDA_ARCH__ 1200) that runs on every 12.x part
// (sm_120: RTX 50xx, RTX PRO 6000; sm_121: GB10).
int ExpectedCudaArch(int major, int minor) {
  if (major == 12) return 1200;
  return major * 100 + minor * 10;
}

TEST(CudaSmokeTest, ExpectedArchFollowsTheFamilyBuild) {
  EXPECT_EQ(ExpectedCudaArch(9, 0), 900);
  EXPECT_EQ(ExpectedCudaArch(12, 0), 1200);
  EXPECT_EQ(ExpectedCudaArch(12, 1), 1200);  // GB10 runs the sm_120f image
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
  // The SASS that ran is the one built for the device (sm_90a on Hopper, sm_120f on SM12x).
  EXPECT_EQ(arch, ExpectedCudaArch(prop.major, prop.minor));
  std::printf("cuda_smoke_test: ran on %s (sm_%d%d), kernel compiled for __CUDA_ARCH__=%d\n",
              prop.name, prop.major, prop.minor, arch);
  cudaFree(dx);
  cudaFree(dout);
  cudaFree(darch);
}

}  // namespace
}  // namespace h3::smoke
