// The C ABI's GPU weight quantizer (capi.h h3_quantize_weight_gpu) over kernels/weight_quant/weight_quant.h:
// the operands' shapes checked against each other here, the rest by the host API, every
// rejection before anything is written.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/scale_layout.h"
#include "kernels/weight_quant/weight_quant.h"
#include "python/native/capi.h"
#include "python/native/capi_arrays.h"
#include "python/native/last_error.h"

namespace {

constexpr char kQuantizer[] = "quantize_minimax_h3_o_weight_nvfp4";

using h3::capi::Numel;
using h3::capi::ShapeStr;

absl::Status CudaError(cudaError_t e, const char* what) {
  return absl::InternalError(absl::StrFormat("%s: %s failed: %s (%s)", kQuantizer, what,
                                             cudaGetErrorName(e), cudaGetErrorString(e)));
}

absl::StatusOr<float> Run(const H3Array* weight, int32_t weight_is_f32, H3Array* q, H3Array* sf,
                          int32_t device, void* stream) {
  for (const auto& [name, ptr] :
       {std::pair<const char*, const void*>{"weight", weight}, {"q", q}, {"sf", sf}}) {
    if (ptr == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: expected a pointer, got null", name));
    }
  }
  if (weight->ndim != 2) {
    return absl::InvalidArgumentError(
        absl::StrFormat("weight must be 2-D [N, K], got shape %s", ShapeStr(*weight)));
  }
  if (weight_is_f32 != 0 && weight_is_f32 != 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("weight_is_f32 must be 0 (bf16) or 1 (f32), got %d", weight_is_f32));
  }
  const int64_t n = weight->shape[0], k = weight->shape[1];
  // With a legal [N, K] the outputs' sizes follow; otherwise the host API names N or K first.
  if (n >= 1 && k > 0 && k % 16 == 0) {
    if (q->ndim != 2 || q->shape[0] != n || q->shape[1] != k / 2) {
      return absl::InvalidArgumentError(
          absl::StrFormat("q must have shape [N, K/2] = [%d, %d], got %s", n, k / 2, ShapeStr(*q)));
    }
    const int64_t sf_bytes = h3::SwizzledScaleBytes(n, k / 16);
    if (sf->ndim < 1 || sf->ndim > 4 || Numel(*sf) != sf_bytes) {
      return absl::InvalidArgumentError(
          absl::StrFormat("sf must be %d bytes, got %d", sf_bytes, Numel(*sf)));
    }
  }
  h3::WeightQuantArgs a;
  a.n = n;
  a.k = k;
  a.weight = weight->data;
  a.weight_is_f32 = weight_is_f32 == 1;
  a.q = static_cast<uint8_t*>(q->data);
  a.sf = static_cast<uint8_t*>(sf->data);
  // Bad arguments are refused before any CUDA call; then the operands' device is made current
  // for the call and the previous one restored.
  if (absl::Status s = h3::ValidateWeightQuantArgs(a); !s.ok()) return s;
  int prev = -1;
  if (device >= 0) {
    cudaError_t e = cudaGetDevice(&prev);
    if (e != cudaSuccess) return CudaError(e, "cudaGetDevice");
    if (prev != device) {
      e = cudaSetDevice(device);
      if (e != cudaSuccess) return CudaError(e, "cudaSetDevice");
    } else {
      prev = -1;
    }
  }
  absl::StatusOr<float> gs = h3::QuantizeWeightNvfp4Gpu(a, static_cast<cudaStream_t>(stream));
  if (prev >= 0) cudaSetDevice(prev);
  return gs;
}

}  // namespace

extern "C" {

int32_t h3_quantize_weight_gpu(const H3Array* weight, int32_t weight_is_f32, H3Array* q,
                               H3Array* sf, float* global_scale, int32_t device, void* stream) {
  if (global_scale == nullptr) {
    return h3::capi::Fail(absl::InvalidArgumentError("global_scale: expected a pointer, got null"),
                          kQuantizer);
  }
  absl::StatusOr<float> gs = Run(weight, weight_is_f32, q, sf, device, stream);
  if (!gs.ok()) return h3::capi::Fail(gs.status(), kQuantizer);
  *global_scale = *gs;
  return h3::capi::Done(absl::OkStatus(), kQuantizer);
}

}  // extern "C"
