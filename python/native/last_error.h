#ifndef H3_PYTHON_NATIVE_LAST_ERROR_H_
#define H3_PYTHON_NATIVE_LAST_ERROR_H_

// The C ABI's error reporting (capi.h): a status becomes a return code, and its message the
// calling thread's h3_last_error(). Shared by the translation units of the C ABI.

#include <cstdint>

#include "absl/status/status.h"

namespace h3::capi {

// Records a failed status for h3_last_error (prefixed with `function` when the message does not
// start with it) and returns its code.
int32_t Fail(const absl::Status& s, const char* function = "minimax_h3_nvfp4_out_proj");

// H3_OK (clearing the last error) for an OK status, else Fail(s, function).
int32_t Done(const absl::Status& s, const char* function = "minimax_h3_nvfp4_out_proj");

// This thread's last message ("" after a success).
const char* LastError();

}  // namespace h3::capi

#endif  // H3_PYTHON_NATIVE_LAST_ERROR_H_
