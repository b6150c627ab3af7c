// The cross-CTA protocol (ready flags, rings, skew gate) under unkind timing, on the GPU: pauses
// of up to 50 us in the quantizer warps (between blocks and before publishing), the load warp and
// the trailing consumer group; one CTA running every tile; only CTA 0 quantizing; and the kernel
// squeezed onto 2 SMs by another stream's kernel. Each run must give the product's bits (act_q,
// act_sf, out) on the cases where the protocol is tightest. The low-rank branch's instance too
// (its group counters, l and the load warp's l gate): its sums have a fixed order, so its bits
// may not depend on the timing either.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "harness/testbed/cuda.h"
#include "harness/testbed/gpu_run.h"
#include "harness/testbed/problem.h"
#include "kernels/out_proj.h"
#include "kernels/out_proj_internal.h"
#include "kernels/testing/branch_stress_kernels.h"
#include "kernels/testing/stress_test_kernels.h"
#include "kernels/device/tiles.h"
#include "tools/cuda/gpu_test.h"

namespace h3 {
namespace {

struct Case {
  const char* name;
  int64_t m, n, k;
};
// K = 256: two k-steps of 128, the tightest skew gate; M mod 128 = 1 and 127; N mod 256 = 128
// (half a 128 x 256 tile); more tiles than an H200 has SMs (CTAs run two tiles).
const Case kCases[] = {{"k256", 300, 512, 256},      {"m_mod128_1", 129, 384, 512},
                       {"m_mod128_127", 255, 256, 512}, {"n_mod256_128", 257, 640, 512},
                       {"two_tiles_per_cta", 8955, 384, 512}};

template <typename T>
std::vector<T> Host(const testbed::DeviceBuffer<T>& buffer) {
  absl::StatusOr<std::vector<T>> host = buffer.Download();
  EXPECT_TRUE(host.ok()) << host.status();
  return host.ok() ? *std::move(host) : std::vector<T>();
}

struct Outputs {
  std::vector<uint16_t> out;
  std::vector<uint8_t> act_q, act_sf;
};
Outputs Read(const testbed::DeviceProblem& d) {
  return {Host(d.out), Host(d.act_q), Host(d.act_sf)};
}
void ExpectSame(const Outputs& got, const Outputs& want, const std::string& what) {
  EXPECT_TRUE(got.out == want.out) << what << ": out differs from the product's";
  EXPECT_TRUE(got.act_q == want.act_q) << what << ": act_q differs from the product's";
  EXPECT_TRUE(got.act_sf == want.act_sf) << what << ": act_sf differs from the product's";
}

// branch: act_smooth and a rank-32 branch (contract sections 12, 13).
absl::StatusOr<testbed::DeviceProblem> Upload(const Case& c, bool branch = false) {
  testbed::ProblemSpec spec;
  spec.shape = OpShape{c.m, c.n, c.k, 9};
  spec.data = testbed::DataKind::kGaussian;
  spec.gate = testbed::GatePattern::kAllValid;
  if (branch) {
    spec.smooth = testbed::SmoothPattern::kLogNormal;
    spec.lora_rank = 32;
  }
  absl::StatusOr<testbed::Problem> p = testbed::GenerateProblem(spec, 1000 + c.m);
  if (!p.ok()) return p.status();
  return testbed::UploadProblem(testbed::InputsOf(*p));
}

class StressTest : public ::testing::TestWithParam<Case> {};

TEST_P(StressTest, GridOneAndOneQuantizerGiveTheProductsBits) {
  H3_SKIP_WITHOUT_GPU();
  const Case& c = GetParam();
  absl::StatusOr<testbed::DeviceProblem> d = Upload(c);
  ASSERT_TRUE(d.ok()) << d.status();
  for (Sm90Emulation e : {Sm90Emulation::kFaithful, Sm90Emulation::kFast}) {
    for (const OutProjTileInfo& tile : kOutProjTiles) {
      if (e == Sm90Emulation::kFast && tile.tile != kOutProjTileDefault) continue;  // one config
      testbed::RunOptions o;
      o.sm90_emulation = e;
      o.tile = tile.tile;
      const std::string what = std::string(c.name) + " " + tile.name +
                               (e == Sm90Emulation::kFast ? " fast" : " faithful");
      ASSERT_TRUE(testbed::Poison(*d).ok());
      ASSERT_TRUE(
          MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d, o), nullptr, CheckMode::kChecked).ok());
      const Outputs want = Read(*d);
      for (kernels::StressMode mode :
           {kernels::StressMode::kGridOne, kernels::StressMode::kOneQuantizer}) {
        ASSERT_TRUE(testbed::Poison(*d).ok());
        const auto t0 = std::chrono::steady_clock::now();
        const absl::Status st = internal::RunOutProj(testbed::ArgsFor(*d, o), nullptr,
                                                     CheckMode::kChecked,
                                                     kernels::StressKernels(mode));
        ASSERT_TRUE(st.ok()) << what << ": " << st;
        std::printf("%s, %s: %.1f ms\n", what.c_str(),
                    mode == kernels::StressMode::kGridOne ? "grid 1" : "one quantizing CTA",
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                              t0)
                        .count());
        ExpectSame(Read(*d), want,
                   what + (mode == kernels::StressMode::kGridOne ? ", grid 1" : ", one quantizer"));
      }
    }
  }
}

// The branch's instance (default tile) with pauses in its units, before their arrivals and before
// l is published, on one CTA or with one quantizing CTA: the product's bits.
TEST_P(StressTest, BranchGivesTheProductsBits) {
  H3_SKIP_WITHOUT_GPU();
  const Case& c = GetParam();
  absl::StatusOr<testbed::DeviceProblem> d = Upload(c, /*branch=*/true);
  ASSERT_TRUE(d.ok()) << d.status();
  for (Sm90Emulation e : {Sm90Emulation::kFaithful, Sm90Emulation::kFast}) {
    testbed::RunOptions o;
    o.sm90_emulation = e;
    o.tile = kOutProjTileDefault;
    const std::string what =
        std::string(c.name) + " branch" + (e == Sm90Emulation::kFast ? " fast" : " faithful");
    ASSERT_TRUE(testbed::Poison(*d).ok());
    ASSERT_TRUE(MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d, o), nullptr, CheckMode::kChecked).ok());
    const Outputs want = Read(*d);
    for (kernels::StressMode mode :
         {kernels::StressMode::kGridOne, kernels::StressMode::kOneQuantizer}) {
      ASSERT_TRUE(testbed::Poison(*d).ok());
      const absl::Status st = internal::RunOutProj(testbed::ArgsFor(*d, o), nullptr,
                                                   CheckMode::kChecked,
                                                   kernels::BranchStressKernels(mode));
      ASSERT_TRUE(st.ok()) << what << ": " << st;
      ExpectSame(Read(*d), want,
                 what + (mode == kernels::StressMode::kGridOne ? ", grid 1" : ", one quantizer"));
    }
  }
}

// Another stream's kernel holds all SMs but two for 300 ms: the fused kernel's grid (sized for
// every SM) runs on the two free ones, a CTA starting only when another has finished; only CTA 0
// quantizes.
TEST_P(StressTest, BesideAKernelThatHoldsAllButTwoSms) {
  H3_SKIP_WITHOUT_GPU();
  const Case& c = GetParam();
  absl::StatusOr<testbed::DeviceProblem> d = Upload(c);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_TRUE(testbed::Poison(*d).ok());
  ASSERT_TRUE(MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d), nullptr, CheckMode::kChecked).ok());
  const Outputs want = Read(*d);
  int dev = 0, sms = 0, optin = 0;
  ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
            cudaSuccess);
  cudaStream_t mine = nullptr, other = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_TRUE(testbed::Poison(*d).ok());
  const int occupiers = sms - 2;
  void* started_host = nullptr;
  ASSERT_EQ(cudaHostAlloc(&started_host, occupiers * sizeof(uint32_t), cudaHostAllocMapped),
            cudaSuccess);
  volatile uint32_t* started = static_cast<volatile uint32_t*>(started_host);
  for (int i = 0; i < occupiers; ++i) started[i] = 0;
  // Most of an SM's shared memory per occupier CTA: no fused CTA (~96 KiB) fits beside one. The
  // fused kernel is launched once every occupier CTA runs (each sets its flag), within 2 s.
  ASSERT_EQ(kernels::LaunchOccupier(occupiers, optin - 8 * 1024, 300000000ull, other, started),
            cudaSuccess);
  const auto wait0 = std::chrono::steady_clock::now();
  int up = 0;
  while (up < occupiers &&
         std::chrono::steady_clock::now() - wait0 < std::chrono::seconds(2)) {
    up = 0;
    for (int i = 0; i < occupiers; ++i) up += started[i] == 1u;
  }
  ASSERT_EQ(up, occupiers) << "occupier CTAs running after 2 s";
  const auto t0 = std::chrono::steady_clock::now();
  const absl::Status st = internal::RunOutProj(testbed::ArgsFor(*d), mine, CheckMode::kChecked,
                                               kernels::StressKernels(
                                                   kernels::StressMode::kOneQuantizer));
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(cudaStreamSynchronize(other), cudaSuccess);
  ASSERT_TRUE(st.ok()) << st;
  std::printf("%s beside a %d-SM occupier: %.1f ms\n", c.name, sms - 2, ms);
  // Every occupier CTA ran before the launch and runs 300 ms: a fused kernel that ends sooner ran
  // on the two free SMs alone, its other CTAs started only as earlier ones finished - the
  // progress argument of ready_flags.h (whichever CTAs are resident finish every m-tile).
  EXPECT_LT(ms, 250.0) << "the fused kernel waited for the occupier's SMs";
  ExpectSame(Read(*d), want, std::string(c.name) + " beside an occupier");
  cudaStreamDestroy(mine);
  cudaStreamDestroy(other);
  cudaFreeHost(started_host);
}

INSTANTIATE_TEST_SUITE_P(TightCases, StressTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(i.param.name);
                         });

}  // namespace
}  // namespace h3
