// libFuzzer target for the tuning cache's reader (kernels/tune_cache.h over core/json.h): any
// file a user's cache directory may hold. Parses the input as a cache, resolves kAuto for a few
// devices and M values, and round-trips whatever parses as JSON through the writer. Built and run
// by `harness/fuzz/run.sh SECONDS tune_cache` with AddressSanitizer and UndefinedBehaviorSanitizer.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/json.h"
#include "kernels/tune_cache.h"

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
  absl::StatusOr<h3::JsonValue> v = h3::ParseJson(text);
  if (v.ok()) {
    // What the writer makes of a parsed value must parse, and write the same again.
    const std::string once = h3::WriteJson(*v);
    absl::StatusOr<h3::JsonValue> again = h3::ParseJson(once);
    if (!again.ok() || h3::WriteJson(*again) != once) std::abort();
  }
  return 0;
}
