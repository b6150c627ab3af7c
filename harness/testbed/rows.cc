#include "harness/testbed/rows.h"

#include <algorithm>
#include <set>

#include "harness/testbed/rng.h"

namespace h3::testbed {

std::vector<int64_t> SampleRows(int64_t m, int64_t count, uint64_t seed) {
  if (count >= m) return AllRows(m);
  std::set<int64_t> rows;
  for (int64_t r : {int64_t{0}, m - 1, kTileM - 1, kTileM, kTileM + 1, m - 2, m / 2}) {
    if (r >= 0 && r < m) rows.insert(r);
  }
  for (uint64_t i = 0; static_cast<int64_t>(rows.size()) < count; ++i) {
    rows.insert(static_cast<int64_t>(Mix64(seed ^ Mix64(i)) % static_cast<uint64_t>(m)));
  }
  return std::vector<int64_t>(rows.begin(), rows.end());
}

std::vector<int64_t> AllRows(int64_t m) {
  std::vector<int64_t> rows(static_cast<size_t>(std::max<int64_t>(m, 0)));
  for (int64_t i = 0; i < m; ++i) rows[i] = i;
  return rows;
}

}  // namespace h3::testbed
