// TuneCacheFile: a cache file as kAuto reads it, read once per reading and thread-safe, and the
// process's own (kernels/tuning/tune_cache.h).

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "kernels/tuning/tune_cache.h"

namespace h3 {

const TuneCache& TuneCacheFile::Loaded(std::vector<std::string>* fresh) {
  if (!cache_.has_value()) {
    std::vector<std::string> warnings;
    cache_ = TuneCache::FromFile(path_.empty() ? TuneCachePath() : path_, &warnings);
    Say(&warnings, fresh);
  }
  return *cache_;
}

void TuneCacheFile::Say(std::vector<std::string>* warnings, std::vector<std::string>* fresh) {
  for (std::string& w : *warnings) {
    if (said_.insert(w).second) fresh->push_back(std::move(w));
  }
}

TuneCache::Choice TuneCacheFile::Choose(const TuneDevice& device, int64_t m, int64_t n, int64_t k,
                                        absl::string_view variant,
                                        std::vector<std::string>* fresh) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> warnings;
  const TuneCache::Choice c = Loaded(fresh).Choose(device, m, n, k, variant, &warnings);
  Say(&warnings, fresh);
  return c;
}

std::vector<TuneCache::Row> TuneCacheFile::Rows(std::vector<std::string>* fresh) {
  std::lock_guard<std::mutex> lock(mu_);
  return Loaded(fresh).Rows();
}

absl::Status TuneCacheFile::Record(const TuneDevice& device, int64_t n, int64_t k,
                                   absl::string_view variant,
                                   const std::vector<TuneWinner>& winners) {
  std::lock_guard<std::mutex> lock(mu_);  // one writer at a time, and no read of a half state
  absl::Status s =
      RecordTuneWinners(path_.empty() ? TuneCachePath() : path_, device, n, k, variant, winners);
  Forget();
  return s;
}

void TuneCacheFile::Reload(std::string path) {
  std::lock_guard<std::mutex> lock(mu_);
  path_ = std::move(path);
  Forget();
}

void TuneCacheFile::Forget() {
  cache_.reset();
  said_.clear();
  generation_.fetch_add(1, std::memory_order_acq_rel);
}

std::string TuneCacheFile::path() const {
  std::lock_guard<std::mutex> lock(mu_);
  return path_.empty() ? TuneCachePath() : path_;
}

TuneCacheFile& ProcessTuneCache() {
  static TuneCacheFile* file = new TuneCacheFile();
  return *file;
}

}  // namespace h3
