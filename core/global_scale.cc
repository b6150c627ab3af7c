#include "core/global_scale.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "absl/status/status.h"
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

}  // namespace h3
