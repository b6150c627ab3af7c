#include "harness/output_set.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"

namespace h3 {
namespace {

namespace fs = std::filesystem;

// Creates `dir` and its missing parents; *created is the outermost folder made (empty when `dir`
// existed), which is what to remove to undo it.
absl::Status MakeDir(const fs::path& dir, fs::path* created) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir.string(), ": is a file, expected a folder for the results"));
    }
    return absl::OkStatus();
  }
  fs::path outermost = dir;
  for (fs::path p = dir.parent_path(); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    outermost = p;
    if (p == p.parent_path()) break;
  }
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat(dir.string(), ": cannot create the folder: ", ec.message()));
  }
  *created = outermost;
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteOutputSet(const std::string& dir_name, const std::vector<OutputFile>& files) {
  const fs::path dir(dir_name);
  std::error_code ec;
  // Every destination must be replaceable before anything is made.
  for (const OutputFile& f : files) {
    const fs::path dst = dir / f.name;
    if (fs::is_directory(dst, ec)) {
      return absl::InvalidArgumentError(absl::StrCat(
          dst.string(), ": is a directory, expected a file (or nothing) the results can replace"));
    }
  }
  fs::path created;
  if (absl::Status s = MakeDir(dir, &created); !s.ok()) return s;
  auto undo_dir = [&] {
    if (!created.empty()) fs::remove_all(created, ec);
  };

  std::string tmpl = (dir / ".h3-output-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    const int err = errno;
    undo_dir();
    return absl::PermissionDeniedError(absl::StrCat(
        dir.string(), ": cannot create a temporary folder in it: ", std::strerror(err)));
  }
  const fs::path tmp(tmpl);
  auto fail = [&](absl::Status s) {
    fs::remove_all(tmp, ec);
    undo_dir();
    return s;
  };
  for (const OutputFile& f : files) {
    if (absl::Status s = f.write((tmp / f.name).string()); !s.ok()) return fail(std::move(s));
  }

  // Old files move aside first, so that a failed rename can put them back.
  std::vector<std::pair<fs::path, fs::path>> replaced;  // (destination, its old file in tmp)
  std::vector<fs::path> placed;
  auto roll_back = [&](absl::Status s) {
    for (const fs::path& p : placed) fs::remove(p, ec);
    for (const auto& [dst, old] : replaced) fs::rename(old, dst, ec);
    return fail(std::move(s));
  };
  for (const OutputFile& f : files) {
    const fs::path dst = dir / f.name;
    if (!fs::exists(fs::symlink_status(dst, ec))) continue;
    const fs::path old = tmp / absl::StrCat("old.", f.name);
    fs::rename(dst, old, ec);
    if (ec) {
      return roll_back(absl::PermissionDeniedError(
          absl::StrCat(dst.string(), ": cannot replace the existing file: ", ec.message())));
    }
    replaced.emplace_back(dst, old);
  }
  for (const OutputFile& f : files) {
    const fs::path dst = dir / f.name;
    fs::rename(tmp / f.name, dst, ec);
    if (ec) {
      return roll_back(absl::PermissionDeniedError(
          absl::StrCat(dst.string(), ": cannot move the written file into place: ", ec.message())));
    }
    placed.push_back(dst);
  }
  fs::remove_all(tmp, ec);
  return absl::OkStatus();
}

}  // namespace h3
