#include "harness/cli.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/version.h"

namespace h3 {
namespace {

// Abseil's own flags (--flagfile, --fromenv, ...) are not the tool's: they would be accepted
// and then do nothing, since this parser does not implement them.
bool IsToolFlag(const absl::CommandLineFlag& f) {
  return !f.IsRetired() && !absl::StrContains(f.Filename(), "absl/flags/");
}

std::vector<const absl::CommandLineFlag*> ToolFlags() {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, f] : absl::GetAllFlags()) {
    if (IsToolFlag(*f)) flags.push_back(f);
  }
  std::sort(flags.begin(), flags.end(),
            [](const auto* a, const auto* b) { return a->Name() < b->Name(); });
  return flags;
}

void PrintHelp(absl::string_view tool) {
  std::string text = absl::StrCat(absl::ProgramUsageMessage(), "\n\nFlags:\n");
  for (const absl::CommandLineFlag* f : ToolFlags()) {
    absl::StrAppend(&text, "  --", f->Name(), " (default: '", f->DefaultValue(), "')\n      ",
                    f->Help(), "\n");
  }
  absl::StrAppend(&text, "  --help\n      this text\n  --version\n      prints '", tool, " ",
                  kVersion, "'\n");
  std::fputs(text.c_str(), stdout);
}

template <typename T>
std::string IntegerRange() {
  return absl::StrCat("an integer from ", std::numeric_limits<T>::min(), " to ",
                      std::numeric_limits<T>::max());
}

// What a value of the flag's type must be, for flags whose type absl parses itself: its own
// message ("Illegal value '-1' specified for flag 'seed'") does not say what is allowed. Other
// types keep their parser's message (`error`).
std::string ExpectedValue(const absl::CommandLineFlag& f, const std::string& error) {
  if (f.IsOfType<bool>()) return "true or false";
  if (f.IsOfType<int32_t>()) return IntegerRange<int32_t>();
  if (f.IsOfType<int64_t>()) return IntegerRange<int64_t>();
  if (f.IsOfType<uint32_t>()) return IntegerRange<uint32_t>();
  if (f.IsOfType<uint64_t>()) return IntegerRange<uint64_t>();
  if (f.IsOfType<double>() || f.IsOfType<float>()) return "a number";
  return absl::StrCat("a valid value (", error, ")");
}

int UsageError(absl::string_view tool, const std::string& what) {
  std::fprintf(stderr, "%s: error: %s (see --help)\n", std::string(tool).c_str(), what.c_str());
  return 2;
}

}  // namespace

std::optional<int> ParseToolFlags(absl::string_view tool, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") {
      if (i + 1 < argc)
        return UsageError(tool, absl::StrCat("unexpected argument '", argv[i + 1],
                                             "': the tool takes flags only"));
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      return UsageError(tool,
                        absl::StrCat("unexpected argument '", arg, "': the tool takes flags only"));
    }
    absl::string_view body = arg.substr(arg[1] == '-' ? 2 : 1);
    const size_t eq = body.find('=');
    const absl::string_view name = body.substr(0, eq);
    const bool has_value = eq != absl::string_view::npos;
    if (name == "help" || name == "h" || name == "helpfull" || name == "helpshort") {
      PrintHelp(tool);
      return 0;
    }
    if (name == "version") {
      std::printf("%s %s\n", std::string(tool).c_str(), kVersion);
      return 0;
    }
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    std::string value;
    if ((flag == nullptr || !IsToolFlag(*flag)) && absl::StartsWith(name, "no") && !has_value) {
      // --nofull: a boolean flag set to false.
      absl::CommandLineFlag* positive = absl::FindCommandLineFlag(name.substr(2));
      if (positive != nullptr && IsToolFlag(*positive) && positive->IsOfType<bool>()) {
        flag = positive;
        value = "false";
      }
    }
    if (flag == nullptr || !IsToolFlag(*flag)) {
      return UsageError(tool, absl::StrCat("unknown flag '", arg, "'"));
    }
    if (has_value) {
      value = std::string(body.substr(eq + 1));
    } else if (value.empty()) {
      if (flag->IsOfType<bool>()) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return UsageError(tool, absl::StrCat("--", name, " must be given a value, got none"));
      }
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return UsageError(
          tool, std::string(FlagError(flag->Name(), ExpectedValue(*flag, error), value).message()));
    }
  }
  return std::nullopt;
}

int PrintError(absl::string_view tool, int code, const absl::Status& s) {
  std::fprintf(stderr, "%s: error: %s\n", std::string(tool).c_str(),
               std::string(s.message()).c_str());
  return code;
}

absl::Status FlagError(absl::string_view flag, absl::string_view expected,
                       absl::string_view given) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, " must be ", expected, ", got '", given, "'"));
}

absl::Status CheckOutputPath(absl::string_view flag, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag,
                                                   " must be a file in an existing folder, got '",
                                                   path, "' (no folder '", dir.string(), "')"));
  }
  if (fs::exists(p, ec)) {
    if (!fs::is_regular_file(p, ec) || access(path.c_str(), W_OK) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, " must be a writable file, got '",
                                                     path, "' (exists and is not one)"));
    }
  } else if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " must be in a writable folder, got '", path,
                     "' (cannot write to '", dir.string(), "': ", std::strerror(errno), ")"));
  }
  return absl::OkStatus();
}

}  // namespace h3
