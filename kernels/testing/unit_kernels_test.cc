// Device building blocks against the emulator: one block-scaled MMA (native / instruction-level
// emulation / fragment-level emulation) vs the instruction model, the block quantizer and the
// e2m1 conversion vs the emulator's formats.

#include "kernels/testing/unit_kernels.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/status/statusor.h"
#include "emulator/formats.h"
#include "emulator/mma_model.h"
#include "emulator/quantize.h"
#include "harness/testbed/cuda.h"
#include "harness/testbed/rng.h"
#include "kernels/launch/quantize_kernel.h"
#include "tools/cuda/gpu_test.h"

namespace h3::kernels {
namespace {

using testbed::DeviceBuffer;

// 32 random bits from the testbed's splitmix64.
class Rng {
 public:
  explicit Rng(uint64_t seed) : rng_(seed) {}
  uint32_t Next() { return static_cast<uint32_t>(rng_.Next() >> 32); }

 private:
  testbed::Rng rng_;
};

// A device copy of `host` (ASSERTs in the caller: check HasFatalFailure).
template <typename T>
DeviceBuffer<T> Dev(const std::vector<T>& host) {
  DeviceBuffer<T> d;
  const absl::Status st = d.Upload(host);
  EXPECT_TRUE(st.ok()) << st;
  return d;
}

// A device buffer of `count` elements.
template <typename T>
DeviceBuffer<T> Alloc(size_t count) {
  DeviceBuffer<T> d;
  const absl::Status st = d.Alloc(count);
  EXPECT_TRUE(st.ok()) << st;
  return d;
}

template <typename T>
std::vector<T> Host(const DeviceBuffer<T>& d) {
  absl::StatusOr<std::vector<T>> h = d.Download();
  EXPECT_TRUE(h.ok()) << h.status();
  return h.ok() ? *std::move(h) : std::vector<T>();
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
  Rng rng(42);
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
      const DeviceBuffer<uint32_t> da = Dev(va), db = Dev(vb), dsa = Dev(vsa), dsb = Dev(vsb);
      const DeviceBuffer<float> dc = Dev(vc);
      const DeviceBuffer<float> d1 = Alloc<float>(128), d2 = Alloc<float>(128),
                                d3 = Alloc<float>(128);
      ASSERT_EQ(RunOneMma(da.get(), db.get(), dc.get(), dsa.get(), dsb.get(), d1.get(), d2.get(),
                          d3.get()),
                cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const auto inst = Host(d1), emu = Host(d2), frag = Host(d3);
      ASSERT_EQ(inst.size(), 128u);
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
  Rng rng(7);
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
  const DeviceBuffer<float> dv = Dev(v);
  const DeviceBuffer<uint8_t> dc = Alloc<uint8_t>(v.size());
  ASSERT_EQ(RunE2m1(dv.get(), static_cast<int64_t>(v.size()), dc.get()), cudaSuccess);
  const auto got = Host(dc);
  ASSERT_EQ(got.size(), v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_EQ(got[i], F32ToE2M1(v[i])) << "v = " << v[i] << " bits " << std::hex << F32Bits(v[i]);
  }
}

TEST(UnitKernelsTest, QuantizeBlocksMatchesEmulator) {
  H3_SKIP_WITHOUT_GPU();
  const int64_t blocks = 1 << 14;
  Rng rng(11);
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
  const DeviceBuffer<uint16_t> dx = Dev(x);
  const DeviceBuffer<uint8_t> dq = Alloc<uint8_t>(blocks * 8), ds = Alloc<uint8_t>(blocks);
  for (float gs : {1.0f, 2688.0f / 3.0f, 0.37f, 1.0e-20f, 3.0e20f, 448.0f * 6.0f}) {
    ASSERT_EQ(RunQuantizeBlocks(dx.get(), blocks, gs, dq.get(), ds.get()), cudaSuccess);
    const auto q = Host(dq);
    const auto s = Host(ds);
    ASSERT_EQ(q.size(), static_cast<size_t>(blocks * 8));
    ASSERT_EQ(s.size(), static_cast<size_t>(blocks));
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
}

// cvt.rn.bf16x2.f32, the epilogue's rounding, equals the contract's bf16() (RNE, NaN -> 0x7FFF)
// on all 2^32 f32 patterns in each half.
TEST(UnitKernelsTest, Bf16x2CvtMatchesContractExhaustively) {
  H3_SKIP_WITHOUT_GPU();
  const DeviceBuffer<unsigned long long> count = Dev(std::vector<unsigned long long>{0});
  const DeviceBuffer<uint32_t> first = Dev(std::vector<uint32_t>{0xFFFFFFFFu});
  ASSERT_EQ(RunBf16x2CvtCheck(count.get(), first.get()), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(Host(count)[0], 0u) << "first differing pattern 0x" << std::hex << Host(first)[0];
}

// The standalone quantize kernel against the emulator's QuantizeRows: small, and larger than
// one wave of its persistent CTAs (the grid-stride loop wraps); a tiny gs (zero scales, os =
// FLT_MAX, infinite products). Blocks with a NaN take the sm_90 build's exact path.
TEST(UnitKernelsTest, QuantizeKernelMatchesQuantizeRows) {
  H3_SKIP_WITHOUT_GPU();
  struct Case {
    int64_t rows, cols;
    float gs;
  };
  for (const Case c : {Case{37, 512, 2688.0f / 1.0e4f}, Case{37, 512, 1.0e-20f},
                       Case{700, 7168, 2688.0f / 3.0f}}) {
    SCOPED_TRACE(::testing::Message() << c.rows << "x" << c.cols << " gs " << c.gs);
    Rng rng(5);
    std::vector<uint16_t> x(c.rows * c.cols);
    for (auto& v : x)
      v = static_cast<uint16_t>((rng.Next() & 0x807F) | ((110 + rng.Next() % 30) << 7));
    // Specials: NaN, -Inf, -0, a bf16 subnormal; an all-NaN block; an all -0 block; a block
    // whose odd half is NaN; the same again in the last row.
    for (const int64_t base : {int64_t{0}, (c.rows - 1) * c.cols}) {
      x[base + 0] = 0x7FC0, x[base + 1] = 0xFF80, x[base + 2] = 0x8000, x[base + 3] = 0x0001;
      for (int i = 16; i < 32; ++i) x[base + i] = 0xFFC1;
      for (int i = 32; i < 48; ++i) x[base + i] = 0x8000;
      for (int i = 56; i < 64; ++i) x[base + i] = 0x7FC0;
    }
    std::vector<uint8_t> want_q(c.rows * c.cols / 2), want_sf(c.rows * c.cols / 16);
    QuantizeRows(x, c.rows, c.cols, c.gs, absl::MakeSpan(want_q), absl::MakeSpan(want_sf));
    const DeviceBuffer<uint16_t> dx = Dev(x);
    const DeviceBuffer<float> dgs = Dev(std::vector<float>{c.gs});
    const DeviceBuffer<uint8_t> dq = Alloc<uint8_t>(want_q.size()),
                                ds = Alloc<uint8_t>(want_sf.size());
    ASSERT_EQ(cudaMemset(dq.get(), 0xFF, want_q.size()), cudaSuccess);  // poisoned
    ASSERT_EQ(cudaMemset(ds.get(), 0xFF, want_sf.size()), cudaSuccess);
    ASSERT_EQ(LaunchQuantizeNvfp4(dx.get(), c.rows, c.cols, dgs.get(), dq.get(), ds.get(), nullptr),
              cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(Host(dq), want_q);
    EXPECT_EQ(Host(ds), want_sf);
  }
}

}  // namespace
}  // namespace h3::kernels
