#include "emulator/swizzle.h"

#include <cstdlib>

namespace h3 {
namespace {
inline int64_t RoundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
}  // namespace

int64_t SwizzledScaleBytes(int64_t rows, int64_t cols) {
  return RoundUp(rows, 128) * RoundUp(cols, 4);
}

int64_t SwizzledScaleOffset(int64_t row, int64_t col, int64_t cols) {
  // One 512-byte tile holds 128 rows x 4 columns: row r of the tile sits at
  // (r%32)*16 + (r/32)*4, its 4 columns are consecutive bytes.
  const int64_t col_tiles = RoundUp(cols, 4) / 4;
  return (row / 128) * col_tiles * 512 + (col / 4) * 512 + (row % 32) * 16 +
         ((row % 128) / 32) * 4 + (col % 4);
}

std::vector<uint8_t> SwizzleScales(absl::Span<const uint8_t> linear, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0 || static_cast<int64_t>(linear.size()) != rows * cols) {
    std::abort();
  }
  std::vector<uint8_t> out(SwizzledScaleBytes(rows, cols), 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      out[SwizzledScaleOffset(r, c, cols)] = linear[r * cols + c];
    }
  }
  return out;
}

std::vector<uint8_t> UnswizzleScales(absl::Span<const uint8_t> swizzled, int64_t rows,
                                     int64_t cols) {
  if (rows < 0 || cols < 0 ||
      static_cast<int64_t>(swizzled.size()) != SwizzledScaleBytes(rows, cols)) {
    std::abort();
  }
  std::vector<uint8_t> out(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      out[r * cols + c] = swizzled[SwizzledScaleOffset(r, c, cols)];
    }
  }
  return out;
}

}  // namespace h3
