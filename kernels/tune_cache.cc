#include "kernels/tune_cache.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/json.h"

namespace h3 {
namespace {

constexpr char kIgnored[] = "; ignored, tile auto uses the built-in heuristic";

std::string Quoted(absl::string_view s) { return WriteJson(JsonValue::String(std::string(s))); }

// Python's tuning.Cache._parse: the usable entries of this library version, or an error naming
// what makes the document no cache at all.
absl::Status Parse(
    const JsonValue& doc, absl::string_view library_version,
    std::map<std::string, std::map<std::string, std::vector<std::pair<int64_t, std::string>>>>*
        entries,
    std::set<std::string>* foreign) {
  const JsonValue* format = doc.Find("format");
  if (format == nullptr || format->kind != JsonValue::Kind::kString ||
      format->text != kTuneCacheFormat) {
    return absl::InvalidArgumentError(
        absl::StrCat("format must be ", Quoted(kTuneCacheFormat), ", got ",
                     doc.kind != JsonValue::Kind::kObject ? doc.TypeName()
                     : format == nullptr                  ? "none"
                                                          : WriteJson(*format).substr(0, 80)));
  }
  const JsonValue* devices = doc.Find("devices");
  if (devices == nullptr || devices->kind != JsonValue::Kind::kObject) {
    return absl::InvalidArgumentError(absl::StrCat(
        "devices must be an object, got ", devices == nullptr ? "none" : devices->TypeName()));
  }
  for (const auto& [key, dev] : devices->object) {
    const JsonValue* version = dev.Find("library_version");
    if (dev.kind != JsonValue::Kind::kObject || version == nullptr ||
        version->kind != JsonValue::Kind::kString) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", Quoted(key), " must be an object with a library_version string"));
    }
    if (version->text != library_version) {
      foreign->insert(version->text);
      continue;
    }
    const JsonValue* shapes = dev.Find("shapes");
    if (shapes == nullptr || shapes->kind != JsonValue::Kind::kObject) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", Quoted(key), ": shapes must be an object"));
    }
    auto& out = (*entries)[key];
    for (const auto& [skey, table] : shapes->object) {
      const JsonValue* rows = table.Find("buckets");
      if (rows == nullptr || rows->kind != JsonValue::Kind::kArray) {
        return absl::InvalidArgumentError(
            absl::StrCat("shape ", Quoted(skey), ": buckets must be an array"));
      }
      std::map<int64_t, std::string> buckets;  // a repeated m: the last row wins, as in Python
      for (const JsonValue& row : rows->array) {
        const JsonValue* m = row.Find("m");
        const JsonValue* tile = row.Find("tile");
        int64_t mv = 0;
        if (m == nullptr || !m->AsInt64(&mv) || mv < 1 || mv > kTuneMaxBucketM || tile == nullptr ||
            tile->kind != JsonValue::Kind::kString) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "shape %s: a bucket must have an integer m in [1, %d] and a tile name, got %s",
              Quoted(skey), kTuneMaxBucketM, WriteJson(row).substr(0, 120)));
        }
        buckets[mv] = tile->text;
      }
      if (!buckets.empty()) out[skey].assign(buckets.begin(), buckets.end());
    }
  }
  return absl::OkStatus();
}

std::string RegistryNames() {
  std::vector<std::string> names = {"auto"};
  for (const OutProjTileInfo& t : kOutProjTiles) names.push_back(t.name);
  return absl::StrJoin(names, ", ");
}

}  // namespace

std::string TuneCachePath() {
  const char* env = std::getenv(kTuneCacheEnv);
  if (env != nullptr && env[0] != '\0') return env;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  std::string base;
  if (xdg != nullptr && xdg[0] != '\0') {
    base = xdg;
  } else {
    const char* home = std::getenv("HOME");
    if (home == nullptr || home[0] == '\0') return "";
    base = absl::StrCat(home, "/.cache");
  }
  return absl::StrCat(base, "/minimax_h3_nvfp4/tune.json");
}

std::string TuneDeviceKey(const TuneDevice& d, absl::string_view library_version) {
  return absl::StrFormat("%s | sm_%d%d | %d SMs | driver %d | minimax_h3_nvfp4 %s", d.name, d.major,
                         d.minor, d.sm_count, d.driver_version, library_version);
}

const char* TuneVariant(int major, bool sm90_fast) {
  if (major != 9) return "native";
  return sm90_fast ? "fast" : "faithful";
}

std::string TuneShapeKey(int64_t n, int64_t k, absl::string_view variant) {
  return absl::StrFormat("n=%d k=%d %s", n, k, variant);
}

OutProjTile TuneHeuristic(int major, int64_t m) {
  if (major == 12 && m <= kTuneHeuristicSmallM) return OutProjTile::k128x128;
  return kOutProjTileDefault;
}

int64_t NearestTuneBucket(const std::vector<int64_t>& sorted, int64_t m) {
  // The same doubles as Python's math.log2 (both call the C library's log2).
  const double lm = std::log2(static_cast<double>(std::max<int64_t>(m, 1)));
  int64_t best = sorted.front();
  for (int64_t b : sorted) {
    if (std::fabs(std::log2(static_cast<double>(b)) - lm) <
        std::fabs(std::log2(static_cast<double>(best)) - lm)) {
      best = b;
    }
  }
  return best;
}

const OutProjTileInfo* FindOutProjTileByName(absl::string_view name) {
  if (name == "auto") return FindOutProjTile(OutProjTile::kAuto);
  for (const OutProjTileInfo& t : kOutProjTiles) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

TuneCache TuneCache::FromText(absl::string_view text, absl::string_view path,
                              std::vector<std::string>* warnings,
                              absl::string_view library_version) {
  TuneCache cache;
  cache.path_ = std::string(path);
  cache.library_version_ = std::string(library_version);
  absl::StatusOr<JsonValue> doc = ParseJson(text);
  std::set<std::string> foreign;
  absl::Status s =
      doc.ok() ? Parse(*doc, library_version, &cache.entries_, &foreign) : doc.status();
  if (!s.ok()) {
    cache.entries_.clear();
    warnings->push_back(absl::StrCat("the tuning cache ", path, " is not a valid cache (",
                                     s.message(), ")", kIgnored,
                                     " (rerun `python -m minimax_h3_nvfp4 tune` or delete it)"));
    return cache;
  }
  if (!foreign.empty()) {
    warnings->push_back(
        absl::StrCat("the tuning cache ", path, " holds entries of minimax_h3_nvfp4 ",
                     absl::StrJoin(foreign, ", "), ", not this version (", library_version,
                     "); those are ignored (rerun `python -m minimax_h3_nvfp4 "
                     "tune`)"));
  }
  return cache;
}

TuneCache TuneCache::FromFile(const std::string& path, std::vector<std::string>* warnings,
                              absl::string_view library_version) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    TuneCache cache;
    cache.path_ = path;
    cache.library_version_ = std::string(library_version);
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) {
      warnings->push_back(absl::StrCat("the tuning cache ", path, " cannot be read (",
                                       std::strerror(errno), ")", kIgnored));
    }
    return cache;
  }
  // In pieces, to at most one byte past the parser's limit: a larger file is refused by it,
  // not read whole.
  std::string text;
  char piece[4096];
  while (text.size() <= kJsonMaxBytes && f.read(piece, sizeof(piece)).gcount() > 0) {
    text.append(piece, static_cast<size_t>(f.gcount()));
  }
  if (text.size() > kJsonMaxBytes + 1) text.resize(kJsonMaxBytes + 1);
  return FromText(text, path, warnings, library_version);
}

TuneCache::Choice TuneCache::Choose(const TuneDevice& device, int64_t m, int64_t n, int64_t k,
                                    absl::string_view variant,
                                    std::vector<std::string>* warnings) const {
  const Choice heuristic{TuneHeuristic(device.major, m), false};
  const std::string key = TuneDeviceKey(device, library_version_);
  auto dev = entries_.find(key);
  if (dev == entries_.end()) {
    if (!entries_.empty()) {
      std::vector<std::string> keys;
      for (const auto& [k2, unused] : entries_) keys.push_back(k2);
      warnings->push_back(absl::StrCat(
          "the tuning cache ", path_, " has no entry for this device (", key,
          "; it holds: ", absl::StrJoin(keys, "; "), "); tile auto uses the built-in heuristic"));
    }
    return heuristic;
  }
  auto shape = dev->second.find(TuneShapeKey(n, k, variant));
  if (shape == dev->second.end()) return heuristic;
  std::vector<int64_t> ms;
  for (const auto& [bm, unused] : shape->second) ms.push_back(bm);
  const int64_t bucket = NearestTuneBucket(ms, m);
  const std::string& name =
      std::find_if(shape->second.begin(), shape->second.end(), [bucket](const auto& row) {
        return row.first == bucket;
      })->second;
  const OutProjTileInfo* info = FindOutProjTileByName(name);
  if (info == nullptr) {
    warnings->push_back(absl::StrCat("the tuning cache ", path_, " names tile ", Quoted(name),
                                     ", which this library does not have (it has: ",
                                     RegistryNames(), "); the heuristic decides instead"));
    return heuristic;
  }
  return Choice{info->tile, true};
}

absl::Status RecordTuneWinners(const std::string& path, const TuneDevice& device, int64_t n,
                               int64_t k, absl::string_view variant,
                               const std::vector<TuneWinner>& winners,
                               absl::string_view library_version) {
  auto fail = [&path](absl::string_view what) {
    return absl::InternalError(absl::StrCat("writing the tuning cache ", path, ": ", what));
  };
  if (path.empty()) {
    return absl::InvalidArgumentError(
        "the tuning cache path must be a file name, got \"\" (set MINIMAX_H3_NVFP4_TUNE_CACHE, "
        "XDG_CACHE_HOME or HOME)");
  }
  for (const TuneWinner& w : winners) {
    if (w.m < 1 || w.m > kTuneMaxBucketM || FindOutProjTileByName(w.tile) == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "a tuned bucket must have m in [1, %d] and a registered tile (%s), got m=%d tile=%s",
          kTuneMaxBucketM, RegistryNames(), w.m, Quoted(w.tile)));
    }
  }
  // The old file's devices of this library version are kept (as they are); anything else goes.
  JsonValue doc = JsonValue::Object();
  doc.Set("format") = JsonValue::String(kTuneCacheFormat);
  JsonValue& devices = doc.Set("devices");
  devices = JsonValue::Object();
  {
    std::ifstream f(path, std::ios::binary);
    if (f) {
      std::ostringstream text;
      text << f.rdbuf();
      absl::StatusOr<JsonValue> old = ParseJson(text.str());
      const JsonValue* format = old.ok() ? old->Find("format") : nullptr;
      const JsonValue* old_devices = old.ok() ? old->Find("devices") : nullptr;
      if (format != nullptr && format->kind == JsonValue::Kind::kString &&
          format->text == kTuneCacheFormat && old_devices != nullptr) {
        for (const auto& [key, dev] : old_devices->object) {
          const JsonValue* v = dev.Find("library_version");
          if (v != nullptr && v->kind == JsonValue::Kind::kString && v->text == library_version) {
            devices.Set(key) = dev;
          }
        }
      }
    }
  }
  JsonValue& dev = devices.Set(TuneDeviceKey(device, library_version));
  const JsonValue* old_shapes = dev.Find("shapes");
  if (dev.kind != JsonValue::Kind::kObject || old_shapes == nullptr ||
      old_shapes->kind != JsonValue::Kind::kObject) {
    dev = JsonValue::Object();
    JsonValue& d = dev.Set("device");
    d = JsonValue::Object();
    d.Set("name") = JsonValue::String(device.name);
    d.Set("compute_capability") =
        JsonValue::String(absl::StrFormat("%d.%d", device.major, device.minor));
    d.Set("sm_count") = JsonValue::Integer(device.sm_count);
    d.Set("driver_version") = JsonValue::Integer(device.driver_version);
    dev.Set("library_version") = JsonValue::String(std::string(library_version));
    dev.Set("shapes") = JsonValue::Object();
  }
  JsonValue rows = JsonValue::Array();
  std::vector<TuneWinner> sorted = winners;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const TuneWinner& a, const TuneWinner& b) { return a.m < b.m; });
  for (const TuneWinner& w : sorted) {
    JsonValue row = JsonValue::Object();
    row.Set("m") = JsonValue::Integer(w.m);
    row.Set("tile") = JsonValue::String(w.tile);
    if (std::isfinite(w.median_ms) && w.median_ms >= 0) {
      row.Set("median_ms") = JsonValue::Number(w.median_ms);
    }
    rows.array.push_back(std::move(row));
  }
  JsonValue table = JsonValue::Object();
  table.Set("buckets") = std::move(rows);
  dev.Set("shapes").Set(TuneShapeKey(n, k, variant)) = std::move(table);

  std::error_code ec;
  const std::filesystem::path target = std::filesystem::absolute(path, ec);
  if (ec) return fail(ec.message());
  std::filesystem::create_directories(target.parent_path(), ec);
  if (ec) return fail(absl::StrCat("creating its folder: ", ec.message()));
  std::string tmp = (target.parent_path() / ".tune-XXXXXX.json").string();
  const int fd = mkstemps(tmp.data(), 5);
  if (fd < 0) return fail(absl::StrCat("creating a temporary file: ", std::strerror(errno)));
  const std::string text = WriteJson(doc) + "\n";
  FILE* out = fdopen(fd, "w");
  bool ok = out != nullptr && std::fwrite(text.data(), 1, text.size(), out) == text.size();
  const int saved = errno;
  if (out != nullptr) {
    ok = std::fclose(out) == 0 && ok;
  } else {
    close(fd);
  }
  if (!ok || std::rename(tmp.c_str(), target.c_str()) != 0) {
    const std::string why = std::strerror(ok ? errno : saved);
    std::remove(tmp.c_str());
    return fail(why);
  }
  return absl::OkStatus();
}

}  // namespace h3
