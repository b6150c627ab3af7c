// The latency probe (tma_latency.h) as a table: each round trip in clocks and ns, the TMA's
// fixed latency and per-SM rate fitted over its sizes, that latency beyond an L2 hit, and the
// stage's round trip with every SM loading at once against the L2 bandwidth it drew, closed
// rings and stages issued at a set rate.
//   ./bazelw run -c opt //harness/bench:tma_latency   (or .dev/bin/tma_latency on a GPU machine)

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "harness/bench/tma_latency.h"

namespace {

// Least squares ns = a + bytes / rate over the rows whose `what` starts with `prefix`.
struct Line {
  double fixed_ns = 0, bytes_per_ns = 0;
  int n = 0;
};
Line FitLine(const std::vector<h3::bench::RoundTrip>& rows, const char* prefix,
             double clocks_per_ns) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  Line l;
  for (const h3::bench::RoundTrip& r : rows) {
    if (std::strncmp(r.what, prefix, std::strlen(prefix)) != 0) continue;
    const double x = r.bytes, y = r.median_clk / clocks_per_ns;
    sx += x, sy += y, sxx += x * x, sxy += x * y, ++l.n;
  }
  if (l.n < 2) return l;
  const double slope = (l.n * sxy - sx * sy) / (l.n * sxx - sx * sx);
  l.fixed_ns = (sy - slope * sx) / l.n;
  l.bytes_per_ns = 1 / slope;
  return l;
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    std::fprintf(stderr, "tma_latency: no CUDA device\n");
    return 1;
  }
  if (prop.major < 9) {
    std::fprintf(stderr, "tma_latency: needs TMA (compute capability 9.0 or newer), got %d.%d\n",
                 prop.major, prop.minor);
    return 1;
  }
  h3::bench::TmaLatencyReport rep;
  const cudaError_t e = h3::bench::MeasureTmaLatency(&rep);
  if (e != cudaSuccess) {
    std::fprintf(stderr, "tma_latency: %s\n", cudaGetErrorString(e));
    return 1;
  }
  std::printf("device: %s, sm_%d%d, %d SMs\n\n", prop.name, prop.major, prop.minor,
              prop.multiProcessorCount);
  // Round trips in ns at the chase's clock ratio (its kernel runs milliseconds; theirs tens of
  // microseconds, where a coarse %globaltimer would skew their own ratio).
  const double ghz = rep.round_trips[0].clocks_per_ns;
  std::printf("%-46s %7s %9s %9s %9s %8s %5s\n", "round trip (one thread, unloaded)", "bytes",
              "med clk", "min clk", "med ns", "GHz", "SM");
  for (const h3::bench::RoundTrip& r : rep.round_trips)
    std::printf("%-46s %7u %9.0f %9.0f %9.1f %8.3f %5d\n", r.what, r.bytes, r.median_clk, r.min_clk,
                r.median_clk / ghz, r.clocks_per_ns, r.smid);
  const double l2_ns = rep.round_trips[0].median_clk / ghz;
  std::printf("\nfits, ns = fixed + bytes / rate (median per size, try_wait):\n");
  for (const char* prefix : {"cp.async.bulk 1-D", "cp.async.bulk.tensor 2-D"}) {
    const Line l = FitLine(rep.round_trips, prefix, ghz);
    std::printf(
        "  %-26s fixed %6.1f ns (%+6.1f ns beyond the L2 chase's %.1f), rate %5.1f B/ns "
        "= %5.1f B/clk per SM (%d sizes)\n",
        prefix, l.fixed_ns, l.fixed_ns - l2_ns, l2_ns, l.bytes_per_ns, l.bytes_per_ns / ghz, l.n);
  }
  // The wall: the closed rings' best rate. rho = a row's rate / the wall; q in the model's
  // latency = base (1 + q rho / (1 - rho)) only well below the wall (rho < 0.9: at the wall the
  // latency is Little's law, stages x bytes / rate, and 1 - rho is noise), base the stage's
  // round trip on one SM alone with one in flight (the same rows and code).
  double wall = 0, base = 0;
  for (const h3::bench::Loaded& l : rep.loaded) {
    if (l.period_ns == 0) wall = std::max(wall, l.bytes_per_s);
    if (l.ctas == 1 && l.slots == 1) base = l.mean_clk / l.clocks_per_ns;
  }
  std::printf(
      "\nloaded: %u-byte stages from each CTA's own rows, one thread per CTA; period 0: a "
      "closed ring of `slots` in flight, else a stage issued every period\n",
      rep.loaded.empty() ? 0u : rep.loaded[0].stage_bytes);
  std::printf("%5s %6s %9s %10s %10s %9s %11s %7s %7s %6s\n", "CTAs", "slots", "period ns",
              "mean clk", "mean ns", "TB/s", "B/clk/SM", "rho", "q", "1/SM");
  for (const h3::bench::Loaded& l : rep.loaded) {
    const double ns = l.mean_clk / l.clocks_per_ns;
    const double rho = l.bytes_per_s / wall;
    char q[16] = "-";
    if (l.ctas > 1 && rho < 0.9) {
      std::snprintf(q, sizeof(q), "%.3f", (ns / base - 1) * (1 - rho) / rho);
    }
    std::printf("%5d %6d %9u %10.0f %10.1f %9.3f %11.1f %7.3f %7s %6s\n", l.ctas, l.slots,
                l.period_ns, l.mean_clk, ns, l.bytes_per_s * 1e-12,
                l.bytes_per_s / l.ctas / (l.clocks_per_ns * 1e9), rho, q,
                l.distinct_sms ? "yes" : "NO");
  }
  return 0;
}
