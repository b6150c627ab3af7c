#include "core/shape.h"

#include "absl/strings/str_format.h"

namespace h3 {

absl::Status ValidateShape(const OpShape& s) {
  if (s.m < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("shape.m (the rows M of attn_out [M, K]) must be >= 0, got %d", s.m));
  }
  if (s.n < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("shape.n (the rows N of o_weight_q [N, K/2]) must be >= 1, got %d", s.n));
  }
  if (s.k <= 0 || s.k % kMmaK != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("shape.k (the columns K of attn_out [M, K]) must be a positive "
                        "multiple of 64, got %d",
                        s.k));
  }
  if (s.g < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("shape.g (the rows G of gate [G, N]) must be >= 1, got %d", s.g));
  }
  return absl::OkStatus();
}

}  // namespace h3
