#include "python/native/last_error.h"

#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "python/native/capi.h"

namespace h3::capi {
namespace {
thread_local std::string g_last_error;
}  // namespace

int32_t Fail(const absl::Status& s, const char* function) {
  std::string msg(s.message());
  if (!absl::StartsWith(msg, function)) msg = absl::StrCat(function, ": ", msg);
  g_last_error = std::move(msg);
  return static_cast<int32_t>(s.code());
}

int32_t Done(const absl::Status& s, const char* function) {
  if (s.ok()) {
    g_last_error.clear();
    return H3_OK;
  }
  return Fail(s, function);
}

const char* LastError() { return g_last_error.c_str(); }

}  // namespace h3::capi
