// One Google Benchmark run of one contender at one M: prepare, check once, time with rotating
// inputs, and the roofline / ratio counters.

#ifndef H3_HARNESS_BENCH_RUNNER_H_
#define H3_HARNESS_BENCH_RUNNER_H_

#include <cstdint>

#include "benchmark/benchmark.h"
#include "harness/bench/contenders.h"
#include "harness/bench/context.h"

namespace h3::bench {

// Skips (with the reason) when the contender cannot run here. A failed check does not skip: the
// time is still reported, with check_ok = 0.
void RunBenchmark(benchmark::State& state, BenchContext& ctx, const Contender& contender,
                  int64_t m);

}  // namespace h3::bench

#endif  // H3_HARNESS_BENCH_RUNNER_H_
