// Issue 30's options in the SM120 model (options.h): the terms (a)-(e) over the plain op's
// prediction, each with its assumption. A model, NOT a measurement.

#include "harness/perf_model/options.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "harness/perf_model/model.h"
#include "harness/perf_model/model_internal.h"
#include "kernels/device/work_units.h"

namespace h3::perf_model {
namespace {

using internal::CeilDivI;

// Rows of a branch unit: the n8 of the down-projection's m16n8k16 (kernels/device/lowrank.cuh;
// work_units.h's kBranchUnitRows in the kernel, not included here).
constexpr int kBranchUnitRows = 8;
// One iteration of BranchDownUnit's k loop: 32 columns of the unit's 8 rows against 32 ranks (one
// pass of two m16 tiles; r = 48, 64 take two passes). `#pragma unroll 1`: each iteration's five
// 16-byte loads (x', 4 x lora_down) are issued, then its 4 MMAs wait for them, so every iteration
// pays one L2 round trip [ASSUMED: no software pipelining across iterations; the SASS would show
// it] plus its issue: 5 LDG.128 + 4 HMMA + ~8 address / loop instructions; act_smooth adds 2
// LDG.128 of factors and 4 SmoothBf16Pair (~5 each).
constexpr double kDownColsPerIter = 32, kDownRanksPerPass = 32;
constexpr double kDownInstrPerIter = 17, kDownSmoothInstrPerIter = 22;
// act_smooth per 16-element block in the quantizer (SmoothedInput::Apply): 8 F2FP.BF16 (the
// smoothed instances' SASS: +32 per 4 blocks in flight, NOTES.md), 16 FMUL, 16 bf16 -> f32 unpacks,
// 4 LDG.128 of factors = 44 [ASSUMED beyond the F2FP count; range 32 .. 56].
constexpr double kSmoothInstrPerBlock[3] = {32, 44, 56};  // low, default, high

double Pick(const Cited& c, OptionsReading r, bool favourable_is_high) {
  if (!c.HasRange() || r == OptionsReading::kDefault) return c.value;
  const bool want_high = (r == OptionsReading::kLow) == favourable_is_high;
  return want_high ? c.high : c.low;
}

// The loaded latency of an L2 hit at utilisation rho, as Predict loads the TMA's (model.cc).
double Loaded(const Hardware& hw, double latency, double rho) {
  rho = std::min(rho, internal::kMaxL2Utilisation);
  return latency * (1 + hw.l2_queueing.value * rho / (1 - rho));
}

// The quantizer's unit map (kernels/device/work_units.h) for `rows`-row units.
struct UnitMap {
  int64_t groups = 0, front_groups = 0, front_m_tiles = 0;
  int chunks = 1;
  double chunk_elems = 0;
  double grid = 0;  // persistent CTAs: min(SMs, tiles)
};
UnitMap Units(const Hardware& hw, const Design& d, const Problem& p, const Prediction& pr,
              int rows) {
  UnitMap u;
  u.grid = std::min<double>(hw.sms.value, static_cast<double>(pr.tiles));
  u.chunk_elems = static_cast<double>(p.k);
  if (d.quant_order == QuantOrder::kFirstWaveKChunks) {
    u.chunk_elems = d.quant_chunk_elems != nullptr
                        ? std::min<double>(p.k, d.quant_chunk_elems(static_cast<int>(p.k)))
                        : d.bk;
  }
  u.chunks = static_cast<int>(std::ceil(p.k / u.chunk_elems));
  u.groups = CeilDivI(p.m, rows);
  u.front_m_tiles = kernels::FrontMTiles(static_cast<uint32_t>(u.grid),
                                         static_cast<uint32_t>(pr.n_tiles), pr.m_tiles);
  u.front_groups = std::min(u.groups, u.front_m_tiles * (kernels::kWorkTileM / rows));
  return u;
}

// Seconds one quantizer warp spends on a unit of `rows` x `cols`: its quantizer iterations
// (quantizer.cc: a DRAM round trip + quant_depth blocks per lane) and, with the branch, its
// down-projection iterations.
double UnitSeconds(const Hardware& hw_q, const Design& d, int rows, double cols, int rank,
                   double down_iter) {
  const double quant_iters = std::ceil(rows * cols / 16 / 32 / d.quant_depth);
  const double down_iters =
      rank > 0 ? std::ceil(cols / kDownColsPerIter) * std::ceil(rank / kDownRanksPerPass) : 0;
  return quant_iters * internal::QuantIterSeconds(hw_q, d) + down_iters * down_iter;
}

// The latest publication of any unit after the GEMM needs it (seconds; <= 0: none late). The
// quantizer warps claim units in order from one counter (work_units.h): each unit goes to the warp
// that frees first and is published one unit's time later. Needs, from t0 (the first MMA): chunk
// c >= 1 of a front m-tile when the first tile's main loop reaches it; a later m-tile's rows when
// the first wave that runs one of its tiles starts. Chunk 0 of the front is the start-up ((c)).
double Lateness(const Design& d, const Prediction& pr, const UnitMap& u, int rows, double t0,
                double t_front0, double t_front, double t_rest, int warps) {
  const double tile_period = pr.tile_main + pr.epilogue_exposed_tile;
  std::priority_queue<double, std::vector<double>, std::greater<double>> free_at;
  for (int w = 0; w < warps; ++w) free_at.push(0);
  double late = -1e30;  // no unit: never late
  const int64_t front_units = u.front_groups * u.chunks;
  const int64_t units = front_units + (u.groups - u.front_groups);
  for (int64_t i = 0; i < units; ++i) {
    double t_unit, need = 0;
    bool timed = true;  // chunk 0 of the front: the start-up's
    if (i < front_units) {
      const int64_t chunk = i / std::max<int64_t>(1, u.front_groups);
      t_unit = chunk == 0 ? t_front0 : t_front;
      timed = chunk > 0;
      need = t0 + chunk * u.chunk_elems / (pr.k_blocks * d.bk) * pr.tile_main;
    } else {
      t_unit = t_rest;
      const int64_t group = u.front_groups + (i - front_units);
      const int64_t m_tile = group * rows / kernels::kWorkTileM;
      const double wave = std::floor(static_cast<double>(m_tile * pr.n_tiles) / u.grid);
      need = t0 + wave * tile_period;
    }
    const double ready = free_at.top() + t_unit;
    free_at.pop();
    free_at.push(ready);
    if (timed) late = std::max(late, ready - need);
  }
  return late;
}

}  // namespace

OptionsCost PredictOptions(const Hardware& hw, const Design& d, const Problem& p, const Options& o,
                           OptionsReading reading) {
  OptionsCost c;
  c.options = o;
  c.reading = reading;
  const double M = static_cast<double>(p.m), N = static_cast<double>(p.n),
               K = static_cast<double>(p.k), r = o.lora_rank;
  const double sms = hw.sms.value, clk = hw.ClockHz();
  const Prediction pr = Predict(hw, d, p);
  c.t_plain = pr.t_total;
  const int ri = reading == OptionsReading::kLow ? 0 : reading == OptionsReading::kDefault ? 1 : 2;

  // act_smooth's quantizer: more instructions per block (the quantizer model's rate and start-up
  // see them); the options' units below are quantized by it too.
  Hardware hw_q = hw;
  if (o.act_smooth) hw_q.quant_instr_per_block.value += kSmoothInstrPerBlock[ri];

  // (d) act_smooth: Predict with the smoothed quantizer and the factors each unit reads from L2
  // (its k-range x 4 B; the unit's rows share them in L1), again by the down-projection.
  if (o.act_smooth) {
    const double rows = r > 0 ? kBranchUnitRows : d.quant_rows_per_unit;
    c.smooth_bytes =
        std::ceil(M / rows) * K * 4 + (r > 0 ? std::ceil(M / kBranchUnitRows) * K * 4 : 0);
    c.smooth = internal::PredictWithExtraL2(hw_q, d, p, c.smooth_bytes).t_total - pr.t_total;
  }
  if (o.lora_rank <= 0) {
    c.t_options = c.t_plain + c.smooth;
    return c;
  }

  // (b) bytes, as the kernel moves them (lowrank.cuh).
  const UnitMap u = Units(hw, d, p, pr, kBranchUnitRows);
  const double front_rows = std::min(M, static_cast<double>(u.front_m_tiles * kernels::kWorkTileM));
  const double partial_rows = front_rows * u.chunks + (M - front_rows);  // slots written / read
  c.bytes.lora_down = static_cast<double>(u.groups) * K * r * 2;
  c.bytes.x_reread = M * K * 2;
  c.bytes.partial_write = partial_rows * r * 4;
  c.bytes.partial_read = N / d.WarpTileN() * partial_rows * r * 4;
  c.bytes.lora_up = static_cast<double>(pr.m_tiles) * d.warps_m * N * r * 2;
  // Through the model's L2 and TMA-latency terms (Predict); at high, x's re-read also misses L2
  // (the quantizer read it with ld.global.cs, evict-first) and comes from DRAM [ASSUMED: default
  // an L2 hit, it was read just before].
  const Prediction q = internal::PredictWithExtraL2(hw, d, p, c.bytes.Total());
  double t_bytes = q.t_total;
  if (reading == OptionsReading::kHigh) {
    t_bytes = std::max(q.t_compute, q.t_dram + c.bytes.x_reread / hw.dram_bytes_per_s.value) +
              hw.kernel_overhead_s.value;
  }
  c.bytes_s = t_bytes - pr.t_total;

  // (a) tensor: 2 M K r (down, every unit's MMAs use all their rows) + 2 M N r (up) FLOP at the
  // bf16 rate. Down: the units are spread over every SM's quantizer warps; up: the critical SM's
  // tiles. Default (and high): added serially, the pipes being shared and the plain main loop
  // MMA-bound (the model's limiter), so every bf16 MMA takes NVFP4 slots. Low: it fills the tensor
  // pipes' idle time of the plain op's critical SM (start-up, exposed epilogue, a period longer
  // than its MMAs), all of it, which the quantizer warps cannot choose: an optimistic bound.
  c.flop_down = 2 * M * K * r;
  c.flop_up = 2 * M * N * r;
  c.bf16_flop_per_clk_per_sm = Pick(hw.bf16_mma_flop_per_clk_per_sm, reading, true);
  const double rate_sm = c.bf16_flop_per_clk_per_sm * clk;
  c.tensor_serial = (c.flop_down / sms + pr.tiles_per_sm * 2.0 * d.bm * d.bn * r) / rate_sm;
  c.tensor_idle = std::max(
      0.0, pr.t_compute - pr.tiles_per_sm * static_cast<double>(pr.k_blocks) * pr.stage.tensor);
  c.tensor = reading == OptionsReading::kLow ? std::max(0.0, c.tensor_serial - c.tensor_idle)
                                             : c.tensor_serial;

  // The down-projection's iterations: one L2 round trip each (kDownInstrPerIter's comment).
  const double l2_lat = Pick(hw.l2_latency_s, reading, false);
  const double issue = (kDownInstrPerIter + (o.act_smooth ? kDownSmoothInstrPerIter : 0)) /
                       hw.quant_warp_ipc.value / clk;
  c.down_iter_front_s = l2_lat + issue;  // front chunk 0: before the GEMM, the L2 unloaded

  // (c) start-up: the first MMAs wait for chunk 0 of their m-tile; with the branch its units are
  // 8 rows (the plain op's d.quant_rows_per_unit) and each is down-projected before its publish.
  const int plain_rows = d.quant_rows_per_unit;
  const UnitMap u_plain = Units(hw, d, p, pr, plain_rows);
  const double front0_plain = UnitSeconds(hw_q, d, plain_rows, u_plain.chunk_elems, 0, 0);
  const double front0 =
      UnitSeconds(hw_q, d, kBranchUnitRows, u.chunk_elems, o.lora_rank, c.down_iter_front_s);
  c.startup = std::max(0.0, front0 - front0_plain);

  // (e) keep-up: every later unit, with and without the branch, against when the GEMM needs it.
  const int warps = static_cast<int>(sms) * d.quant_warps;
  c.lateness_plain = Lateness(d, pr, u_plain, plain_rows, pr.t_startup, front0_plain,
                              UnitSeconds(hw_q, d, plain_rows, u_plain.chunk_elems, 0, 0),
                              UnitSeconds(hw_q, d, plain_rows, K, 0, 0), warps);
  const double t_fixed = c.t_plain + c.tensor + c.bytes_s + c.startup + c.smooth;
  // The op's time when the later units' down-projection loads see the L2 at utilisation rho.
  auto at_rho = [&](double rho) {
    c.down_iter_s = Loaded(hw, l2_lat, rho) + issue;
    c.unit_front_s =
        UnitSeconds(hw_q, d, kBranchUnitRows, u.chunk_elems, o.lora_rank, c.down_iter_s);
    c.unit_rest_s = UnitSeconds(hw_q, d, kBranchUnitRows, K, o.lora_rank, c.down_iter_s);
    c.lateness_options = Lateness(d, pr, u, kBranchUnitRows, pr.t_startup + c.startup, front0,
                                  c.unit_front_s, c.unit_rest_s, warps);
    c.keepup = std::max(0.0, c.lateness_options) - std::max(0.0, c.lateness_plain);
    return t_fixed + c.keepup;
  };
  // Their L2 utilisation [ASSUMED]: low, none; high, the main loop's with the branch's bytes (the
  // stage's rho, capped as Predict caps it); default, the call's SM-side L2 bytes over the options'
  // own time (a later publication stretches the call and unloads the L2): the fixed point of
  // t = at_rho(bytes / (t x L2 bandwidth)), by bisection (at_rho grows with rho, rho falls with t).
  if (reading == OptionsReading::kLow) {
    c.t_options = at_rho(0);
  } else if (reading == OptionsReading::kHigh) {
    c.t_options = at_rho(q.stage.l2_utilisation);
  } else {
    const double l2_bytes = q.l2_bytes_total + c.smooth_bytes;
    auto rho_at = [&](double t) { return l2_bytes / (t * hw.l2_bytes_per_s.value); };
    double lo = at_rho(0), hi = at_rho(internal::kMaxL2Utilisation);
    for (int i = 0; i < 60; ++i) {
      const double mid = 0.5 * (lo + hi);
      (at_rho(rho_at(mid)) > mid ? lo : hi) = mid;
    }
    c.t_options = at_rho(rho_at(hi));
  }
  return c;
}

std::string OptionsLine(const Hardware& hw, const Design& d, int64_t m, const Options& o) {
  Problem p;
  p.m = m;
  const OptionsCost lo = PredictOptions(hw, d, p, o, OptionsReading::kLow);
  const OptionsCost c = PredictOptions(hw, d, p, o, OptionsReading::kDefault);
  const OptionsCost hi = PredictOptions(hw, d, p, o, OptionsReading::kHigh);
  const double pct = 100 / c.t_plain;
  return absl::StrFormat(
      "options: %s M=%d r=%d%s cost %+.1f%% (tensor %+.1f%%, bytes %+.1f%%, start-up %+.1f%%, "
      "keep-up %+.1f%%, smooth %+.1f%%) low %+.1f%% high %+.1f%%",
      hw.name.substr(0, hw.name.find(" (")), m, o.lora_rank, o.act_smooth ? " smooth" : "",
      100 * c.Cost(), c.tensor * pct, c.bytes_s * pct, c.startup * pct, c.keepup * pct,
      c.smooth * pct, 100 * lo.Cost(), 100 * hi.Cost());
}

}  // namespace h3::perf_model
