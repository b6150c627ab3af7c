#include "emulator/swizzle.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace h3 {
namespace {

struct OffsetCase {
  int64_t row, col, cols, want;
};

// From the formula of docs/contract.md section 4, worked by hand.
const OffsetCase kOffsets[] = {
    {0, 0, 448, 0},
    {0, 1, 448, 1},
    {0, 3, 448, 3},
    {1, 0, 448, 16},
    {31, 0, 448, 496},
    {32, 0, 448, 4},
    {64, 0, 448, 8},
    {96, 2, 448, 14},
    {127, 3, 448, 511},
    {0, 4, 448, 512},
    {0, 447, 448, 111 * 512 + 3},
    {128, 0, 448, 112 * 512},  // 448/4 = 112 tiles per 128-row band
    {5375, 447, 448, 41 * 112 * 512 + 111 * 512 + 31 * 16 + 3 * 4 + 3},
    {128, 0, 5, 2 * 512},  // C = 5 pads to 8: 2 tiles per band
    {130, 6, 5, 2 * 512 + 512 + 2 * 16 + 0 + 2},
};

TEST(Swizzle, OffsetsFromTheFormula) {
  for (const OffsetCase& c : kOffsets) {
    EXPECT_EQ(SwizzledScaleOffset(c.row, c.col, c.cols), c.want)
        << "row " << c.row << " col " << c.col << " cols " << c.cols;
  }
  EXPECT_EQ(SwizzledScaleBytes(5376, 448), 2408448);
  EXPECT_EQ(SwizzledScaleBytes(1, 1), 512);
  EXPECT_EQ(SwizzledScaleBytes(129, 5), 256 * 8);
}

struct Dims {
  int64_t rows, cols;
};

TEST(Swizzle, BijectionInverseAndZeroPadding) {
  const Dims kDims[] = {{1, 1}, {1, 4}, {128, 4}, {129, 5}, {300, 7}, {256, 448}, {33, 13}};
  for (const Dims& d : kDims) {
    const int64_t bytes = SwizzledScaleBytes(d.rows, d.cols);
    std::vector<int> hits(bytes, 0);
    for (int64_t r = 0; r < d.rows; ++r) {
      for (int64_t c = 0; c < d.cols; ++c) {
        const int64_t off = SwizzledScaleOffset(r, c, d.cols);
        ASSERT_GE(off, 0);
        ASSERT_LT(off, bytes);
        ++hits[off];
      }
    }
    int64_t used = 0;
    for (int h : hits) {
      ASSERT_LE(h, 1) << "two elements share a byte";
      used += h;
    }
    EXPECT_EQ(used, d.rows * d.cols);
    // Swizzle with nonzero data: padding stays 0x00, inverse restores the data.
    std::vector<uint8_t> lin(d.rows * d.cols);
    for (size_t i = 0; i < lin.size(); ++i) lin[i] = static_cast<uint8_t>(1 + i % 251);
    const std::vector<uint8_t> sw = SwizzleScales(lin, d.rows, d.cols);
    ASSERT_EQ(static_cast<int64_t>(sw.size()), bytes);
    for (int64_t i = 0; i < bytes; ++i) {
      if (hits[i] == 0) {
        EXPECT_EQ(sw[i], 0) << "padding byte " << i;
      } else {
        EXPECT_NE(sw[i], 0);
      }
    }
    EXPECT_EQ(UnswizzleScales(sw, d.rows, d.cols), lin) << d.rows << "x" << d.cols;
  }
}

TEST(Swizzle, FourScalesOfOneKStepAreOneAlignedWord) {
  for (int64_t r : {0, 1, 31, 32, 127, 128, 300}) {
    for (int64_t j = 0; j < 3; ++j) {
      const int64_t base = SwizzledScaleOffset(r, 4 * j, 12);
      EXPECT_EQ(base % 4, 0);
      for (int64_t c = 1; c < 4; ++c) {
        EXPECT_EQ(SwizzledScaleOffset(r, 4 * j + c, 12), base + c);
      }
    }
  }
}

}  // namespace
}  // namespace h3
