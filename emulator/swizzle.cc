#include "emulator/swizzle.h"

#include <cstdlib>

namespace h3 {
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
