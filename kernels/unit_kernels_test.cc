// Device building blocks against the emulator: one block-scaled MMA (native / instruction-level
// emulation / fragment-level emulation) vs the instruction model, the block quantizer and the
// e2m1 conversion vs the emulator's formats.

#include "kernels/unit_kernels.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "emulator/formats.h"
#include "emulator/mma_model.h"
#include "emulator/quantize.h"
#include "kernels/quantize_kernel.h"
#include "tools/cuda/gpu_test.h"

namespace h3::kernels {
namespace {

struct Rng {
  uint64_t s;
  uint32_t Next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(s >> 32);
  }
};

template <typename T>
T* Dev(const std::vector<T>& h) {
  T* d = nullptr;
  cudaMalloc(&d, h.size() * sizeof(T));
  cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice);
  return d;
}
template <typename T>
std::vector<T> Host(const T* d, size_t n) {
  std::vector<T> h(n);
  cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
  return h;
}

struct MmaCase {
  const char* name;
  std::vector<uint8_t> scale_bytes;  // scales drawn from this set
  bool exact;                        // all partial sums exact: bitwise equality expected
};

TEST(UnitKernelsTest, BlockScaledMmaMatchesModel) {
  H3_SKIP_WITHOUT_GPU();
  const std::vector<MmaCase> cases = {
      {"pow2_scales", {0x28, 0x30, 0x38, 0x40, 0x48}, true},
      {"full_range_scales", {0x01, 0x07, 0x08, 0x21, 0x3B, 0x55, 0x77, 0x7E}, false},
  };
  Rng rng{42};
  for (const MmaCase& mc : cases) {
    for (int trial = 0; trial < 20; ++trial) {
      uint32_t a[32][4], b[32][2], sfa[32], sfb[32], a_abs[32][4], b_abs[32][2];
      float c[32][4], zero[32][4] = {};
      for (int l = 0; l < 32; ++l) {
        for (int i = 0; i < 4; ++i) a[l][i] = rng.Next(), a_abs[l][i] = a[l][i] & 0x77777777u;
        for (int i = 0; i < 2; ++i) b[l][i] = rng.Next(), b_abs[l][i] = b[l][i] & 0x77777777u;
        sfa[l] = sfb[l] = 0;
        for (int j = 0; j < 4; ++j) {
          sfa[l] |= uint32_t{mc.scale_bytes[rng.Next() % mc.scale_bytes.size()]} << (8 * j);
          sfb[l] |= uint32_t{mc.scale_bytes[rng.Next() % mc.scale_bytes.size()]} << (8 * j);
        }
        for (int i = 0; i < 4; ++i)
          c[l][i] = static_cast<float>(static_cast<int>(rng.Next() % 64) - 32);
      }
      float want[32][4], abs_sum[32][4];
      MmaM16N8K64BlockScaled(a, b, c, sfa, sfb, want);
      MmaM16N8K64BlockScaled(a_abs, b_abs, zero, sfa, sfb, abs_sum);
      const std::vector<uint32_t> va(&a[0][0], &a[0][0] + 128), vb(&b[0][0], &b[0][0] + 64),
          vsa(sfa, sfa + 32), vsb(sfb, sfb + 32);
      const std::vector<float> vc(&c[0][0], &c[0][0] + 128);
      uint32_t *da = Dev(va), *db = Dev(vb), *dsa = Dev(vsa), *dsb = Dev(vsb);
      float* dc = Dev(vc);
      float *d1, *d2, *d3;
      cudaMalloc(&d1, 512);
      cudaMalloc(&d2, 512);
      cudaMalloc(&d3, 512);
      ASSERT_EQ(RunOneMma(da, db, dc, dsa, dsb, d1, d2, d3), cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const auto inst = Host(d1, 128), emu = Host(d2, 128), frag = Host(d3, 128);
      for (int l = 0; l < 32; ++l) {
        for (int i = 0; i < 4; ++i) {
          const float w = want[l][i];
          // Section-6 bound for a 64-term sum plus C, and the final rounding.
          const double bound = 64 * std::ldexp(abs_sum[l][i] + std::fabs(c[l][i]), -24) +
                               std::ldexp(std::fabs(w), -23);
          for (const auto& [what, got] : {std::pair<const char*, float>{"inst", inst[4 * l + i]},
                                          {"emu", emu[4 * l + i]},
                                          {"frag", frag[4 * l + i]}}) {
            if (mc.exact) {
              ASSERT_EQ(F32Bits(got), F32Bits(w))
                  << mc.name << " " << what << " lane " << l << " reg " << i;
            } else {
              ASSERT_LE(std::fabs(static_cast<double>(got) - w), bound)
                  << mc.name << " " << what << " lane " << l << " reg " << i;
            }
          }
        }
      }
      for (void* p : {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(dsa),
                      static_cast<void*>(dsb), static_cast<void*>(dc), static_cast<void*>(d1),
                      static_cast<void*>(d2), static_cast<void*>(d3)}) {
        cudaFree(p);
      }
    }
  }
}

// Values around every e2m1 rounding threshold, specials, and random bit patterns.
TEST(UnitKernelsTest, E2m1MatchesContract) {
  H3_SKIP_WITHOUT_GPU();
  std::vector<float> v = {0.f,
                          -0.f,
                          0.25f,
                          0.75f,
                          1.25f,
                          1.75f,
                          2.5f,
                          3.5f,
                          5.f,
                          6.f,
                          7.f,
                          1e-45f,
                          -1e-45f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(),
                          -std::numeric_limits<float>::quiet_NaN(),
                          3.4e38f,
                          -0.1f};
  for (float t :
       {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.f, 0.5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f}) {
    for (float s : {1.f, -1.f}) {
      v.push_back(s * std::nextafter(t, 0.f));
      v.push_back(s * std::nextafter(t, 100.f));
      v.push_back(s * t);
    }
  }
  Rng rng{7};
  for (int i = 0; i < 1 << 16; ++i) {
    float f;
    uint32_t u = rng.Next();
    u = (u & 0x807FFFFFu) | ((120u + (u >> 23) % 12u) << 23);  // exponents near the grid
    std::memcpy(&f, &u, 4);
    v.push_back(f);
  }
  for (int i = 0; i < 1 << 14; ++i) {
    uint32_t u = rng.Next();
    float f;
    std::memcpy(&f, &u, 4);
    v.push_back(f);
  }
  float* dv = Dev(v);
  uint8_t* dc = nullptr;
  cudaMalloc(&dc, v.size());
  ASSERT_EQ(RunE2m1(dv, static_cast<int64_t>(v.size()), dc), cudaSuccess);
  const auto got = Host(dc, v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_EQ(got[i], F32ToE2M1(v[i])) << "v = " << v[i] << " bits " << std::hex << F32Bits(v[i]);
  }
  cudaFree(dv);
  cudaFree(dc);
}

TEST(UnitKernelsTest, QuantizeBlocksMatchesEmulator) {
  H3_SKIP_WITHOUT_GPU();
  const int64_t blocks = 1 << 14;
  Rng rng{11};
  std::vector<uint16_t> x(blocks * 16);
  const uint16_t kSpecial[] = {0x7FC0, 0xFF80, 0x7F80, 0x0001, 0x8001,
                               0x0000, 0x8000, 0x7F7F, 0x0080};
  for (int64_t bi = 0; bi < blocks; ++bi) {
    const int kind = bi % 8;
    const uint32_t exp = 100 + rng.Next() % 50;
    for (int i = 0; i < 16; ++i) {
      uint16_t v =
          static_cast<uint16_t>((rng.Next() & 0x807F) | (((exp + rng.Next() % 4) & 0xFF) << 7));
      if (kind == 1 && rng.Next() % 4 == 0) v = kSpecial[rng.Next() % 9];
      if (kind == 2) v = 0x7FC0;                                    // all NaN
      if (kind == 3) v = (i % 2) ? 0x8000 : 0x0000;                 // zeros
      if (kind == 4) v = static_cast<uint16_t>(rng.Next() % 0x80);  // subnormals
      if (kind == 5) v = static_cast<uint16_t>(rng.Next());         // anything
      x[bi * 16 + i] = v;
    }
  }
  uint16_t* dx = Dev(x);
  uint8_t *dq, *ds;
  cudaMalloc(&dq, blocks * 8);
  cudaMalloc(&ds, blocks);
  for (float gs : {1.0f, 2688.0f / 3.0f, 0.37f, 1.0e-20f, 3.0e20f, 448.0f * 6.0f}) {
    ASSERT_EQ(RunQuantizeBlocks(dx, blocks, gs, dq, ds), cudaSuccess);
    const auto q = Host(dq, blocks * 8);
    const auto s = Host(ds, blocks);
    for (int64_t bi = 0; bi < blocks; ++bi) {
      float f[16];
      for (int i = 0; i < 16; ++i) f[i] = Bf16ToF32(x[bi * 16 + i]);
      uint8_t want_sf, want_q[8];
      QuantizeBlock16(f, gs, &want_sf, want_q);
      ASSERT_EQ(s[bi], want_sf) << "gs " << gs << " block " << bi;
      for (int j = 0; j < 8; ++j)
        ASSERT_EQ(q[bi * 8 + j], want_q[j]) << "gs " << gs << " block " << bi << " byte " << j;
    }
  }
  cudaFree(dx);
  cudaFree(dq);
  cudaFree(ds);
}

// The standalone quantize kernel against the emulator's QuantizeRows.
TEST(UnitKernelsTest, QuantizeKernelMatchesQuantizeRows) {
  H3_SKIP_WITHOUT_GPU();
  const int64_t rows = 37, cols = 512;
  Rng rng{5};
  std::vector<uint16_t> x(rows * cols);
  for (auto& v : x)
    v = static_cast<uint16_t>((rng.Next() & 0x807F) | ((110 + rng.Next() % 30) << 7));
  const float gs = 2688.0f / 1.0e4f;
  std::vector<uint8_t> want_q(rows * cols / 2), want_sf(rows * cols / 16);
  QuantizeRows(x, rows, cols, gs, absl::MakeSpan(want_q), absl::MakeSpan(want_sf));
  uint16_t* dx = Dev(x);
  float* dgs = Dev(std::vector<float>{gs});
  uint8_t *dq, *ds;
  cudaMalloc(&dq, want_q.size());
  cudaMalloc(&ds, want_sf.size());
  ASSERT_EQ(LaunchQuantizeNvfp4(dx, rows, cols, dgs, dq, ds, nullptr), cudaSuccess);
  EXPECT_EQ(Host(dq, want_q.size()), want_q);
  EXPECT_EQ(Host(ds, want_sf.size()), want_sf);
  for (void* p : {static_cast<void*>(dx), static_cast<void*>(dgs), static_cast<void*>(dq),
                  static_cast<void*>(ds)}) {
    cudaFree(p);
  }
}

}  // namespace
}  // namespace h3::kernels
