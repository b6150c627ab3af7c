#ifndef H3_HARNESS_INT_LIST_FLAG_H_
#define H3_HARNESS_INT_LIST_FLAG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace h3 {

// The integers of a comma-separated list flag such as --bench_m=4096,16384, from its tokens (an
// absl std::vector<std::string> flag splits at the commas), each at least `min_value`. On a
// token that is not such an integer (an empty one included), InvalidArgument naming the flag,
// what it expects and the token (harness/cli.h's wording): "--bench_m must be comma-separated
// integers >= 1, got 'x'".
absl::StatusOr<std::vector<int64_t>> ParseIntListFlag(absl::string_view flag_name,
                                                      const std::vector<std::string>& tokens,
                                                      int64_t min_value);

}  // namespace h3

#endif  // H3_HARNESS_INT_LIST_FLAG_H_
