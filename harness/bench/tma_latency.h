// A latency probe of the memory path the performance model (harness/perf_model) leaves as
// assumptions: the L2 load round trip, the TMA round trip of a copy (issue -> mbarrier
// complete_tx) against its size, and the GEMM stage's round trip under load from every SM. Run on
// any device (the H200 here; an SM12x part where one exists): the model's inputs then come from
// a measurement of that device rather than from a range. Host-callable only: plain C++ includes
// this header.

#ifndef H3_HARNESS_BENCH_TMA_LATENCY_H_
#define H3_HARNESS_BENCH_TMA_LATENCY_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

namespace h3::bench {

// One measured round trip kind, in SM clocks (clocks_per_ns: that kernel's clock64 / %globaltimer
// over its whole run; the tool converts with the chase's, the longest).
struct RoundTrip {
  const char* what;   // e.g. "cp.async.bulk 1-D"
  uint32_t bytes;     // bytes per transfer (0 for the load chase)
  double median_clk;  // median over the repetitions (the chase: its mean)
  double min_clk;
  double clocks_per_ns;
  int smid;  // the SM it ran on
};

// Every CTA (one per SM) keeping up to `slots` stage loads in flight, each stage the GEMM's A box
// (128 x 64 B) and B box (256 x 64 B) on one mbarrier from the CTA's own rows, a stage issued
// every period_ns (0: whenever a slot is free, a closed ring): the TMA round trip when all of
// them pull from L2 at once.
struct Loaded {
  int ctas;
  int slots;
  uint32_t period_ns;
  uint32_t stage_bytes;
  double mean_clk;     // mean issue -> complete of a stage
  double bytes_per_s;  // all CTAs' stage bytes / the kernel's %globaltimer span
  double clocks_per_ns;
  bool distinct_sms;  // every CTA on its own SM (%smid)
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
