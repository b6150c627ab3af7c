#include "core/aliasing.h"

#include <cstring>

#include "absl/strings/str_format.h"

namespace h3 {
namespace {

bool Overlap(const ByteRange& a, const ByteRange& b) {
  return a.begin < b.end && b.begin < a.end && a.begin != a.end && b.begin != b.end;
}

}  // namespace

ByteRange RangeOf(const char* name, const void* p, int64_t bytes) {
  const uintptr_t b = reinterpret_cast<uintptr_t>(p);
  return ByteRange{name, b, p == nullptr ? b : b + static_cast<uintptr_t>(bytes)};
}

absl::Status CheckAliasing(const std::vector<ByteRange>& inputs,
                           const std::vector<ByteRange>& outputs, bool out_is_residual) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      if (Overlap(outputs[i], outputs[j])) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "minimax_h3_nvfp4_out_proj: %s must not overlap %s, got [%#x, %#x) and [%#x, %#x)",
            outputs[i].name, outputs[j].name, outputs[i].begin, outputs[i].end, outputs[j].begin,
            outputs[j].end));
      }
    }
    for (const ByteRange& in : inputs) {
      const bool residual = std::strcmp(in.name, "residual") == 0;
      if (i == 0 && residual && out_is_residual) continue;
      if (Overlap(outputs[i], in)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "minimax_h3_nvfp4_out_proj: %s must not overlap %s%s, got [%#x, %#x) and [%#x, %#x)",
            outputs[i].name, in.name, i == 0 && residual ? " (only out == residual exactly)" : "",
            outputs[i].begin, outputs[i].end, in.begin, in.end));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace h3
