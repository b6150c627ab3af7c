// The GPU weight quantizer (kernels/weight_quant/weight_quant.h) against the CPU one (emulator/weight.h), bit
// for bit: codes, every byte of the swizzled scales (padding included) and the global scale's
// bits, on a table of data and shapes; the same errors (code and message) for non-finite data and
// an overflowing global scale, with the outputs untouched; and its time at [5376, 7168].
// Each case prints one line: "weight_quant <case> [n, k] <type>: PASS|FAIL ...".

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "core/scale_layout.h"
#include "emulator/formats.h"
#include "emulator/weight.h"
#include "harness/testbed/cuda.h"
#include "harness/testbed/rng.h"
#include "kernels/weight_quant/weight_quant.h"
#include "tools/cuda/gpu_test.h"

namespace h3 {
namespace {

using testbed::DeviceBuffer;
using testbed::Rng;

constexpr uint8_t kSentinel = 0xA5;  // what q and sf hold before a call

// Element (r, c) of a case, as bits: bf16 in the low 16 bits, or f32.
using Gen = uint32_t (*)(int64_t r, int64_t c, Rng& rng);

uint32_t F32Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
uint32_t Bf16Of(double v) { return F32ToBf16(static_cast<float>(v)); }
// A finite bf16 with uniformly random bits (exponent 0xFF redrawn): zeros, subnormals, the
// largest values and both signs.
uint32_t RandomFiniteBf16(Rng& rng) {
  for (;;) {
    const uint32_t b = rng.Next() & 0xFFFFu;
    if ((b & 0x7F80u) != 0x7F80u) return b;
  }
}

struct Case {
  const char* name;
  int64_t n, k;
  bool f32;
  Gen gen;
};

const Case kCases[] = {
    {"random normal", 256, 512, false,
     [](int64_t, int64_t, Rng& g) { return Bf16Of(0.02 * g.Normal()); }},
    {"zeros (amax 0: w_gs = 1)", 128, 64, false, [](int64_t, int64_t, Rng&) { return 0u; }},
    // amax where RN(RN(1/amax) * 2688), the contract, and RN(2688/amax) differ (1 ulp; 3 ulp with
    // a subnormal 1/amax): the global scale is the CPU quantizer's, bits included.
    {"amax -1.25 (w_gs 0x45066667, not 0x45066666)", 128, 64, false,
     [](int64_t r, int64_t c, Rng& g) {
       return r == 5 && c == 7 ? 0xBFA0u : Bf16Of(0.1 * g.Normal());
     }},
    {"f32 amax 2.65e38 (1/amax subnormal: w_gs 3 ulp from 2688/amax)", 128, 32, true,
     [](int64_t r, int64_t c, Rng& g) {
       return r == 100 && c == 31 ? 0x7F47B01Du : F32Bits(static_cast<float>(1e30 * g.Normal()));
     }},
    {"signed zeros", 130, 48, false,
     [](int64_t, int64_t, Rng& g) { return (g.Next() & 1) ? 0x8000u : 0u; }},
    {"all equal 0.5", 128, 256, false, [](int64_t, int64_t, Rng&) { return 0x3F00u; }},
    {"all equal -3", 64, 128, false, [](int64_t, int64_t, Rng&) { return 0xC040u; }},
    {"subnormal blocks among normal ones", 256, 256, false,
     [](int64_t r, int64_t c, Rng& g) {
       // Blocks alternate: bf16 subnormals (scale byte 0: the FLT_MAX clamp) and N(0, 1).
       if (((r + c / 16) & 1) == 0) return static_cast<uint32_t>(g.Next() & 0x807Fu);
       return Bf16Of(g.Normal());
     }},
    {"tiny weight, amax just legal", 128, 64, false,
     [](int64_t, int64_t, Rng& g) {  // |w| < 2^-115 ~ 2.4e-35: w_gs ~ 1.1e38, still finite
       const uint32_t b = g.Next() & 0x867Fu;
       return (b & 0x7F80u) > 0x0580u ? (b & 0x807Fu) | 0x0580u : b;
     }},
    {"largest finite values", 128, 128, false,
     [](int64_t, int64_t, Rng& g) {
       const uint64_t x = g.Next();
       if (x % 3 == 0) return (x & 8) ? 0xFF7Fu : 0x7F7Fu;  // +-3.3895e38
       return Bf16Of(1e30 * g.Normal());
     }},
    {"random finite bit patterns (mixed sign, every exponent)", 384, 320, false,
     [](int64_t, int64_t, Rng& g) { return RandomFiniteBf16(g); }},
    {"one huge value per block", 256, 192, false,
     [](int64_t, int64_t c, Rng& g) {
       if (c % 16 == 5) return Bf16Of(1e4 * (1 + g.Uniform()));
       return Bf16Of(0.01 * g.Normal());
     }},
    {"mixed sign, wide range", 200, 96, false,
     [](int64_t, int64_t, Rng& g) {
       const double mag = std::ldexp(1.0 + g.Uniform(), g.Int(-40, 40));
       return Bf16Of((g.Next() & 1) ? -mag : mag);
     }},
    {"smallest legal shape", 1, 16, false,
     [](int64_t, int64_t c, Rng&) { return Bf16Of(static_cast<double>(c) - 7.5); }},
    {"non-square, k/16 odd", 3, 48, false,
     [](int64_t, int64_t, Rng& g) { return Bf16Of(g.Normal()); }},
    {"n = 129, k/16 = 5", 129, 80, false,
     [](int64_t, int64_t, Rng& g) { return Bf16Of(g.Normal()); }},
    {"f32 random normal", 128, 256, true,
     [](int64_t, int64_t, Rng& g) { return F32Bits(static_cast<float>(g.Normal())); }},
    {"f32 random finite bit patterns", 129, 48, true,
     [](int64_t, int64_t, Rng& g) {
       for (;;) {
         const uint32_t b = static_cast<uint32_t>(g.Next());
         if ((b & 0x7F800000u) != 0x7F800000u) return b;
       }
     }},
    {"f32 subnormal blocks among normal ones", 128, 64, true,
     [](int64_t, int64_t c, Rng& g) {
       if ((c / 16) % 2 == 0) return static_cast<uint32_t>(g.Next() & 0x807FFFFFu);
       return F32Bits(static_cast<float>(g.Normal()));
     }},
};

struct Host {
  std::vector<uint16_t> bf16;
  std::vector<float> f32;
};

Host Make(const Case& c, uint64_t seed) {
  Rng rng(seed);
  Host h;
  const size_t count = static_cast<size_t>(c.n * c.k);
  if (c.f32) {
    h.f32.resize(count);
  } else {
    h.bf16.resize(count);
  }
  for (int64_t r = 0; r < c.n; ++r) {
    for (int64_t k = 0; k < c.k; ++k) {
      const uint32_t b = c.gen(r, k, rng);
      const size_t i = static_cast<size_t>(r * c.k + k);
      if (c.f32) {
        std::memcpy(&h.f32[i], &b, 4);
      } else {
        h.bf16[i] = static_cast<uint16_t>(b);
      }
    }
  }
  return h;
}

absl::StatusOr<QuantizedWeight> Cpu(const Host& h, int64_t n, int64_t k, bool f32) {
  return f32 ? QuantizeWeightF32(h.f32, n, k) : QuantizeWeightBf16(h.bf16, n, k);
}

// The GPU quantizer on `h`; q and sf start as kSentinel bytes.
struct GpuRun {
  absl::StatusOr<float> gs;
  std::vector<uint8_t> q, sf;
};

GpuRun Gpu(const Host& h, int64_t n, int64_t k, bool f32) {
  DeviceBuffer<uint16_t> wb;
  DeviceBuffer<float> wf;
  DeviceBuffer<uint8_t> q, sf;
  GpuRun out{absl::InternalError("not run"), {}, {}};
  absl::Status s = f32 ? wf.Upload(h.f32) : wb.Upload(h.bf16);
  if (s.ok()) s = q.Alloc(static_cast<size_t>(n * (k / 2)));
  if (s.ok()) s = sf.Alloc(static_cast<size_t>(SwizzledScaleBytes(n, k / 16)));
  if (s.ok()) s = q.Fill(kSentinel);
  if (s.ok()) s = sf.Fill(kSentinel);
  if (!s.ok()) {
    out.gs = s;
    return out;
  }
  WeightQuantArgs a;
  a.n = n;
  a.k = k;
  a.weight = f32 ? static_cast<const void*>(wf.get()) : static_cast<const void*>(wb.get());
  a.weight_is_f32 = f32;
  a.q = q.get();
  a.sf = sf.get();
  out.gs = QuantizeWeightNvfp4Gpu(a, nullptr);
  const cudaError_t e = cudaDeviceSynchronize();
  if (out.gs.ok() && e != cudaSuccess) out.gs = testbed::CudaStatus(e, "cudaDeviceSynchronize");
  absl::StatusOr<std::vector<uint8_t>> qh = q.Download(), sfh = sf.Download();
  if (qh.ok()) out.q = *std::move(qh);
  if (sfh.ok()) out.sf = *std::move(sfh);
  return out;
}

// "" when equal, else where the first difference is.
std::string FirstDiff(const std::vector<uint8_t>& want, const std::vector<uint8_t>& got) {
  if (want.size() != got.size()) {
    return absl::StrFormat("size %d vs %d", want.size(), got.size());
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] != got[i]) {
      return absl::StrFormat("byte %d: cpu 0x%02x gpu 0x%02x", i, want[i], got[i]);
    }
  }
  return "";
}

std::string Label(const char* name, int64_t n, int64_t k, bool f32) {
  return absl::StrFormat("weight_quant %s [%d, %d] %s", name, n, k, f32 ? "f32" : "bf16");
}

// Runs `cases` (seeds by position), one line each; returns how many failed.
int RunCases(const Case* cases, size_t count) {
  int failed = 0;
  for (size_t i = 0; i < count; ++i) {
    const Case& c = cases[i];
    const Host h = Make(c, 0x5EED0000u + i);
    const absl::StatusOr<QuantizedWeight> cpu = Cpu(h, c.n, c.k, c.f32);
    EXPECT_TRUE(cpu.ok()) << c.name << ": " << cpu.status();
    if (!cpu.ok()) {
      std::printf("%s: FAIL (the CPU quantizer refused it: %s)\n",
                  Label(c.name, c.n, c.k, c.f32).c_str(), cpu.status().ToString().c_str());
      ++failed;
      continue;
    }
    const GpuRun gpu = Gpu(h, c.n, c.k, c.f32);
    std::string why;
    if (!gpu.gs.ok()) {
      why = std::string(gpu.gs.status().message());
    } else if (F32Bits(*gpu.gs) != F32Bits(cpu->global_scale)) {
      why = absl::StrFormat("w_gs cpu %a gpu %a", cpu->global_scale, *gpu.gs);
    } else if (std::string d = FirstDiff(cpu->q, gpu.q); !d.empty()) {
      why = "codes " + d;
    } else if (std::string d = FirstDiff(cpu->sf, gpu.sf); !d.empty()) {
      why = "scales " + d;
    }
    std::printf("%s: %s (w_gs %a, %zu code bytes, %zu scale bytes)\n",
                Label(c.name, c.n, c.k, c.f32).c_str(), why.empty() ? "PASS" : "FAIL",
                cpu->global_scale, cpu->q.size(), cpu->sf.size());
    if (!why.empty()) {
      std::printf("  %s\n", why.c_str());
      ++failed;
    }
    EXPECT_TRUE(why.empty()) << c.name << ": " << why;
  }
  return failed;
}

TEST(WeightQuantGpu, BitIdenticalToCpuSmall) {
  H3_SKIP_WITHOUT_GPU();
  const int failed = RunCases(kCases, std::size(kCases));
  std::printf("weight_quant bit-exact cases: %d of %zu passed\n",
              static_cast<int>(std::size(kCases)) - failed, std::size(kCases));
}

TEST(WeightQuantGpu, BitIdenticalToCpuMiniMaxH3Shape) {
  H3_SKIP_WITHOUT_GPU();
  const Case big[] = {
      {"MiniMax-H3 weight, N(0, 0.02^2)", 5376, 7168, false,
       [](int64_t, int64_t, Rng& g) { return Bf16Of(0.02 * g.Normal()); }},
      {"MiniMax-H3 shape, random finite bit patterns", 5376, 7168, false,
       [](int64_t, int64_t, Rng& g) { return RandomFiniteBf16(g); }},
  };
  EXPECT_EQ(RunCases(big, std::size(big)), 0);
}

// Errors: the CPU quantizer's code and message (the GPU's has the function's name in front),
// nothing written.
TEST(WeightQuantGpu, SameErrorsAsCpuNothingWritten) {
  H3_SKIP_WITHOUT_GPU();
  const Case cases[] = {  // the bit-exactness table's row type
      {"a NaN at [1, 3]", 4, 64, false,
       [](int64_t r, int64_t c, Rng&) { return (r == 1 && c == 3) ? 0x7FC1u : 0x3F80u; }},
      {"-Inf at [2, 17] before a NaN at [3, 0]", 5, 32, false,
       [](int64_t r, int64_t c, Rng&) {
         if (r == 2 && c == 17) return 0xFF80u;
         return (r == 3 && c == 0) ? 0x7FC0u : 0x3F80u;
       }},
      {"f32 Inf at the last element", 130, 48, true,
       [](int64_t r, int64_t c, Rng&) {
         return (r == 129 && c == 47) ? 0x7F800000u : F32Bits(1.0f);
       }},
      {"f32 NaNs in two CTAs' ranges, the first named", 512, 512, true,
       [](int64_t r, int64_t c, Rng&) {
         if ((r == 300 && c == 1) || (r == 7 && c == 500)) return 0xFFC00001u;
         return F32Bits(0.5f);
       }},
      {"all subnormal: 2688/amax overflows", 128, 64, false,
       [](int64_t, int64_t, Rng& g) { return static_cast<uint32_t>(g.Next() & 0x807Fu); }},
      {"f32 1e-38 everywhere: 2688/amax overflows", 4, 64, true,
       [](int64_t, int64_t, Rng&) { return F32Bits(1e-38f); }},
  };
  for (const Case& c : cases) {
    const Case as_case{c.name, c.n, c.k, c.f32, c.gen};
    const Host h = Make(as_case, 7);
    const absl::StatusOr<QuantizedWeight> cpu = Cpu(h, c.n, c.k, c.f32);
    ASSERT_FALSE(cpu.ok()) << c.name;
    const GpuRun gpu = Gpu(h, c.n, c.k, c.f32);
    const std::string want =
        "quantize_minimax_h3_o_weight_nvfp4: " + std::string(cpu.status().message());
    const bool untouched =
        std::all_of(gpu.q.begin(), gpu.q.end(), [](uint8_t b) { return b == kSentinel; }) &&
        std::all_of(gpu.sf.begin(), gpu.sf.end(), [](uint8_t b) { return b == kSentinel; }) &&
        !gpu.q.empty() && !gpu.sf.empty();
    const bool ok = !gpu.gs.ok() && gpu.gs.status().code() == cpu.status().code() &&
                    gpu.gs.status().message() == want && untouched;
    std::printf("%s: %s (%s)\n", Label(c.name, c.n, c.k, c.f32).c_str(), ok ? "PASS" : "FAIL",
                want.c_str());
    if (!ok) {
      std::printf("  gpu: %s; outputs %s\n",
                  gpu.gs.ok() ? "OK" : gpu.gs.status().ToString().c_str(),
                  untouched ? "untouched" : "WRITTEN");
    }
    EXPECT_TRUE(ok) << c.name;
  }
}

TEST(WeightQuantGpu, HostPointerRefusedByName) {
  H3_SKIP_WITHOUT_GPU();
  alignas(16) static uint16_t host_w[128 * 64];
  DeviceBuffer<uint8_t> q, sf;
  ASSERT_TRUE(q.Alloc(128 * 32).ok());
  ASSERT_TRUE(sf.Alloc(SwizzledScaleBytes(128, 4)).ok());
  WeightQuantArgs a;
  a.n = 128;
  a.k = 64;
  a.weight = host_w;
  a.q = q.get();
  a.sf = sf.get();
  const absl::StatusOr<float> r = QuantizeWeightNvfp4Gpu(a, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(r.status().message()).find("weight must be device memory"),
            std::string::npos)
      << r.status();
  std::printf("weight_quant host pointer: %s (%s)\n", r.ok() ? "FAIL" : "PASS",
              std::string(r.status().message()).c_str());
}

// The call as a user makes it (synchronous up to the last launch, then synchronized), after
// warm-up: median of 11 at the MiniMax-H3 shape, beside the CPU quantizer's one run.
TEST(WeightQuantGpu, TimeAtMiniMaxH3Shape) {
  H3_SKIP_WITHOUT_GPU();
  constexpr int64_t kN = 5376, kK = 7168;
  const Case c{"timing", kN, kK, false,
               [](int64_t, int64_t, Rng& g) { return Bf16Of(0.02 * g.Normal()); }};
  const Host h = Make(c, 11);
  DeviceBuffer<uint16_t> w;
  DeviceBuffer<uint8_t> q, sf;
  ASSERT_TRUE(w.Upload(h.bf16).ok());
  ASSERT_TRUE(q.Alloc(kN * kK / 2).ok());
  ASSERT_TRUE(sf.Alloc(SwizzledScaleBytes(kN, kK / 16)).ok());
  WeightQuantArgs a;
  a.n = kN;
  a.k = kK;
  a.weight = w.get();
  a.q = q.get();
  a.sf = sf.get();
  std::vector<double> ms;
  for (int i = 0; i < 14; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const absl::StatusOr<float> r = QuantizeWeightNvfp4Gpu(a, nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
    const double t =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i >= 3) ms.push_back(t);  // 3 warm-up calls
  }
  std::sort(ms.begin(), ms.end());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(QuantizeWeightBf16(h.bf16, kN, kK).ok());
  const double cpu_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "weight_quant timing [5376, 7168] bf16: GPU median %.3f ms (min %.3f, max %.3f, %zu runs "
      "after 3 warm-up), CPU quantizer %.1f ms (one run)\n",
      ms[ms.size() / 2], ms.front(), ms.back(), ms.size(), cpu_ms);
}

}  // namespace
}  // namespace h3
