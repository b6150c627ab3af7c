#ifndef EMULATOR_WEIGHT_H_
#define EMULATOR_WEIGHT_H_

// Weight quantization, docs/contract.md section 5
// (`quantize_minimax_h3_o_weight_nvfp4`).

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace h3 {

struct QuantizedWeight {
  int64_t n, k;
  std::vector<uint8_t> q;   // [n, k/2] E2M1x2 codes, low nibble = even k
  std::vector<uint8_t> sf;  // SwizzledScaleBytes(n, k/16), 128x4 swizzled
  float global_scale;       // RN(RN(1 / amax) * 2688), 1 when amax == 0 (section 5)
};

// w: [n, k] row-major; n >= 1, k > 0 and k % 16 == 0, every value finite.
// Errors: InvalidArgument for a bad shape, a size mismatch or a non-finite
// value (naming the first one); OutOfRange when amax is so small that the
// global scale overflows f32 (the op could not accept it).
absl::StatusOr<QuantizedWeight> QuantizeWeightBf16(absl::Span<const uint16_t> w, int64_t n,
                                                   int64_t k);
absl::StatusOr<QuantizedWeight> QuantizeWeightF32(absl::Span<const float> w, int64_t n, int64_t k);

}  // namespace h3

#endif  // EMULATOR_WEIGHT_H_
