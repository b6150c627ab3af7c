// The bench's --write_tune_cache: from the times of the registry configs it ran at each M, the
// winners that kernels/tuning/tune_cache.h records (the file Python's tile="auto" and C++'s kAuto read).
// CPU code, tested on its own (tune_winners_test.cc).

#ifndef H3_HARNESS_BENCH_TUNE_WINNERS_H_
#define H3_HARNESS_BENCH_TUNE_WINNERS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/tuning/tune_cache.h"

namespace h3::bench {

// Every timed call of one registry config (by its registry name) at one M, in ms, from runs whose
// check passed.
using TuneTimes = std::map<std::string, std::map<int64_t, std::vector<float>>>;

// The median of each config's calls at each M of `ms`, and the fastest config (the registry's
// order breaks a tie). With `default_only` (the fast sm_90 build, which has one config whatever
// the tile) only the registry's default competes, as in Python's tune(). An M where nothing was
// timed gets no winner; `skipped` (optional) names those M.
std::vector<TuneWinner> PickTuneWinners(const TuneTimes& times, const std::vector<int64_t>& ms,
                                        bool default_only, std::vector<int64_t>* skipped);

// The median of `v` (the mean of the middle two for an even count); v non-empty.
double MedianMs(std::vector<float> v);

}  // namespace h3::bench

#endif  // H3_HARNESS_BENCH_TUNE_WINNERS_H_
