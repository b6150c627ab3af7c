// The command line of every tool (op, quantize_weight, sweep, probe), parsed one way:
//
//   --help, -h, --helpfull  the usage message and the tool's flags on stdout; exit status 0
//   --version               "<tool> <version>" (core/version.h); exit status 0
//   anything else wrong     "<tool>: error: <what>" naming the argument, what it must be and
//                           what it was, on stderr; exit status 2 (a usage error)
//
// Flags are the Abseil flags the tool defines (--name=value, --name value, --bool, --nobool).

#ifndef H3_HARNESS_CLI_H_
#define H3_HARNESS_CLI_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace h3 {

// Sets the flags from argv. An exit status when the tool must stop now (0 after --help or
// --version, 2 after a usage error, already reported); nullopt when it should go on.
std::optional<int> ParseToolFlags(absl::string_view tool, int argc, char** argv);

// Prints "<tool>: error: <message>" to stderr and returns `code`.
int PrintError(absl::string_view tool, int code, const absl::Status& s);

// A usage error (exit status 2) for a flag value the tool checks itself:
// "--<flag> must be <expected>, got '<given>'".
absl::Status FlagError(absl::string_view flag, absl::string_view expected, absl::string_view given);

// OK when `path`, the value of --<flag>, can be written: its folder exists and is writable, and
// an existing file there is a writable regular file. Else a usage error in FlagError's wording
// ("--json must be a file in an existing folder, got '...'"). Tools check output paths with it
// before they run, so that a bad path does not cost a whole run.
absl::Status CheckOutputPath(absl::string_view flag, const std::string& path);

}  // namespace h3

#endif  // H3_HARNESS_CLI_H_
