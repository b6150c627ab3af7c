#ifndef H3_KERNELS_WEIGHT_QUANT_H_
#define H3_KERNELS_WEIGHT_QUANT_H_

// quantize_minimax_h3_o_weight_nvfp4 (docs/contract.md section 5) on the GPU, producing the same
// bytes as the CPU quantizer (emulator/weight.h): codes, 128x4-swizzled block scales, and the
// global scale. Two kernels (kernels/weight_quant/weight_quant_kernel.h): the amax pass, whose result comes
// back to the host (the global scale is returned, and a non-finite weight or an overflowing
// global scale is an error before anything is written), then quantization and swizzle.
//
// Synchronous on `stream` up to the second kernel's launch (it waits for the amax pass), so it
// cannot be captured into a CUDA graph; q and sf are complete in stream order after it returns.
// Devices: compute capability 12.x (sm_120f) and 9.0 (sm_90a), as the op.

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace h3 {

struct WeightQuantArgs {
  int64_t n = 0, k = 0;          // n >= 1, k a positive multiple of 16 (as the CPU quantizer)
  const void* weight = nullptr;  // device [n, k], bf16 bit patterns or f32; 16-byte aligned
  bool weight_is_f32 = false;
  uint8_t* q = nullptr;   // device [n, k/2], 8-byte aligned
  uint8_t* sf = nullptr;  // device SwizzledScaleBytes(n, k/16) bytes, 4-byte aligned
};

// Returns w_gs = RN(RN(1 / amax) * 2688) (1 when the weight is all zeros; core/global_scale.h,
// the CPU quantizer's own function). Errors, each before anything
// is written: InvalidArgument for a bad shape, a null, misaligned, non-device or overlapping
// pointer, or a non-finite weight value (naming the first one in row-major order, as the CPU
// quantizer does); OutOfRange when the global scale overflows f32; FailedPrecondition while `stream`
// is being captured; Unimplemented on another device; Internal for a CUDA error. The shape,
// pointer and alignment checks make no CUDA call.
absl::StatusOr<float> QuantizeWeightNvfp4Gpu(const WeightQuantArgs& args, cudaStream_t stream);

// The checks QuantizeWeightNvfp4Gpu makes first, without any CUDA call (shape, null, alignment,
// overlap): for callers that must refuse bad arguments before they touch a device.
absl::Status ValidateWeightQuantArgs(const WeightQuantArgs& args);

}  // namespace h3

#endif  // H3_KERNELS_WEIGHT_QUANT_H_
