// The C ABI of the tile choice (capi_tuning.h) over kernels/tuning/tune_cache.h: argument checks, the
// C structs to C++ ones and back; every decision is tune_cache's.

#include "python/native/capi_tuning.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kernels/device/tiles.h"
#include "kernels/tuning/tune_cache.h"
#include "python/native/capi.h"
#include "python/native/last_error.h"

// One cache of the C ABI: the file's view, and what it has to say that nobody was told yet.
struct H3TuneCache {
  h3::TuneCacheFile* file;  // the process's, or `owned`
  std::unique_ptr<h3::TuneCacheFile> owned;
  // Guards pending and listed, and orders every use of `file` that reports warnings or rows
  // against reload and record. Taken before file's own lock; never while file's is held.
  std::mutex mu;
  std::vector<std::string> pending;        // warnings not handed out
  std::vector<h3::TuneCache::Row> listed;  // h3_tune_cache_rows' last list
};

namespace {

using ::h3::capi::Done;
using ::h3::capi::Fail;

H3TuneCache* Of(H3TuneCache* cache) {
  static H3TuneCache* process = new H3TuneCache{&h3::ProcessTuneCache(), nullptr, {}, {}, {}};
  return cache != nullptr ? cache : process;
}

// Under c->mu (held by the caller).
void Keep(H3TuneCache* c, std::vector<std::string>* fresh) {
  for (std::string& w : *fresh) c->pending.push_back(std::move(w));
}

absl::Status Null(const char* fn, const char* what) {
  return absl::InvalidArgumentError(absl::StrCat(fn, ": ", what, " must be a pointer, got NULL"));
}

// The common checks of a string result's buffer.
absl::Status CheckBuffer(const char* fn, const char* name, const char* buf, int64_t buf_len) {
  if (buf_len < 0 || (buf == nullptr && buf_len > 0)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s must be a buffer of buf_len >= 0 bytes, got %s with buf_len %d", fn,
                        name, buf == nullptr ? "NULL" : "a pointer", buf_len));
  }
  return absl::OkStatus();
}

// `s` into buf, truncated.
void Copy(const std::string& s, char* buf, int64_t buf_len) {
  if (buf_len <= 0) return;
  const size_t n = std::min(s.size(), static_cast<size_t>(buf_len - 1));
  std::memcpy(buf, s.data(), n);
  buf[n] = '\0';
}

// `s` into buf whole, or "" and OutOfRange naming the bytes needed.
absl::Status Put(const char* fn, const std::string& s, char* buf, int64_t buf_len,
                 int64_t* needed) {
  *needed = static_cast<int64_t>(s.size()) + 1;
  if (buf_len < *needed) {
    Copy("", buf, buf_len);
    return absl::OutOfRangeError(absl::StrFormat(
        "%s: buf_len must be >= %d (the string and its NUL), got %d", fn, *needed, buf_len));
  }
  Copy(s, buf, buf_len);
  return absl::OkStatus();
}

absl::Status CheckEmulation(const char* fn, int32_t sm90_emulation) {
  if (sm90_emulation == 0 || sm90_emulation == 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s: sm90_emulation must be 0 (faithful) or 1 (fast), got %d", fn, sm90_emulation));
}

h3::TuneDevice DeviceOf(const H3DeviceProperties& p) {
  h3::TuneDevice d;
  d.name.assign(p.name, strnlen(p.name, sizeof(p.name)));
  d.major = p.major;
  d.minor = p.minor;
  d.sm_count = p.sm_count;
  d.driver_version = p.driver_version;
  return d;
}

const char* Variant(const h3::TuneDevice& d, int32_t sm90_emulation) {
  return h3::TuneVariant(d.major, sm90_emulation == 1);
}

// What "auto" runs for `device`, from `cache`, into the C ABI's outputs.
int32_t Choose(const char* fn, H3TuneCache* cache, const h3::TuneDevice& device, int64_t m,
               int64_t n, int64_t k, int32_t sm90_emulation, int32_t* tile, int32_t* tuned,
               char* why, int64_t why_len) {
  if (tile == nullptr) return Fail(Null(fn, "tile"), fn);
  if (tuned == nullptr) return Fail(Null(fn, "tuned"), fn);
  if (absl::Status s = CheckBuffer(fn, "why", why, why_len); !s.ok()) return Fail(s, fn);
  if (absl::Status s = CheckEmulation(fn, sm90_emulation); !s.ok()) return Fail(s, fn);
  if (m < 0) {
    return Fail(absl::InvalidArgumentError(absl::StrFormat("%s: m must be >= 0, got %d", fn, m)),
                fn);
  }
  H3TuneCache* c = Of(cache);
  std::vector<std::string> fresh;
  // c->mu across the file's answer and its warnings, in reload's lock order (c->mu, then the
  // file's): a reload cannot fall between them, so no warning of an old reading is kept after
  // the reload cleared the old ones.
  std::lock_guard<std::mutex> lock(c->mu);
  const h3::TuneCache::Choice choice =
      c->file->Choose(device, m, n, k, Variant(device, sm90_emulation), &fresh);
  Keep(c, &fresh);
  *tile = static_cast<int32_t>(choice.tile);
  *tuned = choice.tuned ? 1 : 0;
  Copy(choice.tuned ? std::string("tuning cache winner")
                    : absl::StrCat("heuristic: ", h3::TuneHeuristicRule(device.major, m)),
       why, why_len);
  return Done(absl::OkStatus(), fn);
}

}  // namespace

extern "C" {

int32_t h3_tune_cache_open(const char* path, H3TuneCache** cache) {
  constexpr char kFn[] = "h3_tune_cache_open";
  if (cache == nullptr) return Fail(Null(kFn, "cache"), kFn);
  auto owned = std::make_unique<h3::TuneCacheFile>(path != nullptr ? path : "");
  h3::TuneCacheFile* file = owned.get();
  *cache = new H3TuneCache{file, std::move(owned), {}, {}, {}};
  return Done(absl::OkStatus(), kFn);
}

void h3_tune_cache_close(H3TuneCache* cache) { delete cache; }

int32_t h3_tune_cache_path(H3TuneCache* cache, char* buf, int64_t buf_len, int64_t* needed) {
  constexpr char kFn[] = "h3_tune_cache_path";
  if (needed == nullptr) return Fail(Null(kFn, "needed"), kFn);
  if (absl::Status s = CheckBuffer(kFn, "buf", buf, buf_len); !s.ok()) return Fail(s, kFn);
  return Done(Put(kFn, Of(cache)->file->path(), buf, buf_len, needed), kFn);
}

int32_t h3_tune_reload(const char* path) {
  H3TuneCache* c = Of(nullptr);
  // c->mu held across the reload: a warning about the new reading (its Keep waits for c->mu) is
  // never cleared with the old ones, else it would be lost (the file marks it said).
  std::lock_guard<std::mutex> lock(c->mu);
  c->file->Reload(path != nullptr ? path : "");
  c->pending.clear();  // said of the file as read before; the new reading says its own
  c->listed.clear();
  return Done(absl::OkStatus(), "h3_tune_reload");
}

int32_t h3_tune_resolve(int32_t device, int64_t m, int64_t n, int64_t k, int32_t sm90_emulation,
                        int32_t* tile, int32_t* tuned, char* why, int64_t why_len) {
  constexpr char kFn[] = "h3_tune_resolve";
  // Each device's properties once per process (the driver's answer does not change while it
  // runs); the process's cache does the rest.
  static std::mutex mu;
  static std::map<int32_t, h3::TuneDevice>* devices = new std::map<int32_t, h3::TuneDevice>;
  h3::TuneDevice d;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = devices->find(device);
    if (it == devices->end()) {
      H3DeviceProperties p;
      if (const int32_t rc = h3_device_properties(device, &p); rc != H3_OK) {
        return Fail(absl::Status(static_cast<absl::StatusCode>(rc), h3::capi::LastError()), kFn);
      }
      it = devices->emplace(device, DeviceOf(p)).first;
    }
    d = it->second;
  }
  return Choose(kFn, nullptr, d, m, n, k, sm90_emulation, tile, tuned, why, why_len);
}

int32_t h3_tune_choose(H3TuneCache* cache, const H3DeviceProperties* device, int64_t m, int64_t n,
                       int64_t k, int32_t sm90_emulation, int32_t* tile, int32_t* tuned, char* why,
                       int64_t why_len) {
  constexpr char kFn[] = "h3_tune_choose";
  if (device == nullptr) return Fail(Null(kFn, "device"), kFn);
  return Choose(kFn, cache, DeviceOf(*device), m, n, k, sm90_emulation, tile, tuned, why, why_len);
}

int32_t h3_tune_default_tile(void) { return static_cast<int32_t>(h3::kOutProjTileDefault); }

int32_t h3_tune_heuristic(const H3DeviceProperties* device, int64_t m, int32_t* tile, char* rule,
                          int64_t rule_len) {
  constexpr char kFn[] = "h3_tune_heuristic";
  if (device == nullptr) return Fail(Null(kFn, "device"), kFn);
  if (tile == nullptr) return Fail(Null(kFn, "tile"), kFn);
  if (absl::Status s = CheckBuffer(kFn, "rule", rule, rule_len); !s.ok()) return Fail(s, kFn);
  *tile = static_cast<int32_t>(h3::TuneHeuristic(device->major, m));
  Copy(h3::TuneHeuristicRule(device->major, m), rule, rule_len);
  return Done(absl::OkStatus(), kFn);
}

int32_t h3_tune_device_key(const H3DeviceProperties* device, char* buf, int64_t buf_len) {
  constexpr char kFn[] = "h3_tune_device_key";
  if (device == nullptr) return Fail(Null(kFn, "device"), kFn);
  if (absl::Status s = CheckBuffer(kFn, "buf", buf, buf_len); !s.ok()) return Fail(s, kFn);
  Copy(h3::TuneDeviceKey(DeviceOf(*device)), buf, buf_len);
  return Done(absl::OkStatus(), kFn);
}

int32_t h3_tune_shape_key(const H3DeviceProperties* device, int64_t n, int64_t k,
                          int32_t sm90_emulation, char* buf, int64_t buf_len) {
  constexpr char kFn[] = "h3_tune_shape_key";
  if (device == nullptr) return Fail(Null(kFn, "device"), kFn);
  if (absl::Status s = CheckBuffer(kFn, "buf", buf, buf_len); !s.ok()) return Fail(s, kFn);
  if (absl::Status s = CheckEmulation(kFn, sm90_emulation); !s.ok()) return Fail(s, kFn);
  Copy(h3::TuneShapeKey(n, k, Variant(DeviceOf(*device), sm90_emulation)), buf, buf_len);
  return Done(absl::OkStatus(), kFn);
}

int32_t h3_tune_record(H3TuneCache* cache, const H3DeviceProperties* device, int64_t n, int64_t k,
                       int32_t sm90_emulation, int64_t count, const int64_t* m,
                       const char* const* tiles, const double* median_ms) {
  constexpr char kFn[] = "h3_tune_record";
  if (device == nullptr) return Fail(Null(kFn, "device"), kFn);
  if (absl::Status s = CheckEmulation(kFn, sm90_emulation); !s.ok()) return Fail(s, kFn);
  if (count < 1) {
    return Fail(absl::InvalidArgumentError(absl::StrFormat(
                    "%s: count must be >= 1 (a winner to record), got %d", kFn, count)),
                kFn);
  }
  if (m == nullptr) return Fail(Null(kFn, "m"), kFn);
  if (tiles == nullptr) return Fail(Null(kFn, "tiles"), kFn);
  std::vector<h3::TuneWinner> winners;
  for (int64_t i = 0; i < count; ++i) {
    if (tiles[i] == nullptr) {
      return Fail(absl::InvalidArgumentError(
                      absl::StrFormat("%s: tiles[%d] must be a registry name, got NULL", kFn, i)),
                  kFn);
    }
    h3::TuneWinner w;
    w.m = m[i];
    w.tile = tiles[i];
    if (median_ms != nullptr && std::isfinite(median_ms[i])) w.median_ms = median_ms[i];
    winners.push_back(std::move(w));
  }
  const h3::TuneDevice d = DeviceOf(*device);
  H3TuneCache* c = Of(cache);
  std::lock_guard<std::mutex> lock(c->mu);  // as h3_tune_reload: no new warning cleared
  const absl::Status s = c->file->Record(d, n, k, Variant(d, sm90_emulation), winners);
  c->pending.clear();  // the file is read again: what it says now is said anew
  c->listed.clear();
  return Done(s, kFn);
}

int32_t h3_tune_cache_rows(H3TuneCache* cache, int64_t* count) {
  constexpr char kFn[] = "h3_tune_cache_rows";
  if (count == nullptr) return Fail(Null(kFn, "count"), kFn);
  H3TuneCache* c = Of(cache);
  std::vector<std::string> fresh;
  std::lock_guard<std::mutex> lock(c->mu);  // as Choose: no stale list or warning after a reload
  std::vector<h3::TuneCache::Row> rows = c->file->Rows(&fresh);
  Keep(c, &fresh);
  c->listed = std::move(rows);
  *count = static_cast<int64_t>(c->listed.size());
  return Done(absl::OkStatus(), kFn);
}

int32_t h3_tune_cache_row(H3TuneCache* cache, int64_t row, char* device_key, char* shape_key,
                          char* tile, int64_t buf_len, int64_t* m, int64_t* needed) {
  constexpr char kFn[] = "h3_tune_cache_row";
  if (m == nullptr) return Fail(Null(kFn, "m"), kFn);
  if (needed == nullptr) return Fail(Null(kFn, "needed"), kFn);
  for (const auto& [name, buf] : {std::pair<const char*, const char*>{"device_key", device_key},
                                  {"shape_key", shape_key},
                                  {"tile", tile}}) {
    if (absl::Status s = CheckBuffer(kFn, name, buf, buf_len); !s.ok()) return Fail(s, kFn);
  }
  H3TuneCache* c = Of(cache);
  std::lock_guard<std::mutex> lock(c->mu);
  if (row < 0 || row >= static_cast<int64_t>(c->listed.size())) {
    return Fail(absl::OutOfRangeError(absl::StrFormat(
                    "%s: row must be in [0, %d) (h3_tune_cache_rows' count), got %d", kFn,
                    c->listed.size(), row)),
                kFn);
  }
  const h3::TuneCache::Row& r = c->listed[static_cast<size_t>(row)];
  *m = r.m;
  *needed =
      static_cast<int64_t>(std::max({r.device_key.size(), r.shape_key.size(), r.tile.size()})) + 1;
  if (buf_len < *needed) {
    for (char* buf : {device_key, shape_key, tile}) Copy("", buf, buf_len);
    return Fail(absl::OutOfRangeError(absl::StrFormat(
                    "%s: buf_len must be >= %d (the longest string and its NUL), got %d", kFn,
                    *needed, buf_len)),
                kFn);
  }
  Copy(r.device_key, device_key, buf_len);
  Copy(r.shape_key, shape_key, buf_len);
  Copy(r.tile, tile, buf_len);
  return Done(absl::OkStatus(), kFn);
}

int32_t h3_tune_cache_warnings(H3TuneCache* cache, char* buf, int64_t buf_len, int64_t* needed) {
  constexpr char kFn[] = "h3_tune_cache_warnings";
  if (needed == nullptr) return Fail(Null(kFn, "needed"), kFn);
  if (absl::Status s = CheckBuffer(kFn, "buf", buf, buf_len); !s.ok()) return Fail(s, kFn);
  H3TuneCache* c = Of(cache);
  std::lock_guard<std::mutex> lock(c->mu);
  std::vector<std::string> lines = c->pending;
  for (std::string& w : lines) std::replace(w.begin(), w.end(), '\n', ' ');  // one a line
  const absl::Status s = Put(kFn, absl::StrJoin(lines, "\n"), buf, buf_len, needed);
  if (s.ok()) c->pending.clear();
  return Done(s, kFn);
}

}  // extern "C"
