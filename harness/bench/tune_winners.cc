#include "harness/bench/tune_winners.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/device/tiles.h"
#include "kernels/tuning/tune_cache.h"

namespace h3::bench {

double MedianMs(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (static_cast<double>(v[n / 2 - 1]) + v[n / 2]) / 2;
}

std::vector<TuneWinner> PickTuneWinners(const TuneTimes& times, const std::vector<int64_t>& ms,
                                        bool default_only, std::vector<int64_t>* skipped) {
  std::vector<int64_t> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<TuneWinner> winners;
  for (int64_t m : sorted) {
    TuneWinner best;
    for (const OutProjTileInfo& t : kOutProjTiles) {
      if (default_only && t.tile != kOutProjTileDefault) continue;
      auto config = times.find(t.name);
      if (config == times.end()) continue;
      auto at = config->second.find(m);
      if (at == config->second.end() || at->second.empty()) continue;
      const double median = MedianMs(at->second);
      if (best.tile.empty() || median < best.median_ms) best = TuneWinner{m, t.name, median};
    }
    if (best.tile.empty()) {
      if (skipped != nullptr) skipped->push_back(m);
      continue;
    }
    winners.push_back(best);
  }
  return winners;
}

}  // namespace h3::bench
