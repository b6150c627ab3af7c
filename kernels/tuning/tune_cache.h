#ifndef H3_KERNELS_TUNE_CACHE_H_
#define H3_KERNELS_TUNE_CACHE_H_

// The tuning cache behind OutProjTile::kAuto, and the one place that decides what "auto" runs:
// the C++ host API (kernels/out_proj_tile.cc) and Python's tile="auto" (through the C ABI,
// python/native/capi_tuning.h) ask the same code. `python -m minimax_h3_nvfp4 tune` times the
// configs in Python and records its winners here (RecordTuneWinners); so does the bench's
// --write_tune_cache. The file, read and written with nlohmann-json:
//
//   {"format": "minimax_h3_nvfp4 tune cache 1",
//    "devices": {"<TuneDeviceKey>": {"device": {...}, "library_version": "0.1.0",
//                "shapes": {"n=5376 k=7168 faithful": {"buckets": [{"m": 128, "tile": "128x128",
//                                                                   "median_ms": 0.243}, ...]}}}}}
//
// laid out as Python's json.dump(indent=1, sort_keys=True) lays it out (the format's first
// writer; testdata/tune_cache/python_written.json holds its bytes).
//
// kAuto resolves, per call, to the winner of the M bucket nearest M (log scale) for this device
// (name, compute capability, SM count, driver) and library version, shape (N, K) and variant
// (sm_90: the emulation; "native" elsewhere); where the cache has none, to the built-in heuristic
// TuneHeuristic. A cache that cannot be parsed, or is not of this format, is ignored whole;
// devices of another library version are skipped; either way with a warning, never an error.
// Host code only: nothing here touches a CUDA stream.

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/version.h"
#include "kernels/device/tiles.h"

namespace h3 {

inline constexpr char kTuneCacheFormat[] = "minimax_h3_nvfp4 tune cache 1";
inline constexpr char kTuneCacheEnv[] = "MINIMAX_H3_NVFP4_TUNE_CACHE";
// A bucket's M must lie in [1, kTuneMaxBucketM] (the op's own bound on M).
inline constexpr int64_t kTuneMaxBucketM = (int64_t{1} << 31) - 1;
// Limits of what is read as a cache; ours are 6 deep and a few KiB. Deeper or larger files are
// refused before a value is built of them (nlohmann builds without bound).
inline constexpr int kTuneCacheMaxDepth = 64;
inline constexpr size_t kTuneCacheMaxBytes = size_t{1} << 20;

struct TuneDevice {
  std::string name;  // cudaDeviceProp::name
  int major = 0, minor = 0;
  int sm_count = 0;
  int driver_version = 0;  // cudaDriverGetVersion
};

// $MINIMAX_H3_NVFP4_TUNE_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/minimax_h3_nvfp4/tune.json
// ("" when none of these is set).
std::string TuneCachePath();
std::string TuneDeviceKey(const TuneDevice& d, absl::string_view library_version = kVersion);
// The target's variant key (kernels/device/target_facts.h: "native" on SM12x, "faithful" /
// "fast" on 9.x); "native" for a device no target runs on.
const char* TuneVariant(int major, bool sm90_fast);
std::string TuneShapeKey(int64_t n, int64_t k, absl::string_view variant);
// The heuristic of the target of compute capability `major` (its facts' small_m and small-M
// tile), the registry's default where it has none or there is no target.
OutProjTile TuneHeuristic(int major, int64_t m);
// The heuristic's rule behind TuneHeuristic(major, m), as `info` prints it ("M <= <small_m> on
// <family>" where a target has a small-M rule, none today; "the default config").
std::string TuneHeuristicRule(int major, int64_t m);
// The bucket nearest m on a log2 scale, the smaller one on a tie; `sorted` ascending, non-empty.
int64_t NearestTuneBucket(const std::vector<int64_t>& sorted, int64_t m);
// A registry entry by name ("auto": the default's), or nullptr.
const OutProjTileInfo* FindOutProjTileByName(absl::string_view name);

class TuneCache {
 public:
  // The cache of one file's text (`path` only names it in warnings). Everything wrong with the
  // text is a warning appended to *warnings; the result then holds what could be used (nothing,
  // for a file that is not a valid cache).
  static TuneCache FromText(absl::string_view text, absl::string_view path,
                            std::vector<std::string>* warnings,
                            absl::string_view library_version = kVersion);
  // The same for a file; a missing file is an empty cache without a warning.
  static TuneCache FromFile(const std::string& path, std::vector<std::string>* warnings,
                            absl::string_view library_version = kVersion);

  struct Choice {
    OutProjTile tile = kOutProjTileDefault;  // never kAuto
    bool tuned = false;                      // from the cache (else the heuristic)
  };
  // What kAuto runs. Appends a warning when the cache knows other devices but not this one, or
  // names a tile this library does not have (the caller says each one once).
  Choice Choose(const TuneDevice& device, int64_t m, int64_t n, int64_t k,
                absl::string_view variant, std::vector<std::string>* warnings) const;

  // One bucket of the cache, for listings (`info`).
  struct Row {
    std::string device_key, shape_key;
    int64_t m = 0;
    std::string tile;  // as the file names it: maybe no registry name
  };
  // Every bucket of this library version's entries, in order of device key, shape key and M; a
  // device entry without a tuned shape is one row with an empty shape key and m = 0.
  std::vector<Row> Rows() const;

  bool empty() const { return entries_.empty(); }

  // device key -> shape key -> (m, tile name), ascending m.
  using Entries =
      std::map<std::string, std::map<std::string, std::vector<std::pair<int64_t, std::string>>>>;

 private:
  TuneCache(absl::string_view path, absl::string_view library_version)
      : path_(path), library_version_(library_version) {}
  std::string path_;
  std::string library_version_;
  Entries entries_;
};

struct TuneWinner {
  int64_t m = 0;
  std::string tile;       // a registry name
  double median_ms = -1;  // written when finite and >= 0
};

// Stores the winners of one device and shape in the file at `path`: other devices and shapes of
// this library version are kept, entries of other versions and a file that is not a valid cache
// are dropped; written to a temporary file beside it, then renamed over it (a reader sees the old
// or the new file). Errors name the path and what failed.
absl::Status RecordTuneWinners(const std::string& path, const TuneDevice& device, int64_t n,
                               int64_t k, absl::string_view variant,
                               const std::vector<TuneWinner>& winners,
                               absl::string_view library_version = kVersion);

// A cache file as kAuto reads it: read at the first use after construction or Reload, each
// warning handed out once (to the caller that triggered it, which says it). Thread-safe.
class TuneCacheFile {
 public:
  // `path` "": TuneCachePath(), looked up again at each read.
  explicit TuneCacheFile(std::string path = "") : path_(std::move(path)) {}

  // TuneCache::Choose on the file as read; the warnings not handed out before go to *fresh.
  TuneCache::Choice Choose(const TuneDevice& device, int64_t m, int64_t n, int64_t k,
                           absl::string_view variant, std::vector<std::string>* fresh);
  // TuneCache::Rows of the file as read; warnings as Choose.
  std::vector<TuneCache::Row> Rows(std::vector<std::string>* fresh);
  // RecordTuneWinners into path(); the file is then read again: this process sees what it wrote.
  absl::Status Record(const TuneDevice& device, int64_t n, int64_t k, absl::string_view variant,
                      const std::vector<TuneWinner>& winners);
  // Forgets the file as read and the warnings said: the next use reads `path` ("":
  // TuneCachePath()). Changes generation().
  void Reload(std::string path);
  // The file read (explicit, else TuneCachePath() now).
  std::string path() const;
  // Changes whenever what Choose answers may have: a cache of its answers stays valid while
  // generation() does not move.
  int64_t generation() const { return generation_.load(std::memory_order_acquire); }

 private:
  const TuneCache& Loaded(std::vector<std::string>* fresh);                       // mu_ held
  void Say(std::vector<std::string>* warnings, std::vector<std::string>* fresh);  // mu_ held
  void Forget();                                                                  // mu_ held

  mutable std::mutex mu_;
  std::string path_;
  std::optional<TuneCache> cache_;
  std::set<std::string> said_;
  std::atomic<int64_t> generation_{0};
};

// The process's tuning cache: what kAuto runs and what Python's tile="auto" asks for
// (h3_tune_resolve).
TuneCacheFile& ProcessTuneCache();

}  // namespace h3

#endif  // H3_KERNELS_TUNE_CACHE_H_
