// PickTuneWinners as a table: medians, ties, missing configs and M values, the fast sm_90 build.

#include "harness/bench/tune_winners.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace h3::bench {
namespace {

std::string Show(const std::vector<TuneWinner>& w) {
  std::string s;
  for (const TuneWinner& x : w) {
    s += std::to_string(x.m) + ":" + x.tile + "@" + std::to_string(x.median_ms) + " ";
  }
  return s;
}

TEST(TuneWinners, Table) {
  const TuneTimes times = {
      // 128x128 has one slow outlier at M = 128: its median still wins.
      {"128x128", {{128, {0.24f, 0.25f, 9.0f}}, {4096, {1.9f, 1.8f}}}},
      {"128x256", {{128, {0.35f, 0.36f, 0.34f}}, {4096, {2.0f}}, {1, {0.3f}}}},
      {"128x256_lockstep", {{128, {0.33f}}, {4096, {1.7f, 1.8f, 1.75f, 1.6f}}, {1, {0.3f}}}},
      {"128x128_staged", {{128, {0.36f, 0.37f, 0.38f}}, {4096, {2.1f}}}},
      {"not_a_config", {{128, {0.01f}}}},  // ignored: not in the registry
  };
  struct Row {
    std::vector<int64_t> ms;
    bool default_only;
    std::string want;
    std::vector<int64_t> skipped;
  };
  const Row rows[] = {
      {{128, 4096}, false, "128:128x128@0.250000 4096:128x256_lockstep@1.725000 ", {}},
      {{4096, 128, 128}, false, "128:128x128@0.250000 4096:128x256_lockstep@1.725000 ", {}},
      // A tie (0.3 and 0.3): the registry's order decides (128x256_lockstep is listed first).
      {{1}, false, "1:128x256_lockstep@0.300000 ", {}},
      // The fast sm_90 build: only the default (128x128_staged) competes.
      {{128, 4096}, true, "128:128x128_staged@0.370000 4096:128x128_staged@2.100000 ", {}},
      {{16, 128}, false, "128:128x128@0.250000 ", {16}},
      {{}, false, "", {}},
  };
  for (const Row& r : rows) {
    std::vector<int64_t> skipped;
    const std::vector<TuneWinner> got = PickTuneWinners(times, r.ms, r.default_only, &skipped);
    EXPECT_EQ(Show(got), r.want);
    EXPECT_EQ(skipped, r.skipped);
  }
  EXPECT_DOUBLE_EQ(MedianMs({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(MedianMs({4, 1, 2, 3}), 2.5);
}

}  // namespace
}  // namespace h3::bench
