// The C ABI's CPU weight quantizer (capi.h h3_quantize_weight_cpu): contract section 5 through
// the emulator (emulator/weight.h), any K that is a multiple of 16; the Python API refuses the
// shapes the op cannot take before it calls this.
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "emulator/weight.h"
#include "python/native/capi.h"
#include "python/native/capi_arrays.h"
#include "python/native/last_error.h"

namespace {

constexpr char kQuantizer[] = "quantize_minimax_h3_o_weight_nvfp4";

using ::h3::capi::Done;
using ::h3::capi::Fail;
using ::h3::capi::HasShape;
using ::h3::capi::Numel;
using ::h3::capi::ShapeStr;

template <typename T>
absl::Span<const T> In(const H3Array& a, int64_t n) {
  return absl::Span<const T>(static_cast<const T*>(a.data), static_cast<size_t>(n));
}

}  // namespace

extern "C" {

int32_t h3_quantize_weight_cpu(const H3Array* weight, int32_t weight_is_f32, H3Array* q,
                               H3Array* sf, float* global_scale) {
  for (const auto& [name, ptr] : {std::pair<const char*, const void*>{"weight", weight},
                                  {"q", q},
                                  {"sf", sf},
                                  {"global_scale", global_scale}}) {
    if (ptr == nullptr) {
      return Fail(absl::InvalidArgumentError(
                      absl::StrFormat("%s: expected a pointer, got null", name)),
                  kQuantizer);
    }
  }
  if (weight->ndim != 2) {
    return Fail(absl::InvalidArgumentError(absl::StrFormat(
                    "%s: weight must be 2-D [N, K], got shape %s", kQuantizer, ShapeStr(*weight))),
                kQuantizer);
  }
  const int64_t n = weight->shape[0], k = weight->shape[1];
  if (weight->data == nullptr && n * k > 0) {
    return Fail(absl::InvalidArgumentError("weight must be host memory, got null"), kQuantizer);
  }
  absl::StatusOr<h3::QuantizedWeight> w =
      weight_is_f32 ? h3::QuantizeWeightF32(In<float>(*weight, n * k), n, k)
                    : h3::QuantizeWeightBf16(In<uint16_t>(*weight, n * k), n, k);
  if (!w.ok()) return Fail(w.status(), kQuantizer);
  if (!HasShape(*q, {n, k / 2}) || q->data == nullptr) {
    return Fail(absl::InvalidArgumentError(absl::StrFormat(
                    "q must have shape [N, K/2] = [%d, %d], got %s", n, k / 2, ShapeStr(*q))),
                kQuantizer);
  }
  if (Numel(*sf) != static_cast<int64_t>(w->sf.size()) || sf->data == nullptr) {
    return Fail(absl::InvalidArgumentError(
                    absl::StrFormat("sf must be %d bytes, got %d", w->sf.size(), Numel(*sf))),
                kQuantizer);
  }
  std::memcpy(q->data, w->q.data(), w->q.size());
  std::memcpy(sf->data, w->sf.data(), w->sf.size());
  *global_scale = w->global_scale;
  return Done(absl::OkStatus(), kQuantizer);
}

}  // extern "C"
