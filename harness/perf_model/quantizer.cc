// The quantizer: the fused kernel's quantizer warps (their rate and the start-up they cost the
// first MMAs) and the standalone quantize kernel the H200 calibration times.

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "harness/perf_model/model.h"
#include "harness/perf_model/model_internal.h"

namespace h3::perf_model {
namespace internal {
namespace {

// Aggregate attn_out read rate of the fused kernel's quantizer warps (bytes/s): the least of the
// issue rate, the loads in flight over the DRAM latency, and DRAM (which also takes the writes).
double FusedQuantRate(const Hardware& hw, const Design& d) {
  const double clk = hw.ClockHz();
  const double sms = hw.sms.value;
  const double issue = sms * d.quant_warps * hw.quant_warp_ipc.value * clk * 32.0 /
                       hw.quant_instr_per_block.value * 32.0;
  const double mlp = sms * d.quant_warps * 32.0 * d.quant_depth * 32.0 / hw.dram_latency_s.value;
  const double dram = hw.dram_bytes_per_s.value * 2.0 / (2.0 + 0.5 + 1.0 / 16);
  return std::min({issue, mlp, dram});
}

}  // namespace

double QuantIterSeconds(const Hardware& hw, const Design& d) {
  return hw.dram_latency_s.value +
         d.quant_depth * hw.quant_instr_per_block.value / hw.quant_warp_ipc.value / hw.ClockHz();
}

StartupTimes PredictStartup(const Hardware& hw, const Design& d, const Problem& p,
                            const StartupInputs& in) {
  const double sms = hw.sms.value;
  const double M = static_cast<double>(p.m), K = static_cast<double>(p.k);
  const double tiles = in.tiles, tiles_per_sm = in.tiles_per_sm, weight = in.weight;
  StartupTimes r;
  // Quantized rows for the first MMAs, then the first stage's TMA.
  r.fill = hw.tma_latency_s.value + in.stage_bytes / in.port;
  const double first_tiles = std::min(tiles, sms);
  double first_m_tiles = std::ceil(first_tiles / in.n_tiles);
  if (d.schedule == Schedule::kPhased && d.phases > 1) {
    // Groups g >= 1 begin on k-slices of tail tiles: their m-tiles too.
    first_m_tiles += std::ceil(sms * (d.phases - 1) / (2.0 * d.phases) / in.n_tiles);
  }
  const double first_rows = std::min(M, first_m_tiles * d.bm);
  // The first wave reads the weight columns of its n-tiles from DRAM (m-tile-major order).
  const double first_n_frac = std::min(1.0, first_tiles / in.n_tiles);
  double quant_ready = 0, keepup = 0;
  // The critical SM's first tile (or its whole share, if less than a tile).
  const double first_main = std::min(1.0, tiles_per_sm) * in.tile_main;
  if (!d.gemm_only && d.quant_order != QuantOrder::kNone) {
    const double q = FusedQuantRate(hw, d);
    r.quant_bytes_per_s = q;
    const double iter = QuantIterSeconds(hw, d);
    const double iters_per_row = std::ceil(K / 16 / (32.0 * d.quant_depth));
    const double row_bytes = K * 2;
    switch (d.quant_order) {
      case QuantOrder::kRoundRobinRows: {
        // Every quantizer warp claims a unit at once: an m-tile completes with its whole round.
        const double round_rows = sms * d.quant_warps * d.quant_rows_per_unit;
        const double rounds = std::ceil(first_rows / round_rows);
        quant_ready = std::max(rounds * d.quant_rows_per_unit * iters_per_row * iter,
                               std::min(M, rounds * round_rows) * row_bytes / q);
        break;
      }
      case QuantOrder::kFirstWaveRows: {
        const double round_rows = sms * d.quant_warps;
        quant_ready = std::max(std::ceil(first_rows / round_rows) * iters_per_row * iter,
                               first_rows * row_bytes / q);
        break;
      }
      case QuantOrder::kFirstWaveKChunks: {
        // First k-chunk of every first-wave row; the rest must stay ahead of the first tiles.
        const double chunk = d.quant_chunk_elems != nullptr
                                 ? std::min<double>(K, d.quant_chunk_elems(static_cast<int>(K)))
                                 : d.bk;
        quant_ready = std::max(iter, first_rows * chunk * 2 / q);
        keepup = std::max(0.0, first_rows * row_bytes / q - quant_ready - first_main);
        break;
      }
      case QuantOrder::kNone:
        break;
    }
    // Cold start: the weight comes from DRAM during the first tiles, beside the quantizer.
    const double cold =
        (weight * first_n_frac + first_rows * K * (2 + 0.5 + 1.0 / 16)) / hw.dram_bytes_per_s.value;
    keepup = std::max(keepup, cold - quant_ready - first_main);
  } else {
    const double cold =
        (weight * first_n_frac + first_rows * K * (0.5 + 1.0 / 16)) / hw.dram_bytes_per_s.value;
    keepup = std::max(0.0, cold - first_main);
  }
  r.quant_ready = quant_ready;
  r.keepup = keepup;
  return r;
}

}  // namespace internal

QuantizeStandalone PredictStandaloneQuantize(const Hardware& hw, int64_t m, int64_t k,
                                             double issue_efficiency) {
  QuantizeStandalone q;
  const double elems = static_cast<double>(m) * k;
  const double read = elems * 2, total = elems * (2 + 0.5 + 1.0 / 16);
  const double clk = hw.ClockHz();
  // Full occupancy: every sub-partition issues; one block per thread.
  const double issue_read_bps = hw.sms.value * internal::kSubPartitions * clk * issue_efficiency *
                                32.0 / hw.quant_instr_per_block.value * 32.0;
  const double t_issue = read / issue_read_bps;
  const double t_dram = total / hw.dram_bytes_per_s.value;
  // A launch and a DRAM round trip no size hides (assumption: ~3 us launch + ramp + tail).
  const double floor = 3e-6 + 2 * hw.dram_latency_s.value;
  q.seconds = std::max(t_issue, t_dram) + floor;
  q.bench_gbps = total / q.seconds * 1e-9;
  q.issue_bound_gbps = issue_read_bps * (total / read) * 1e-9;
  q.dram_bound_gbps = hw.dram_bytes_per_s.value * 1e-9;
  return q;
}

}  // namespace h3::perf_model
