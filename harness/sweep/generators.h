// Input generators and the row sampler of the sweep.
//
// Every value is a pure function of (seed, tensor, row, column): generating a subset of rows
// gives exactly those rows of the full problem. The GPU path generates all M rows; the emulator
// then recomputes only the sampled rows, so large-M cases cost the CPU only what is compared.

#ifndef H3_HARNESS_SWEEP_GENERATORS_H_
#define H3_HARNESS_SWEEP_GENERATORS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "emulator/op.h"
#include "emulator/shape.h"
#include "emulator/weight.h"
#include "harness/sweep/cases.h"

namespace h3::sweep {

// splitmix64 finalizer: a bijective 64-bit mix, good enough to drive test data.
inline uint64_t Mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
inline uint64_t Hash(uint64_t seed, uint64_t stream, uint64_t row, uint64_t col) {
  return Mix64(Mix64(Mix64(seed ^ (stream << 56)) ^ row) ^ col);
}

// Bound on |x| of the standard Gaussian generator (the 65536-entry inverse-CDF table's end).
float GaussianBound();

// The (quantized) weight of one shape and data family, made once and shared between cases.
// Exact data: random codes, power-of-two scales (0.5 or 1), global scale 1, built directly.
// Other data: a bf16 Gaussian weight (std 0.02, a few x8 outlier rows) through the emulator's
// weight quantizer (contract section 5).
class WeightCache {
 public:
  explicit WeightCache(uint64_t seed) : seed_(seed) {}
  absl::StatusOr<std::shared_ptr<const QuantizedWeight>> Get(int64_t n, int64_t k, bool exact);

 private:
  uint64_t seed_;
  std::mutex mu_;
  std::map<std::tuple<int64_t, int64_t, bool>, std::shared_ptr<const QuantizedWeight>> cache_;
};

// One problem on host memory: the inputs of the op for a subset of the case's rows.
struct Problem {
  OpShape shape;                    // shape.m = number of generated rows (rows.size())
  int64_t case_m = 0;               // M of the case (rows index into [0, case_m))
  std::vector<int64_t> rows;        // which rows of the case, ascending
  std::vector<uint16_t> attn_out;   // [rows, k] bf16
  std::vector<uint16_t> gate;       // [g, n] bf16
  std::vector<int32_t> gate_index;  // [rows]
  std::vector<uint16_t> residual;   // [rows, n] bf16
  float act_global_scale = 1.f;
  std::shared_ptr<const QuantizedWeight> weight;
};

// The emulator's view of a problem; `residual` defaults to the problem's own (the runner passes
// the device result's buffer for the in-place case).
OpInputs InputsOf(const Problem& p);
OpInputs InputsOf(const Problem& p, absl::Span<const uint16_t> residual);

// Generates rows `rows` (ascending, each in [0, spec.shape.m)) of the case's inputs; uses up to
// `threads` threads.
absl::StatusOr<Problem> GenerateProblem(const CaseSpec& spec, uint64_t seed,
                                        absl::Span<const int64_t> rows, WeightCache& weights,
                                        int threads);

// gate_index of row `row` of a case with M = m (row-deterministic; some patterns depend on m).
int32_t GateIndexFor(GatePattern pattern, uint64_t seed, int64_t row, int64_t m, int64_t g);

// act_global_scale for a data kind: 2688 / (bound of |attn_out|) (the "calibrated" value), a
// power of two for exact data, 16x the calibrated value for kSaturate.
float ActGlobalScaleFor(DataKind kind);

// Rows compared for a case of M rows: all when count >= m; otherwise always row 0 and row m-1,
// the tile edges (kTileM-1, kTileM, kTileM+1), m-2 and m/2, then random rows up to `count`.
// Ascending, unique.
std::vector<int64_t> SampleRows(int64_t m, int64_t count, uint64_t seed);

std::vector<int64_t> AllRows(int64_t m);

}  // namespace h3::sweep

#endif  // H3_HARNESS_SWEEP_GENERATORS_H_
