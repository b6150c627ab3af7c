// libFuzzer target for the tuning cache's reader and writer (kernels/tuning/tune_cache.h over
// nlohmann-json): any file a user's cache directory may hold. Parses the input as a cache,
// resolves kAuto for a few devices and M values, lists its rows; then records a winner over the
// input as an old file (the writer keeps what it can of it) and reads the result back, which must
// be a valid cache naming that winner. Built and run by `harness/fuzz/run.sh SECONDS tune_cache`
// with AddressSanitizer and UndefinedBehaviorSanitizer.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "kernels/tuning/tune_cache.h"

namespace {

// One scratch file per process, rewritten for every input: the writer reads and replaces paths.
const std::string& ScratchPath() {
  static const std::string* path = [] {
    const char* dir = std::getenv("H3_FUZZ_SCRATCH_DIR");
    std::string tmpl = std::string(dir != nullptr ? dir : "/tmp") + "/tune_fuzz_XXXXXX";
    const int fd = mkstemp(tmpl.data());
    if (fd < 0) std::abort();
    close(fd);
    return new std::string(tmpl);
  }();
  return *path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> warnings;
  const h3::TuneCache cache = h3::TuneCache::FromText(text, "fuzz.json", &warnings);
  const h3::TuneDevice devices[] = {{"NVIDIA H200", 9, 0, 132, 13000}, {"a", 12, 0, 170, 13000}};
  for (const h3::TuneDevice& d : devices) {
    for (int64_t m : {int64_t{0}, int64_t{1}, int64_t{128}, int64_t{1} << 31}) {
      const h3::TuneCache::Choice c = cache.Choose(d, m, 5376, 7168, "faithful", &warnings);
      if (h3::FindOutProjTile(c.tile) == nullptr || c.tile == h3::OutProjTile::kAuto) std::abort();
    }
  }
  for (const h3::TuneCache::Row& row : cache.Rows()) {
    if (row.device_key.empty() || row.m < 0 || row.m > h3::kTuneMaxBucketM) std::abort();
  }

  const std::string& path = ScratchPath();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  if (!h3::RecordTuneWinners(path, devices[0], 5376, 7168, "faithful", {{300, "128x128", 0.5}})
           .ok()) {
    std::abort();
  }
  warnings.clear();
  const h3::TuneCache back = h3::TuneCache::FromFile(path, &warnings);
  const h3::TuneCache::Choice c = back.Choose(devices[0], 300, 5376, 7168, "faithful", &warnings);
  if (!warnings.empty() || !c.tuned || c.tile != h3::OutProjTile::k128x128) std::abort();
  return 0;
}
