#ifndef H3_HARNESS_TESTBED_PROBLEM_H_
#define H3_HARNESS_TESTBED_PROBLEM_H_

// The problem description of the tests, the sweep and the benchmarks, and its generator.
//
// Every generated value is a pure function of (seed, tensor, row, column) (rng.h): generating a
// subset of rows gives exactly those rows of the full problem. A GPU run generates all M rows;
// the emulator then recomputes only the compared rows, so large-M cases cost the CPU only what
// is compared.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/shape.h"
#include "emulator/op.h"
#include "emulator/weight.h"

namespace h3::testbed {

// How the inputs are filled.
enum class DataKind {
  kExact,      // E2M1 grid values times power-of-two block maxima: f32 accumulation is exact
  kGaussian,   // N(0,1) with per-row scales, act_global_scale calibrated to the true amax bound
  kHeavyTail,  // Gaussian plus outlier channels (x24) and rare spikes, as attention outputs have
  kSpecial,    // NaN, +-Inf, -0, bf16 subnormals, bf16 max, all-NaN / all -0 blocks
  kSaturate,   // Gaussian with act_global_scale calibrated to 1/16 of the amax: scales hit 448
};

// gate_index per row: index 0..G-1 is a gate row, anything else copies residual.
enum class GatePattern {
  kAllValid,      // every row in [0, G)
  kPaddingRuns,   // runs of -1 (padded tokens) and trailing padding
  kIndexG,        // a quarter of the rows carry G (one past the table)
  kIntMin,        // a quarter carry INT32_MIN
  kIntMax,        // a quarter carry INT32_MAX
  kMixedInvalid,  // -1, G, INT_MIN, INT_MAX and valid rows interleaved
  kOneRow,        // every row uses gate row G-1
};

// act_smooth (contract section 12), one factor per input channel.
enum class SmoothPattern {
  kNone,       // not given: the seed's op
  kLogNormal,  // 2^N(0,1): SmoothQuant-like factors around 1, as calibration gives
  kPow2Block,  // one power of two in [2^-2, 2^2] per 16-column block: exact data stays exact
  kExtreme,    // a quarter of the channels +-0, -1, 1, subnormal, tiny, huge (x' overflows to Inf)
};

// "exact", "gauss", "heavy", "special", "saturate".
absl::string_view DataKindName(DataKind kind);
// "valid", "padruns", "idxG", "intmin", "intmax", "mixed", "onerow".
absl::string_view GatePatternName(GatePattern pattern);
// "", "lognormal", "pow2block", "extreme".
absl::string_view SmoothPatternName(SmoothPattern pattern);

// What to generate: the shape (shape.m = the problem's M) and how to fill it.
struct ProblemSpec {
  OpShape shape;
  DataKind data = DataKind::kGaussian;
  GatePattern gate = GatePattern::kAllValid;
  SmoothPattern smooth = SmoothPattern::kNone;
  // The low-rank branch (contract section 13): r = lora_down's rows, 0 for none. lora_down
  // ~ N(0, 1/K) and lora_up ~ N(0, 0.02^2) in bf16 (the branch about the GEMM's size); the exact
  // data kind gets zero factors (v = o exactly: bit-exact checks stay bit-exact).
  int lora_rank = 0;
};

// Bound on |x| of the standard Gaussian generator (the 65536-entry inverse-CDF table's end).
float GaussianBound();

// The (quantized) weight of one shape and data family, made once and shared between problems.
// Exact data: random codes, power-of-two scales (0.5 or 1), global scale 1, built directly.
// Other data: a bf16 Gaussian weight (std 0.02, a few x8 outlier rows) through the emulator's
// weight quantizer (docs/contract.md section 5). Thread-safe.
class WeightCache {
 public:
  explicit WeightCache(uint64_t seed) : seed_(seed) {}
  absl::StatusOr<std::shared_ptr<const QuantizedWeight>> Get(int64_t n, int64_t k, bool exact);

 private:
  uint64_t seed_;
  std::mutex mu_;
  std::map<std::tuple<int64_t, int64_t, bool>, std::shared_ptr<const QuantizedWeight>> cache_;
};

// One problem on host memory: the inputs of the op for a subset of a case's rows.
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
  std::vector<float> act_smooth;  // [k], empty when not given
  std::vector<uint16_t> lora_down, lora_up;  // bf16 [r, k], [n, r]; empty when not given
};

// The emulator's view of a problem; `residual` defaults to the problem's own.
OpInputs InputsOf(const Problem& p);
OpInputs InputsOf(const Problem& p, absl::Span<const uint16_t> residual);

// Generates rows `rows` (ascending, each in [0, spec.shape.m)) of the problem; uses up to
// `threads` threads.
absl::StatusOr<Problem> GenerateProblem(const ProblemSpec& spec, uint64_t seed,
                                        absl::Span<const int64_t> rows, WeightCache& weights,
                                        int threads);
// Every row, on every hardware thread, with a weight cache of its own (seeded by `seed`).
absl::StatusOr<Problem> GenerateProblem(const ProblemSpec& spec, uint64_t seed);

// gate_index of row `row` of a problem with M = m (row-deterministic; some patterns depend on m).
int32_t GateIndexFor(GatePattern pattern, uint64_t seed, int64_t row, int64_t m, int64_t g);

// act_global_scale for a data kind: 2688 / (bound of |attn_out|) (the "calibrated" value), a
// power of two for exact data, 16x the calibrated value for kSaturate.
float ActGlobalScaleFor(DataKind kind);

}  // namespace h3::testbed

#endif  // H3_HARNESS_TESTBED_PROBLEM_H_
