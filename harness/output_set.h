// A set of output files that appears whole or not at all: the command-line tools write every
// file of a result into a temporary folder inside the output folder, then rename the files
// into place. A failure before the renames leaves the output folder as it was (a folder created
// for the call is removed again); a failed rename puts back the files it had replaced.

#ifndef H3_HARNESS_OUTPUT_SET_H_
#define H3_HARNESS_OUTPUT_SET_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace h3 {

struct OutputFile {
  std::string name;                                       // file name inside the folder
  std::function<absl::Status(const std::string&)> write;  // writes the file at the given path
};

// Writes `files` into `dir` (created, with its parents, when missing). Errors name the path and
// say what it must be: "<dir>/act_sf.npy: is a directory, expected a file (or nothing) the
// results can replace".
absl::Status WriteOutputSet(const std::string& dir, const std::vector<OutputFile>& files);

}  // namespace h3

#endif  // H3_HARNESS_OUTPUT_SET_H_
