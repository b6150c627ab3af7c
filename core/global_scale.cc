#include "core/global_scale.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace h3 {

absl::Status CheckGlobalScale(absl::string_view name, float v) {
  if (std::isfinite(v) && v > 0.0f) return absl::OkStatus();
  uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof(bits));
  return absl::InvalidArgumentError(
      absl::StrFormat("%s must be a finite value > 0, got %g (bits 0x%08x)", name, v, bits));
}

absl::StatusOr<float> WeightGlobalScale(float amax) {
  if (!(std::isfinite(amax) && amax >= 0.0f)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("weight: amax must be finite and >= 0, got %g", amax));
  }
  if (amax == 0.0f) return 1.0f;  // contract section 5's departure: FlashInfer's form gives +Inf
  // Two statements through volatile floats: each rounding happens as written, and no compiler
  // may fold them back into the one division 2688 / amax (-freciprocal-math would).
  volatile float rcp = 1.0f / amax;  // RN(1 / amax); subnormal for amax > 2^126, kept
  volatile float gs = rcp * 2688.0f;  // RN(rcp * 2688)
  const float out = gs;
  if (!std::isfinite(out)) {
    return absl::OutOfRangeError(
        absl::StrFormat("weight: amax = %g makes the global scale 2688/amax overflow f32", amax));
  }
  if (!(out > 0.0f)) {  // only where the process flushes subnormals (FTZ/DAZ set by a caller)
    return absl::InternalError(absl::StrFormat(
        "weight: amax = %g gave the global scale %g: subnormals are flushed in this process "
        "(FTZ/DAZ), which the contract's RN(1 / amax) forbids",
        amax, out));
  }
  return out;
}

}  // namespace h3
