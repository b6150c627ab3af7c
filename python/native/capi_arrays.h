#ifndef H3_PYTHON_NATIVE_CAPI_ARRAYS_H_
#define H3_PYTHON_NATIVE_CAPI_ARRAYS_H_

// What the C ABI's entry points say about an H3Array in their messages (capi.h: at most 4-D).

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "python/native/capi.h"

namespace h3::capi {

// "[2, 3]", or "a 7-D array" for a rank the C ABI does not take.
inline std::string ShapeStr(const H3Array& a) {
  if (a.ndim < 0 || a.ndim > 4) return absl::StrFormat("a %d-D array", a.ndim);
  return absl::StrCat("[", absl::StrJoin(absl::MakeConstSpan(a.shape, a.ndim), ", "), "]");
}

// The element count over the first min(ndim, 4) dimensions.
inline int64_t Numel(const H3Array& a) {
  int64_t n = 1;
  for (int64_t i = 0; i < a.ndim && i < 4; ++i) n *= a.shape[i];
  return n;
}

// Whether `a` is exactly of shape `want` (rank included).
inline bool HasShape(const H3Array& a, std::initializer_list<int64_t> want) {
  if (a.ndim != static_cast<int64_t>(want.size())) return false;
  int i = 0;
  for (int64_t w : want) {
    if (a.shape[i++] != w) return false;
  }
  return true;
}

}  // namespace h3::capi

#endif  // H3_PYTHON_NATIVE_CAPI_ARRAYS_H_
