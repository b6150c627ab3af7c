#ifndef H3_CORE_GLOBAL_SCALE_H_
#define H3_CORE_GLOBAL_SCALE_H_

// The contract's rule for a global scale (docs/contract.md section 9: act_gs and w_gs must be
// finite and > 0), checked with one wording by every backend that checks it.

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace h3 {

// OK, or InvalidArgument "<name> must be a finite value > 0, got <v> (bits 0x<hex>)" (the bits
// tell -0 and the NaN payloads apart).
absl::Status CheckGlobalScale(absl::string_view name, float v);

}  // namespace h3

#endif  // H3_CORE_GLOBAL_SCALE_H_
