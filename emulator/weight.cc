#include "emulator/weight.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/global_scale.h"
#include "emulator/formats.h"
#include "emulator/quantize.h"
#include "emulator/swizzle.h"

namespace h3 {
namespace {

template <typename T, typename ToF32>
absl::StatusOr<QuantizedWeight> QuantizeWeightImpl(absl::Span<const T> w, int64_t n, int64_t k,
                                                   ToF32 to_f32) {
  if (n < 1) {
    return absl::InvalidArgumentError(absl::StrFormat("weight n: expected >= 1, got %d", n));
  }
  if (k <= 0 || k % 16 != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("weight k: expected a positive multiple of 16, got %d", k));
  }
  if (static_cast<int64_t>(w.size()) != n * k) {
    return absl::InvalidArgumentError(
        absl::StrFormat("weight: expected n*k = %d elements, got %d", n * k, w.size()));
  }
  // amax = max |W| as f32; a non-finite W is an error (docs/contract.md section 5).
  float amax = 0.0f;
  for (int64_t i = 0; i < n * k; ++i) {
    const float v = to_f32(w[i]);
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("weight[%d, %d]: expected a finite value, got %g", i / k, i % k, v));
    }
    amax = std::fmax(amax, std::fabs(v));
  }
  // w_gs = RN(RN(1 / amax) * 2688), 1 when amax == 0; an overflow is an error. One
  // implementation for the CPU and GPU quantizers (core/global_scale.h).
  const absl::StatusOr<float> w_gs = WeightGlobalScale(amax);
  if (!w_gs.ok()) return w_gs.status();
  const float gs = *w_gs;
  const int64_t cols = k / 16;
  QuantizedWeight out{n, k, std::vector<uint8_t>(n * (k / 2)), {}, gs};
  std::vector<uint8_t> linear(n * cols);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n; ++r) {
    float block[16];
    for (int64_t b = 0; b < cols; ++b) {
      for (int i = 0; i < 16; ++i) block[i] = to_f32(w[r * k + 16 * b + i]);
      QuantizeBlock16(block, gs, &linear[r * cols + b], &out.q[r * (k / 2) + 8 * b]);
    }
  }
  out.sf = SwizzleScales(linear, n, cols);
  return out;
}

}  // namespace

absl::StatusOr<QuantizedWeight> QuantizeWeightBf16(absl::Span<const uint16_t> w, int64_t n,
                                                   int64_t k) {
  return QuantizeWeightImpl(w, n, k, [](uint16_t b) { return Bf16ToF32(b); });
}

absl::StatusOr<QuantizedWeight> QuantizeWeightF32(absl::Span<const float> w, int64_t n, int64_t k) {
  return QuantizeWeightImpl(w, n, k, [](float f) { return f; });
}

}  // namespace h3
