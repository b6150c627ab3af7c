#ifndef H3_CORE_ALIASING_H_
#define H3_CORE_ALIASING_H_

// The contract's aliasing rule (docs/contract.md section 9), once for every backend: the op's
// outputs (out, act_q, act_sf and any workspace) overlap neither each other nor any input, except
// that out may be exactly residual (the in-place update). Addresses are compared as numbers, so
// host and device buffers are checked alike.

#include <cstdint>
#include <vector>

#include "absl/status/status.h"

namespace h3 {

struct ByteRange {
  const char* name;
  uintptr_t begin = 0, end = 0;  // [begin, end); empty for a null pointer
};

// `bytes` from `p`; a null pointer is an empty range (absent optional buffers never overlap).
ByteRange RangeOf(const char* name, const void* p, int64_t bytes);

// OK, or InvalidArgument("minimax_h3_nvfp4_out_proj: <output> must not overlap <other>, got
// [..) and [..)") for the first offending pair. The input named "residual" may equal outputs[0]
// (out) exactly when `out_is_residual`.
absl::Status CheckAliasing(const std::vector<ByteRange>& inputs,
                           const std::vector<ByteRange>& outputs, bool out_is_residual);

}  // namespace h3

#endif  // H3_CORE_ALIASING_H_
