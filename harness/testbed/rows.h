#ifndef H3_HARNESS_TESTBED_ROWS_H_
#define H3_HARNESS_TESTBED_ROWS_H_

// Which rows of an M-row result are compared: the one row sampler of the tests, the sweep and
// the benchmarks.

#include <cstdint>
#include <vector>

namespace h3::testbed {

// M of one kernel tile (kernels/device/config.cuh kBM): the sampler always takes the first tile edge.
// Kept here so the sampler and its users stay CPU-only; gpu_run.cc static_asserts that it equals
// the kernel's.
inline constexpr int64_t kTileM = 128;

// Rows compared for a result of M rows: all when count >= m; otherwise always row 0 and row m-1,
// the tile edges (kTileM-1, kTileM, kTileM+1), m-2 and m/2, then random rows (a pure function of
// `seed`) up to `count`. Ascending, unique.
std::vector<int64_t> SampleRows(int64_t m, int64_t count, uint64_t seed);

// 0, 1, ..., m-1 (empty when m <= 0).
std::vector<int64_t> AllRows(int64_t m);

}  // namespace h3::testbed

#endif  // H3_HARNESS_TESTBED_ROWS_H_
