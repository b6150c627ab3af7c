#include "harness/int_list_flag.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace h3 {

absl::StatusOr<std::vector<int64_t>> ParseIntListFlag(absl::string_view flag_name,
                                                      const std::vector<std::string>& tokens,
                                                      int64_t min_value) {
  std::vector<int64_t> values;
  values.reserve(tokens.size());
  for (const std::string& token : tokens) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(token, &v) || v < min_value) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag_name,
                                                     " must be comma-separated integers >= ",
                                                     min_value, ", got '", token, "'"));
    }
    values.push_back(v);
  }
  return values;
}

}  // namespace h3
