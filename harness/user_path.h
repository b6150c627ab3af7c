#ifndef H3_HARNESS_USER_PATH_H_
#define H3_HARNESS_USER_PATH_H_

#include <string>

#include "absl/strings/string_view.h"

namespace h3 {

// A path as the user typed it: relative paths are relative to the folder the
// command was started in, which under `bazel run` is $BUILD_WORKING_DIRECTORY
// (the binary itself runs in its runfiles tree).
std::string ResolveUserPath(absl::string_view path);

}  // namespace h3

#endif  // H3_HARNESS_USER_PATH_H_
