#ifndef EMULATOR_SHAPE_H_
#define EMULATOR_SHAPE_H_

#include <cstdint>

#include "absl/status/status.h"

namespace h3 {

// MiniMax-H3 attention output projection: N = hidden size, K = 56 heads x 128,
// G = 3 noise levels x 3 modalities (contract section 1).
inline constexpr int64_t kH3N = 5376, kH3K = 7168, kH3G = 9;

struct OpShape {
  int64_t m = 0;
  int64_t n = kH3N;
  int64_t k = kH3K;
  int64_t g = kH3G;
};

// m >= 0, n >= 1, k > 0 && k % 64 == 0 (one mma.m16n8k64 k step), g >= 1.
absl::Status ValidateShape(const OpShape& shape);

}  // namespace h3

#endif  // EMULATOR_SHAPE_H_
