#include "kernels/tuning/tune_cache.h"

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
#include <nlohmann/json.hpp>
#include <system_error>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kernels/device/target_facts.h"

namespace h3 {
namespace {

// Sorted keys (std::map): the writer's order is the file's order.
using Json = nlohmann::json;

constexpr char kIgnored[] = "; ignored, tile auto uses the built-in heuristic";

// ASCII only (Python's ensure_ascii), and never throws: a string that is not UTF-8 gets U+FFFD
// (the writer refuses such names before they get here).
std::string Dump(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', /*ensure_ascii=*/true, Json::error_handler_t::replace);
}

std::string Quoted(absl::string_view s) { return Dump(Json(std::string(s))); }

// Valid UTF-8 exactly when nlohmann's writer has no byte to replace or to drop.
bool IsUtf8(absl::string_view s) {
  const Json j = std::string(s);
  return Dump(j) == j.dump(-1, ' ', true, Json::error_handler_t::ignore);
}

// A first pass over the text that builds nothing: it bounds the nesting (nlohmann's parser does
// not) and keeps the parser's error, which the non-throwing Json::parse drops.
class Checker final : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool key(string_t&) override { return true; }
  bool start_object(std::size_t) override { return Enter(); }
  bool start_array(std::size_t) override { return Enter(); }
  bool end_object() override { return --depth_, true; }
  bool end_array() override { return --depth_, true; }
  bool parse_error(std::size_t position, const std::string&, const Json::exception& e) override {
    // "[json.exception.parse_error.101] parse error at line 1, column 5: <what>; last read:
    // '<raw bytes>'" (or "[json.exception.out_of_range.406] <what>"): <what> is kept.
    std::string what = e.what();
    if (const size_t at = what.find("] "); at != std::string::npos) what.erase(0, at + 2);
    if (absl::StartsWith(what, "parse error at ")) what.erase(0, what.find(": ") + 2);
    what.resize(std::min(what.size(), what.find("; last read")));
    error = absl::StrFormat("invalid JSON at byte %d: %s", position > 0 ? position - 1 : 0, what);
    return false;
  }

  std::string error;  // "" while the text is valid

 private:
  bool Enter() {
    if (++depth_ <= kTuneCacheMaxDepth) return true;
    error = absl::StrFormat("invalid JSON: nested deeper than %d levels", kTuneCacheMaxDepth);
    return false;
  }
  int depth_ = 0;
};

// The JSON value of a cache file's text, or why it has none.
absl::StatusOr<Json> ParseText(absl::string_view text) {
  if (text.size() > kTuneCacheMaxBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "invalid JSON: more than %d bytes (the reader's limit)", kTuneCacheMaxBytes));
  }
  // nlohmann skips a byte order mark; json.loads, the format's first reader, refuses it.
  if (absl::StartsWith(text, "\xef\xbb\xbf")) {
    return absl::InvalidArgumentError("invalid JSON at byte 0: a UTF-8 byte order mark");
  }
  const char* end = text.data() + text.size();
  Checker checker;
  if (!Json::sax_parse(text.data(), end, &checker) || !checker.error.empty()) {
    return absl::InvalidArgumentError(checker.error.empty() ? "invalid JSON" : checker.error);
  }
  Json doc = Json::parse(text.data(), end, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::InvalidArgumentError("invalid JSON");
  return doc;
}

// The text of a file, at most one byte past the reader's limit (a larger file is refused, not
// read whole); nullopt when it cannot be opened.
std::optional<std::string> ReadBounded(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::string text(kTuneCacheMaxBytes + 1, '\0');
  f.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(f.gcount()));
  return text;
}

// The member `key` of an object, or nullptr (also when `j` is not an object).
const Json* Member(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

// The text of a string member, or nullptr (no member, or not a string).
const std::string* StringMember(const Json& j, const char* key) {
  const Json* v = Member(j, key);
  return v != nullptr && v->is_string() ? v->get_ptr<const std::string*>() : nullptr;
}

// A JSON integer in [1, kTuneMaxBucketM] (not a float, not a bool), or 0.
int64_t BucketM(const Json* m) {
  if (m == nullptr || !m->is_number_integer()) return 0;
  if (m->is_number_unsigned()) {
    const uint64_t u = m->get<uint64_t>();
    return u <= static_cast<uint64_t>(kTuneMaxBucketM) ? static_cast<int64_t>(u) : 0;
  }
  const int64_t v = m->get<int64_t>();
  return v >= 1 && v <= kTuneMaxBucketM ? v : 0;
}

// The shapes of the device entry `key` of this library version, or an error naming what is wrong
// with them (the writer keeps an old entry only where this finds nothing).
absl::Status ParseShapes(const std::string& key, const Json& dev,
                         TuneCache::Entries::mapped_type* out) {
  const Json* shapes = Member(dev, "shapes");
  if (shapes == nullptr || !shapes->is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("device ", Quoted(key), ": shapes must be an object"));
  }
  for (const auto& [skey, table] : shapes->items()) {
    const Json* rows = Member(table, "buckets");
    if (rows == nullptr || !rows->is_array()) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", Quoted(skey), ": buckets must be an array"));
    }
    std::map<int64_t, std::string> buckets;  // a repeated m: the last row wins
    for (const Json& row : *rows) {
      const int64_t m = BucketM(Member(row, "m"));
      const std::string* tile = StringMember(row, "tile");
      if (m == 0 || tile == nullptr) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "shape %s: a bucket must have an integer m in [1, %d] and a tile name, got %s",
            Quoted(skey), kTuneMaxBucketM, Dump(row).substr(0, 120)));
      }
      buckets[m] = *tile;
    }
    if (!buckets.empty()) (*out)[skey].assign(buckets.begin(), buckets.end());
  }
  return absl::OkStatus();
}

// The usable entries of this library version, or an error naming what makes the document no
// cache at all (in the order the format's first reader, Python's, checked).
absl::Status Parse(const Json& doc, absl::string_view library_version, TuneCache::Entries* entries,
                   std::set<std::string>* foreign) {
  const std::string* format = StringMember(doc, "format");
  if (format == nullptr || *format != kTuneCacheFormat) {
    const Json* got = Member(doc, "format");
    return absl::InvalidArgumentError(absl::StrCat("format must be ", Quoted(kTuneCacheFormat),
                                                   ", got ",
                                                   !doc.is_object() ? doc.type_name()
                                                   : got == nullptr ? "none"
                                                                    : Dump(*got).substr(0, 80)));
  }
  const Json* devices = Member(doc, "devices");
  if (devices == nullptr || !devices->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "devices must be an object, got ", devices == nullptr ? "none" : devices->type_name()));
  }
  for (const auto& [key, dev] : devices->items()) {
    const std::string* version = StringMember(dev, "library_version");
    if (version == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", Quoted(key), " must be an object with a library_version string"));
    }
    if (*version != library_version) {
      foreign->insert(*version);
      continue;
    }
    if (absl::Status s = ParseShapes(key, dev, &(*entries)[key]); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::string RegistryNames() {
  std::vector<std::string> names = {"auto"};
  for (const OutProjTileInfo& t : kOutProjTiles) names.push_back(t.name);
  return absl::StrJoin(names, ", ");
}

// Writes `text` to a temporary file beside `path`, then renames it over `path`.
absl::Status WriteAtomically(const std::string& path, const std::string& text) {
  auto fail = [&path](absl::string_view what) {
    return absl::InternalError(absl::StrCat("writing the tuning cache ", path, ": ", what));
  };
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::absolute(path, ec);
  if (ec) return fail(ec.message());
  std::filesystem::create_directories(target.parent_path(), ec);
  if (ec) return fail(absl::StrCat("creating its folder: ", ec.message()));
  std::string tmp = (target.parent_path() / ".tune-XXXXXX.json").string();
  const int fd = mkstemps(tmp.data(), 5);
  if (fd < 0) return fail(absl::StrCat("creating a temporary file: ", std::strerror(errno)));
  // One write: a regular file takes the whole text or fails.
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int saved = errno;
  ok = close(fd) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), target.c_str()) != 0) {
    const std::string why = std::strerror(ok ? errno : saved);
    std::remove(tmp.c_str());
    return fail(why);
  }
  return absl::OkStatus();
}

}  // namespace

std::string TuneCachePath() {
  auto set = [](const char* name) -> const char* {  // an empty variable counts as unset
    const char* v = std::getenv(name);
    return v != nullptr && v[0] != '\0' ? v : nullptr;
  };
  if (const char* env = set(kTuneCacheEnv)) return env;
  if (const char* xdg = set("XDG_CACHE_HOME"))
    return absl::StrCat(xdg, "/minimax_h3_nvfp4/tune.json");
  if (const char* home = set("HOME"))
    return absl::StrCat(home, "/.cache/minimax_h3_nvfp4/tune.json");
  return "";
}

std::string TuneDeviceKey(const TuneDevice& d, absl::string_view library_version) {
  return absl::StrFormat("%s | sm_%d%d | %d SMs | driver %d | minimax_h3_nvfp4 %s", d.name, d.major,
                         d.minor, d.sm_count, d.driver_version, library_version);
}

namespace {

// The target of a compute capability major (its first minor that has one): the heuristic and
// the variant key are the same for every minor of a major (target_facts.h checks it for sm_90).
const kernels::TargetFacts* TargetOfMajor(int major, bool sm90_fast) {
  for (const kernels::TargetFacts* t : kernels::kTargets) {
    if (t->cc_major == major) {
      return kernels::FindTarget(major, t->cc_minor == kernels::kAnyMinor ? 0 : t->cc_minor,
                                 sm90_fast);
    }
  }
  return nullptr;
}

}  // namespace

const char* TuneVariant(int major, bool sm90_fast) {
  const kernels::TargetFacts* t = TargetOfMajor(major, sm90_fast);
  return t != nullptr ? t->tune_variant : "native";
}

std::string TuneShapeKey(int64_t n, int64_t k, absl::string_view variant) {
  return absl::StrFormat("n=%d k=%d %s", n, k, variant);
}

namespace {

// The target whose small-M rule takes M, else nullptr (the default config).
const kernels::TargetFacts* SmallMTarget(int major, int64_t m) {
  const kernels::TargetFacts* t = TargetOfMajor(major, false);
  return t != nullptr && t->small_m > 0 && m <= t->small_m ? t : nullptr;
}

}  // namespace

OutProjTile TuneHeuristic(int major, int64_t m) {
  const kernels::TargetFacts* t = SmallMTarget(major, m);
  return t != nullptr ? t->small_m_tile : kOutProjTileDefault;
}

std::string TuneHeuristicRule(int major, int64_t m) {
  const kernels::TargetFacts* t = SmallMTarget(major, m);
  return t != nullptr ? absl::StrFormat("M <= %d on %s", t->small_m, t->family)
                      : std::string("the default config");
}

int64_t NearestTuneBucket(const std::vector<int64_t>& sorted, int64_t m) {
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
  TuneCache cache(path, library_version);
  absl::StatusOr<Json> doc = ParseText(text);
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
                     "); those are ignored (rerun `python -m minimax_h3_nvfp4 tune`)"));
  }
  return cache;
}

TuneCache TuneCache::FromFile(const std::string& path, std::vector<std::string>* warnings,
                              absl::string_view library_version) {
  const std::optional<std::string> text = ReadBounded(path);
  if (text.has_value()) return FromText(*text, path, warnings, library_version);
  TuneCache cache(path, library_version);
  const int why = errno;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    warnings->push_back(absl::StrCat("the tuning cache ", path, " cannot be read (",
                                     std::strerror(why), ")", kIgnored));
  }
  return cache;
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
  const auto at = std::lower_bound(ms.begin(), ms.end(), NearestTuneBucket(ms, m));
  const std::string& name = shape->second[static_cast<size_t>(at - ms.begin())].second;
  const OutProjTileInfo* info = FindOutProjTileByName(name);
  if (info == nullptr) {
    warnings->push_back(absl::StrCat("the tuning cache ", path_, " names tile ", Quoted(name),
                                     ", which this library does not have (it has: ",
                                     RegistryNames(), "); the heuristic decides instead"));
    return heuristic;
  }
  return Choice{info->tile, true};
}

std::vector<TuneCache::Row> TuneCache::Rows() const {
  std::vector<Row> rows;
  for (const auto& [key, shapes] : entries_) {
    if (shapes.empty()) rows.push_back(Row{key, "", 0, ""});
    for (const auto& [skey, buckets] : shapes) {
      for (const auto& [m, tile] : buckets) rows.push_back(Row{key, skey, m, tile});
    }
  }
  return rows;
}

absl::Status RecordTuneWinners(const std::string& path, const TuneDevice& device, int64_t n,
                               int64_t k, absl::string_view variant,
                               const std::vector<TuneWinner>& winners,
                               absl::string_view library_version) {
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
  // The file's keys are UTF-8 (nlohmann reads and writes nothing else).
  if (!IsUtf8(device.name) || !IsUtf8(variant)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the device name and variant must be UTF-8, got ", Quoted(device.name),
                     " and ", Quoted(variant)));
  }
  // The old file's valid devices of this library version are kept (as they are): one bad entry
  // would make the reader ignore the whole file, this record included. Anything else goes.
  Json doc = {{"format", kTuneCacheFormat}, {"devices", Json::object()}};
  Json& devices = doc["devices"];
  if (const std::optional<std::string> text = ReadBounded(path); text.has_value()) {
    const absl::StatusOr<Json> old = ParseText(*text);
    const std::string* format = old.ok() ? StringMember(*old, "format") : nullptr;
    const Json* old_devices = old.ok() ? Member(*old, "devices") : nullptr;
    if (format != nullptr && *format == kTuneCacheFormat && old_devices != nullptr &&
        old_devices->is_object()) {
      for (const auto& [key, dev] : old_devices->items()) {
        const std::string* v = StringMember(dev, "library_version");
        TuneCache::Entries::mapped_type unused;
        if (v != nullptr && *v == library_version && ParseShapes(key, dev, &unused).ok()) {
          devices[key] = dev;
        }
      }
    }
  }
  Json& dev = devices[TuneDeviceKey(device, library_version)];
  if (dev.is_null()) {  // new here (a kept entry has its shapes)
    dev = {{"device",
            {{"name", device.name},
             {"compute_capability", absl::StrFormat("%d.%d", device.major, device.minor)},
             {"sm_count", device.sm_count},
             {"driver_version", device.driver_version}}},
           {"library_version", std::string(library_version)},
           {"shapes", Json::object()}};
  }
  Json rows = Json::array();
  std::vector<TuneWinner> sorted = winners;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const TuneWinner& a, const TuneWinner& b) { return a.m < b.m; });
  for (const TuneWinner& w : sorted) {
    Json row = {{"m", w.m}, {"tile", w.tile}};
    if (std::isfinite(w.median_ms) && w.median_ms >= 0) row["median_ms"] = w.median_ms;
    rows.push_back(std::move(row));
  }
  dev["shapes"][TuneShapeKey(n, k, variant)] = {{"buckets", std::move(rows)}};
  return WriteAtomically(path, Dump(doc, 1) + "\n");
}

}  // namespace h3
