#ifndef H3_CORE_GLOBAL_SCALE_H_
#define H3_CORE_GLOBAL_SCALE_H_

// The contract's rule for a global scale (docs/contract.md section 9: act_gs and w_gs must be
// finite and > 0), checked with one wording by every backend that checks it; and the weight
// quantizer's global scale from amax (section 5), computed here once for the CPU and GPU
// quantizers so they cannot disagree.

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace h3 {

// OK, or InvalidArgument "<name> must be a finite value > 0, got <v> (bits 0x<hex>)" (the bits
// tell -0 and the NaN payloads apart).
absl::Status CheckGlobalScale(absl::string_view name, float v);

// w_gs = RN(RN(1 / amax) * 2688) (contract section 5): the reciprocal rounded to f32 first
// (subnormal kept), then the product, as PyTorch evaluates FlashInfer's `(448 * 6) / amax`; it
// differs from RN(2688 / amax) by 1 ulp for about 28% of amax. 1 when amax == 0.
// InvalidArgument when amax is not finite or < 0 (a caller's bug: amax is a max of |w|);
// OutOfRange "weight: amax = <a> makes the global scale 2688/amax overflow f32" when the product
// is +Inf (amax < 2688 / FLT_MAX, the same set for either rounding).
absl::StatusOr<float> WeightGlobalScale(float amax);

}  // namespace h3

#endif  // H3_CORE_GLOBAL_SCALE_H_
