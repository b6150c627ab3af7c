// Tests of the row sampler (CPU only).

#include "harness/testbed/rows.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace h3::testbed {
namespace {

TEST(Sampler, AlwaysHasFirstLastAndTileEdges) {
  struct Row {
    int64_t m, count;
  };
  const Row table[] = {{1, 24},     {24, 24},     {25, 24},   {129, 8},
                       {75856, 24}, {300000, 24}, {300000, 2}};
  for (const Row& t : table) {
    const std::vector<int64_t> rows = SampleRows(t.m, t.count, 42);
    ASSERT_FALSE(rows.empty());
    EXPECT_EQ(rows.front(), 0) << t.m;
    EXPECT_EQ(rows.back(), t.m - 1) << t.m;
    EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
    EXPECT_EQ(std::set<int64_t>(rows.begin(), rows.end()).size(), rows.size());
    if (t.count >= t.m) {
      EXPECT_EQ(static_cast<int64_t>(rows.size()), t.m);
    } else {
      EXPECT_GE(static_cast<int64_t>(rows.size()), t.count);
      for (int64_t edge : {kTileM - 1, kTileM, kTileM + 1}) {
        if (edge < t.m) {
          EXPECT_TRUE(std::binary_search(rows.begin(), rows.end(), edge));
        }
      }
    }
  }
  EXPECT_TRUE(SampleRows(0, 24, 1).empty());
}

TEST(Sampler, DeterministicPerSeed) {
  EXPECT_EQ(SampleRows(75856, 24, 7), SampleRows(75856, 24, 7));
  EXPECT_NE(SampleRows(75856, 24, 7), SampleRows(75856, 24, 8));
  EXPECT_EQ(AllRows(3), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_TRUE(AllRows(0).empty());
  EXPECT_TRUE(AllRows(-1).empty());
}

}  // namespace
}  // namespace h3::testbed
