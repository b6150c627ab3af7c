// A latency probe of the memory path the performance model (harness/perf_model) leaves as
// assumptions: the L2 and DRAM load round trips, the TMA round trip of a stage (issue ->
// mbarrier complete_tx) against its size, and that round trip under load from every SM. Run on
// any device (the H200 here; an SM12x part where one exists): the model's inputs then come from
// a measurement of that device rather than from a range. Host-callable only: plain C++ includes
// this header.

#ifndef H3_HARNESS_BENCH_TMA_LATENCY_H_
#define H3_HARNESS_BENCH_TMA_LATENCY_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace h3::bench {

// One measured round trip kind, in SM clocks; ns through the same kernel's clock64 / %globaltimer
// ratio (clocks_per_ns).
struct RoundTrip {
  const char* what;   // e.g. "ld.global.cg chase, 8 MiB (L2)"
  uint32_t bytes;     // bytes per transfer (0 for a load chase)
  double median_clk;  // median over the repetitions
  double min_clk;
  double clocks_per_ns;
};

// A ring of `stages` stage loads in flight on each of `ctas` CTAs (one per SM), each stage the
// GEMM's A box (128 x 64 B) and B box (256 x 64 B) on one mbarrier: what every SM's TMA round trip
// becomes when all of them pull from L2 at once.
struct Loaded {
  int ctas;
  int stages;
  uint32_t stage_bytes;
  double mean_clk;       // mean issue -> complete of a stage
  double bytes_per_s;    // all CTAs' stage bytes / the kernel's %globaltimer span
  double clocks_per_ns;
};

struct TmaLatencyReport {
  std::vector<RoundTrip> round_trips;
  std::vector<Loaded> loaded;
};

// Runs every measurement on the current device (sm_90 or newer: TMA). Returns the first CUDA
// error, if any, with the report filled up to it.
cudaError_t MeasureTmaLatency(TmaLatencyReport* report);

}  // namespace h3::bench

#endif  // H3_HARNESS_BENCH_TMA_LATENCY_H_
