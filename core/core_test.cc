// The bottom layer against values written out by hand from docs/contract.md (sections 1, 2, 4).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/aliasing.h"
#include "core/cuda_diagnosis.h"
#include "core/formats.h"
#include "core/scale_layout.h"
#include "core/shape.h"

namespace h3 {
namespace {

TEST(Formats, E2m1AllCodes) {
  const float want[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0f, -0.5, -1, -1.5, -2, -3, -4, -6};
  for (int c = 0; c < 16; ++c) {
    EXPECT_EQ(F32Bits(E2M1ToF32(static_cast<uint8_t>(c))), F32Bits(want[c])) << "code " << c;
    EXPECT_EQ(E2M1TimesTwo(static_cast<uint8_t>(c)), static_cast<int>(want[c] * 2)) << c;
  }
}

TEST(Formats, E4m3Table) {
  struct Row {
    uint8_t byte;
    float value;
  };
  const Row rows[] = {
      {0x00, 0.0f},  {0x01, 0x1p-9f}, {0x07, 7 * 0x1p-9f}, {0x08, 0x1p-6f},
      {0x38, 1.0f},  {0x3C, 1.5f},    {0x7E, 448.0f},      {0x80, -0.0f},
      {0xB8, -1.0f}, {0xFE, -448.0f}, {0x30, 0.5f},        {0x40, 2.0f},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(F32Bits(E4M3ToF32(r.byte)), F32Bits(r.value)) << "byte 0x" << std::hex << +r.byte;
  }
  EXPECT_TRUE(std::isnan(E4M3ToF32(0x7F)));
  EXPECT_TRUE(std::isnan(E4M3ToF32(0xFF)));
  EXPECT_TRUE(E4M3IsNaN(0x7F) && E4M3IsNaN(0xFF) && !E4M3IsNaN(0x7E));
  EXPECT_EQ(F32Bits(Ue4m3ToF32(0xB8)), F32Bits(1.0f));  // the sign bit of a scale is ignored
  EXPECT_EQ(F32Bits(E4M3ToF32(kE4m3MaxByte)), F32Bits(kE4m3Max));
  EXPECT_EQ(F32Bits(E2M1ToF32(kE2m1MaxCode)), F32Bits(kE2m1Max));
  EXPECT_EQ(kRcp6Bits, F32Bits(1.0f / 6.0f));
  EXPECT_EQ(F32Bits(kRcp6), kRcp6Bits);
}

TEST(Formats, Bf16IsTheHighHalf) {
  EXPECT_EQ(F32Bits(Bf16ToF32(0x3F80)), F32Bits(1.0f));
  EXPECT_EQ(F32Bits(Bf16ToF32(0x8000)), 0x80000000u);
  EXPECT_EQ(F32Bits(Bf16ToF32(0x0001)), 0x00010000u);  // subnormal kept
}

TEST(ScaleLayout, KnownOffsets) {
  struct Row {
    int64_t row, col, cols, offset;
  };
  const Row rows[] = {
      {0, 0, 448, 0},         {0, 3, 448, 3},   {1, 0, 448, 16},
      {32, 0, 448, 4},        {0, 4, 448, 512}, {128, 0, 448, 57344},
      {127, 447, 448, 57343}, {5, 1, 3, 81},  // cols padded to 4: one column tile per 128 rows
  };
  for (const Row& r : rows) {
    EXPECT_EQ(SwizzledScaleOffset(r.row, r.col, r.cols), r.offset)
        << "(" << r.row << ", " << r.col << ") of " << r.cols << " columns";
  }
  EXPECT_EQ(SwizzledScaleBytes(kH3N, kH3K / kScaleBlock), 2408448);
  EXPECT_EQ(SwizzledScaleBytes(1, 1), 512);
}

// Every (row, col) of a padded matrix lands on its own byte inside the padded size.
TEST(ScaleLayout, IsABijection) {
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{129, 6}, {256, 8}}) {
    const int64_t bytes = SwizzledScaleBytes(rows, cols);
    std::vector<int> hits(bytes, 0);
    for (int64_t r = 0; r < RoundUpTo(rows, 128); ++r) {
      for (int64_t c = 0; c < RoundUpTo(cols, 4); ++c) {
        const int64_t o = SwizzledScaleOffset(r, c, cols);
        ASSERT_GE(o, 0);
        ASSERT_LT(o, bytes);
        ++hits[o];
      }
    }
    for (int64_t i = 0; i < bytes; ++i) ASSERT_EQ(hits[i], 1) << "byte " << i;
  }
}

TEST(Shape, Validate) {
  EXPECT_TRUE(ValidateShape({0, kH3N, kH3K, kH3G}).ok());
  EXPECT_TRUE(ValidateShape({5, 1, 64, 1}).ok());
  const struct {
    OpShape shape;
    const char* says;
  } bad[] = {
      {{-1, 8, 64, 1}, "shape.m (the rows M of attn_out [M, K]) must be >= 0, got -1"},
      {{1, 0, 64, 1}, "shape.n (the rows N of o_weight_q [N, K/2]) must be >= 1, got 0"},
      {{1, 8, 96, 1},
       "shape.k (the columns K of attn_out [M, K]) must be a positive multiple of 64, got 96"},
      {{1, 8, 0, 1},
       "shape.k (the columns K of attn_out [M, K]) must be a positive multiple of 64, got 0"},
      {{1, 8, 64, 0}, "shape.g (the rows G of gate [G, N]) must be >= 1, got 0"},
  };
  for (const auto& b : bad) {
    const absl::Status st = ValidateShape(b.shape);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(st.message(), b.says);
  }
}

TEST(CudaDiagnosis, NoDeviceReasons) {
  const struct {
    int error;
    const char* name;
    int driver, runtime;
    const char* says;
  } rows[] = {
      {kCudaErrorInsufficientDriver, "cudaErrorInsufficientDriver", 0, 13000,
       "no NVIDIA driver or GPU found (cudaGetDeviceCount: cudaErrorInsufficientDriver; no "
       "driver is installed)"},
      {kCudaErrorNoDevice, "cudaErrorNoDevice", 0, 13000,
       "no NVIDIA driver or GPU found (cudaGetDeviceCount: cudaErrorNoDevice; no driver is "
       "installed)"},
      {kCudaErrorInsufficientDriver, "cudaErrorInsufficientDriver", 12080, 13000,
       "the NVIDIA driver supports CUDA 12.8, older than this build's CUDA 13.0 runtime: install "
       "driver R580 or newer (cudaGetDeviceCount: cudaErrorInsufficientDriver)"},
      {kCudaErrorInsufficientDriver, "cudaErrorInsufficientDriver", 11040, 12060,
       "the NVIDIA driver supports CUDA 11.4, older than this build's CUDA 12.6 runtime: install "
       "a driver for CUDA 12.6 or newer (cudaGetDeviceCount: cudaErrorInsufficientDriver)"},
      {kCudaErrorNoDevice, "cudaErrorNoDevice", 13000, 13000,
       "no NVIDIA GPU found; the driver (CUDA 13.0) is installed (cudaGetDeviceCount: "
       "cudaErrorNoDevice)"},
      {999, "cudaErrorUnknown", 13000, 13000,
       "cudaGetDeviceCount: cudaErrorUnknown: unknown error"},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(NoCudaDeviceReason(r.error, r.name, "unknown error", r.driver, r.runtime), r.says)
        << r.name << " driver " << r.driver;
  }
}

TEST(Aliasing, OnlyOutEqualToResidual) {
  alignas(16) static uint8_t mem[1024];
  const std::vector<ByteRange> inputs = {RangeOf("attn_out", mem, 256),
                                         RangeOf("residual", mem + 512, 128),
                                         RangeOf("absent", nullptr, 64)};
  struct Row {
    std::vector<ByteRange> outputs;
    bool out_is_residual;  // what the callers pass: out == residual as pointers
    const char* says;      // "" = OK
  };
  const Row rows[] = {
      {{RangeOf("out", mem + 256, 128), RangeOf("act_q", mem + 640, 64)}, false, ""},
      {{RangeOf("out", mem + 512, 128)}, true, ""},  // in place
      {{RangeOf("out", mem + 512, 128)}, false, "out must not overlap residual (only out =="},
      {{RangeOf("out", mem + 520, 128)}, false, "out must not overlap residual (only out =="},
      {{RangeOf("out", mem + 256, 128), RangeOf("act_q", mem + 300, 8)},
       false,
       "out must not overlap act_q, got"},
      {{RangeOf("out", mem + 640, 64), RangeOf("act_sf", mem + 255, 2)},
       false,
       "act_sf must not overlap attn_out, got"},
      {{RangeOf("out", mem + 640, 64), RangeOf("act_q", nullptr, 100)}, false, ""},
  };
  for (const Row& r : rows) {
    const absl::Status st = CheckAliasing(inputs, r.outputs, r.out_is_residual);
    if (std::string(r.says).empty()) {
      EXPECT_TRUE(st.ok()) << st;
    } else {
      EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(st.message().find(r.says), absl::string_view::npos) << st.message();
    }
  }
}

}  // namespace
}  // namespace h3
