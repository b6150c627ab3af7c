#include "harness/user_path.h"

#include <cstdlib>
#include <filesystem>

namespace h3 {

std::string ResolveUserPath(absl::string_view path) {
  std::filesystem::path p{std::string(path)};
  if (p.is_absolute()) return p.string();
  if (const char* wd = std::getenv("BUILD_WORKING_DIRECTORY"); wd != nullptr && *wd != '\0') {
    return (std::filesystem::path(wd) / p).string();
  }
  return p.string();
}

}  // namespace h3
