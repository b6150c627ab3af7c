// The tuning cache (kernels/tuning/tune_cache.h) from the command line, in a process of its own: the
// C++ reader, writer and heuristic that python/tests/tuning_binding_test.py holds Python's
// answers (the library through the C ABI) and files (Python's `tune` writer) to, on the CPU:
//
//   tune_cache_tool resolve PATH DEVICE VARIANT N K M...   one line per M: "M TILE tuned|heuristic"
//   tune_cache_tool write PATH DEVICE VARIANT N K M:TILE[:MS]...
//   tune_cache_tool heuristic MAJOR M...                  one line per M: "M TILE"
//
// DEVICE is "name|major|minor|sm_count|driver_version". Warnings go to stderr, one a line, as
// "warning: ...". Exit status 0, 1 when writing fails, 2 on a usage error.

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "kernels/device/tiles.h"
#include "kernels/tuning/tune_cache.h"

namespace h3 {
namespace {

int Usage(const std::string& why) {
  std::fprintf(stderr,
               "tune_cache_tool: error: %s\n"
               "usage: tune_cache_tool resolve PATH DEVICE VARIANT N K M...\n"
               "       tune_cache_tool write PATH DEVICE VARIANT N K M:TILE[:MS]...\n"
               "       tune_cache_tool heuristic MAJOR M...\n",
               why.c_str());
  return 2;
}

bool ParseDevice(const std::string& s, TuneDevice* d) {
  const std::vector<std::string> parts = absl::StrSplit(s, '|');
  return parts.size() == 5 && !parts[0].empty() && absl::SimpleAtoi(parts[1], &d->major) &&
         absl::SimpleAtoi(parts[2], &d->minor) && absl::SimpleAtoi(parts[3], &d->sm_count) &&
         absl::SimpleAtoi(parts[4], &d->driver_version) && ((d->name = parts[0]), true);
}

int Main(int argc, char** argv) {
  const std::vector<std::string> a(argv + 1, argv + argc);
  if (a.empty()) return Usage("a command is needed");
  if (a[0] == "heuristic") {
    int major = 0;
    if (a.size() < 3 || !absl::SimpleAtoi(a[1], &major)) return Usage("heuristic MAJOR M...");
    for (size_t i = 2; i < a.size(); ++i) {
      int64_t m = 0;
      if (!absl::SimpleAtoi(a[i], &m)) return Usage("M must be an integer, got '" + a[i] + "'");
      std::printf("%lld %s\n", static_cast<long long>(m),
                  FindOutProjTile(TuneHeuristic(major, m))->name);
    }
    return 0;
  }
  TuneDevice device;
  int64_t n = 0, k = 0;
  if (a.size() < 7 || (a[0] != "resolve" && a[0] != "write")) return Usage("unknown command");
  if (!ParseDevice(a[2], &device)) return Usage("DEVICE must be name|major|minor|sms|driver");
  if (!absl::SimpleAtoi(a[4], &n) || !absl::SimpleAtoi(a[5], &k)) return Usage("N and K");
  const std::string& path = a[1];
  const std::string& variant = a[3];
  if (a[0] == "resolve") {
    std::vector<std::string> warnings;
    const TuneCache cache = TuneCache::FromFile(path, &warnings);
    for (size_t i = 6; i < a.size(); ++i) {
      int64_t m = 0;
      if (!absl::SimpleAtoi(a[i], &m)) return Usage("M must be an integer, got '" + a[i] + "'");
      const TuneCache::Choice c = cache.Choose(device, m, n, k, variant, &warnings);
      std::printf("%lld %s %s\n", static_cast<long long>(m), FindOutProjTile(c.tile)->name,
                  c.tuned ? "tuned" : "heuristic");
    }
    for (const std::string& w : warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
    return 0;
  }
  std::vector<TuneWinner> winners;
  for (size_t i = 6; i < a.size(); ++i) {
    const std::vector<std::string> f = absl::StrSplit(a[i], ':');
    TuneWinner w;
    if (f.size() < 2 || f.size() > 3 || !absl::SimpleAtoi(f[0], &w.m) ||
        (f.size() == 3 && !absl::SimpleAtod(f[2], &w.median_ms))) {
      return Usage("a winner must be M:TILE[:MS], got '" + a[i] + "'");
    }
    w.tile = f[1];
    winners.push_back(w);
  }
  const absl::Status s = RecordTuneWinners(path, device, n, k, variant, winners);
  if (!s.ok()) {
    std::fprintf(stderr, "tune_cache_tool: error: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace h3

int main(int argc, char** argv) { return h3::Main(argc, argv); }
