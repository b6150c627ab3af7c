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

// Rows of a branch unit: the n8 of the down-projection's m16n8k16 (kernels/device/lowrank.cuh),
// the kernel's own constant. Every branch unit is 8 rows x ONE k-chunk
// (WorkUnits<8, kChunkUnits>), wherever it is.
constexpr int kBranchUnitRows = kernels::kBranchUnitRows;
static_assert(kBranchUnitRows == 8, "kDownColsPerIter .. and the tests assume 8-row units");
// One iteration of BranchDownUnit's k loop: 32 columns of the unit's 8 rows against 32 ranks (one
// pass of two m16 tiles; r = 48, 64 take two passes). `#pragma unroll 1`: each iteration's five
// 16-byte loads (x', 4 x lora_down) are issued, then its 4 MMAs wait for them, so every iteration
// pays one L2 round trip [ASSUMED: no software pipelining across iterations; the SASS would show
// it] plus its issue: 5 LDG.128 + 4 HMMA + ~8 address / loop instructions; act_smooth adds 2
// LDG.128 of factors and 4 SmoothBf16Pair (~5 each). A chunk of 1024 columns (K = 7168): 32.
constexpr double kDownColsPerIter = 32, kDownRanksPerPass = 32;
constexpr double kDownInstrPerIter = 17, kDownSmoothInstrPerIter = 22;
// The arrival (BranchDownUnit's tail, every unit when K has more than one chunk): one lane's
// atomicAdd on the group's counter, whose return value the warp waits for: one L2 round trip. The
// membar.gl before it waits for the unit's codes and partials, as the plain op's PublishUnit waits
// for its codes: counted on neither side (the quantizer model has no publish term).
constexpr int kArrivalRoundTrips = 1;
// The group's last arrival adds the group's partials: per lane ceil(8 r / 4 / 32) = ceil(r / 16)
// steps of 4 ranks of one row; a step loads slot 0 and slots 1 .. chunks - 1 in a loop unrolled
// by 4 (predicated), so its independent loads go in ceil((chunks - 1) / 4) batches, one L2 round
// trip each [ASSUMED: ptxas hoists a batch's loads above its adds, slot 0's with the first]; the
// steps one after another (a loop of runtime trip count) [ASSUMED; low: overlapped]; then l's
// 8-byte stores, which PublishUnit's membar.gl waits for: one more round trip. Issue per step:
// chunks LDG + 4 (chunks - 1) FADD + 2 F2FP + 1 STG + ~10 index / loop = 5 chunks + 9.
constexpr double kCombineInstrPerStepBase = 9, kCombineInstrPerStepPerChunk = 5;
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

// The quantizer's unit map (kernels/device/work_units.h) for `rows`-row units; chunk_units: the
// branch's kChunkUnits, every unit one chunk, else the later groups one unit of all K.
struct UnitMap {
  int rows = 0;
  bool chunk_units = false;
  int64_t m = 0, groups = 0, front_groups = 0, front_m_tiles = 0;
  int64_t m_tiles = 0, n_tiles = 0, tiles = 0, grid = 0;  // grid: persistent CTAs, min(SMs, tiles)
  int chunks = 1;
  double chunk_elems = 0, k = 0;
  int64_t Count() const {
    return front_groups * chunks + (groups - front_groups) * (chunk_units ? chunks : 1);
  }
  // Unit u's group and chunks [begin, end): a replica of WorkUnits<rows, chunk_units>::Unit
  // (options_test checks them equal). The front (the first front_groups groups) chunk-major: chunk
  // 0 of each front group, then chunk 1, ...; chunk_units: so is every later block of front_groups
  // groups in turn (the last may be partial), block b's chunk 0 of each of its groups, then its
  // chunk 1, ..., before block b + 1; else each later group one unit of all chunks, in order.
  void Decode(int64_t u, int64_t* group, int* begin, int* end) const {
    const int64_t front_units = front_groups * chunks;
    if (chunk_units) {
      const int64_t block = u / front_units, v = u % front_units;
      const int64_t first = block * front_groups;
      const int64_t block_groups = std::min(front_groups, groups - first);
      *group = first + v % block_groups;
      *begin = static_cast<int>(v / block_groups);
      *end = *begin + 1;
    } else if (u < front_units) {
      *group = u % front_groups;
      *begin = static_cast<int>(u / front_groups);
      *end = *begin + 1;
    } else {
      *group = front_groups + (u - front_units);
      *begin = 0;
      *end = chunks;
    }
  }
  double Cols(int begin, int end) const {
    return std::min(k, end * chunk_elems) - std::min(k, begin * chunk_elems);
  }
};
UnitMap Units(const Hardware& hw, const Design& d, const Problem& p, const Prediction& pr, int rows,
              bool chunk_units) {
  UnitMap u;
  u.rows = rows;
  u.chunk_units = chunk_units;
  u.m = p.m;
  u.k = static_cast<double>(p.k);
  u.m_tiles = pr.m_tiles;
  u.n_tiles = pr.n_tiles;
  u.tiles = pr.tiles;
  u.grid = std::min<int64_t>(static_cast<int64_t>(hw.sms.value), pr.tiles);
  u.chunk_elems = u.k;
  if (d.quant_order == QuantOrder::kFirstWaveKChunks) {
    u.chunk_elems = d.quant_chunk_elems != nullptr
                        ? std::min<double>(u.k, d.quant_chunk_elems(static_cast<int>(p.k)))
                        : d.bk;
  }
  u.chunks = static_cast<int>(std::ceil(u.k / u.chunk_elems));
  u.groups = CeilDivI(p.m, rows);
  u.front_m_tiles = kernels::FrontMTiles(static_cast<uint32_t>(u.grid),
                                         static_cast<uint32_t>(pr.n_tiles), pr.m_tiles);
  u.front_groups = std::min(u.groups, u.front_m_tiles * (kernels::kWorkTileM / rows));
  return u;
}

// Seconds one quantizer warp spends quantizing `rows` x `cols` (quantizer.cc: a DRAM round trip +
// quant_depth blocks per lane per iteration) and, with the branch, down-projecting them.
double UnitSeconds(const Hardware& hw_q, const Design& d, int rows, double cols, int rank,
                   double down_iter) {
  const double quant_iters = std::ceil(rows * cols / 16 / 32 / d.quant_depth);
  const double down_iters =
      rank > 0 ? std::ceil(cols / kDownColsPerIter) * std::ceil(rank / kDownRanksPerPass) : 0;
  return quant_iters * internal::QuantIterSeconds(hw_q, d) + down_iters * down_iter;
}

using UnitTime = std::function<double(int64_t group, int begin, int end)>;

// When each chunk of each m-tile is published (from the kernel's start; [m_tile * chunks + c]),
// and every unit's time over the warps (busy). The quantizer warps claim the units in increasing
// order from one counter (work_units.h), each the warp that frees first, and publish a unit its
// time later; a chunk of an m-tile is published with the last of its groups' units.
std::vector<double> Published(const UnitMap& u, int64_t warps, const UnitTime& seconds,
                              double* busy) {
  std::vector<double> published(static_cast<size_t>(u.m_tiles * u.chunks), -1e30);
  std::priority_queue<double, std::vector<double>, std::greater<double>> free_at;
  for (int64_t w = 0; w < warps; ++w) free_at.push(0);
  const int64_t groups_per_m_tile = kernels::kWorkTileM / u.rows;
  double total = 0;
  for (int64_t i = 0, n = u.Count(); i < n; ++i) {
    int64_t group;
    int begin, end;
    u.Decode(i, &group, &begin, &end);
    const double t = seconds(group, begin, end);
    total += t;
    const double ready = free_at.top() + t;
    free_at.pop();
    free_at.push(ready);
    const int64_t m_tile = group / groups_per_m_tile;
    for (int c = begin; c < end; ++c) {
      double& p = published[static_cast<size_t>(m_tile * u.chunks + c)];
      p = std::max(p, ready);
    }
  }
  *busy = total / static_cast<double>(warps);
  return published;
}

struct Replay {
  double stall = 0;         // the latest CTA's finish after the unstalled one's
  double lateness = -1e30;  // the latest publication after its unstalled need
};

// The GEMM against the publications, per CTA: CTA b runs tiles b, b + grid, ... (the static
// persistent schedule, m-tile-major), each tile's main loop reaching chunk c after the share of K
// before it and waiting there until (its m-tile, c) is published; a wait delays the rest of that
// CTA, and only the latest CTA's finish counts: a late chunk on a CTA with a tile less to run, or
// early enough that the publications catch up, is hidden. Chunk 0 of the front m-tiles is the
// start-up's ((c), in t0). The need of the lateness: the first tile of the m-tile, unstalled.
Replay ReplayGemm(const UnitMap& u, const Prediction& pr, const std::vector<double>& published,
                  double t0) {
  Replay r;
  const double period = pr.tile_main + pr.epilogue_exposed_tile;
  std::vector<double> before(u.chunks + 1, 0);  // the main loop's share before chunk c
  for (int c = 0; c < u.chunks; ++c) before[c + 1] = before[c] + u.Cols(c, c + 1) / u.k;
  auto ready = [&](int64_t m_tile, int c) {
    if (c == 0 && m_tile < u.front_m_tiles) return -1e30;
    return published[static_cast<size_t>(m_tile * u.chunks + c)];
  };
  double finish = -1e30, unstalled = -1e30;
  for (int64_t b = 0; b < u.grid; ++b) {
    double t = t0, t_free = t0;  // with the waits, and the same sums without them
    for (int64_t i = b; i < u.tiles; i += u.grid) {
      const int64_t m_tile = i / u.n_tiles;
      for (int c = 0; c < u.chunks; ++c) {
        const double run = (before[c + 1] - before[c]) * pr.tile_main;
        t = std::max(t, ready(m_tile, c)) + run;
        t_free += run;
      }
      t += pr.epilogue_exposed_tile;
      t_free += pr.epilogue_exposed_tile;
    }
    finish = std::max(finish, t);
    unstalled = std::max(unstalled, t_free);
  }
  r.stall = std::max(0.0, finish - unstalled);
  for (int64_t mt = 0; mt < u.m_tiles; ++mt) {
    const double wave = std::floor(static_cast<double>(mt * u.n_tiles) / u.grid);
    for (int c = 0; c < u.chunks; ++c) {
      const double need = t0 + wave * period + before[c] * pr.tile_main;
      r.lateness = std::max(r.lateness, ready(mt, c) - need);
    }
  }
  return r;
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

  // (b) bytes, as the kernel moves them (lowrank.cuh). The arrival counters' atomics (4 B a unit)
  // are left out.
  const UnitMap u = Units(hw, d, p, pr, kBranchUnitRows, /*chunk_units=*/true);
  const double chunks = u.chunks;
  c.bytes.lora_down = static_cast<double>(u.groups) * K * r * 2;
  c.bytes.x_reread = M * K * 2;
  c.bytes.partial_write = M * chunks * r * 4;
  c.bytes.partial_read = M * chunks * r * 4;
  c.bytes.act_write = M * r * 2;
  c.bytes.act_read = M * std::ceil(N / d.WarpTileN()) * r * 2;
  c.bytes.lora_up = static_cast<double>(pr.m_tiles) * d.warps_m * N * r * 2;
  // Through the model's L2 and TMA-latency terms (Predict): all from L2 [ASSUMED: lora_down no L1
  // reuse (an SM's quantizer warps hold different units), lora_up none between the warps_m warps
  // of a column]; at high, x's re-read also misses L2 (the quantizer read it with ld.global.cs,
  // evict-first) and comes from DRAM [ASSUMED: default an L2 hit, it was read just before].
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

  // A branch unit's time: quantize 8 rows x its chunk, down-project them (one L2 round trip per
  // 32-column iteration, kDownInstrPerIter's comment), arrive (kArrivalRoundTrips, when K has
  // more than one chunk); the group's last arrival then sums the partials and writes l
  // (kCombineInstrPerStepBase's comment) before publishing its chunk. Modelled as its chunk
  // chunks - 1 unit: every block is claimed chunk-major, so that unit is the group's last claimed,
  // and it finishes last where no earlier-claimed unit of the group takes longer [ASSUMED: the
  // chunks are of equal width, as at K = 7168; a shorter last chunk could arrive before another].
  // `lat`: the L2 round trip the unit sees.
  const double l2_lat = Pick(hw.l2_latency_s, reading, false);
  const double issue = (kDownInstrPerIter + (o.act_smooth ? kDownSmoothInstrPerIter : 0)) /
                       hw.quant_warp_ipc.value / clk;
  const int steps = CeilDivI(o.lora_rank, 16);
  const int batches = std::max(1, static_cast<int>(CeilDivI(u.chunks - 1, 4)));
  c.combine_round_trips = (reading == OptionsReading::kLow ? batches : steps * batches) + 1;
  const double combine_issue =
      steps * (kCombineInstrPerStepBase + kCombineInstrPerStepPerChunk * u.chunks) /
      hw.quant_warp_ipc.value / clk;
  const int arrival_round_trips = u.chunks > 1 ? kArrivalRoundTrips : 0;
  auto branch_base = [&](int begin, int end, double lat) {
    return UnitSeconds(hw_q, d, kBranchUnitRows, u.Cols(begin, end), o.lora_rank, lat + issue) +
           arrival_round_trips * lat;
  };
  auto branch_unit = [&](int begin, int end, double lat) {
    const double t = branch_base(begin, end, lat);
    return end == u.chunks ? t + c.combine_round_trips * lat + combine_issue : t;
  };
  c.down_iter_front_s = l2_lat + issue;  // front chunk 0: before the GEMM, the L2 unloaded

  // (c) start-up: the first MMAs wait for chunk 0 of their m-tile; with the branch its units are
  // 8 rows (the plain op's d.quant_rows_per_unit), each down-projected and counted before its
  // publish.
  const int plain_rows = d.quant_rows_per_unit;
  const UnitMap u_plain = Units(hw, d, p, pr, plain_rows, /*chunk_units=*/false);
  const double front0_plain = UnitSeconds(hw_q, d, plain_rows, u_plain.Cols(0, 1), 0, 0);
  c.unit_front0_s = branch_unit(0, 1, l2_lat);
  c.startup = std::max(0.0, c.unit_front0_s - front0_plain);

  // (e) keep-up: every unit claimed, timed and published (Published), the GEMM replayed per CTA
  // against the publications (ReplayGemm), with and without the branch; the term is the critical
  // CTA's extra stall, what the quantizer warps' lead does not hide.
  const int64_t warps = u.grid * d.quant_warps;
  double busy_plain = 0;
  const std::vector<double> pub_plain = Published(
      u_plain, warps,
      [&](int64_t, int begin, int end) {
        return UnitSeconds(hw_q, d, plain_rows, u_plain.Cols(begin, end), 0, 0);
      },
      &busy_plain);
  const Replay plain = ReplayGemm(u_plain, pr, pub_plain, pr.t_startup);
  c.lateness_plain = plain.lateness;
  c.stall_plain = plain.stall;
  const double t_fixed = c.t_plain + c.tensor + c.bytes_s + c.startup + c.smooth;
  // The op's time when the later units' L2 accesses see the L2 at utilisation rho.
  auto at_rho = [&](double rho) {
    const double lat = Loaded(hw, l2_lat, rho);
    c.down_iter_s = lat + issue;
    c.unit_s = branch_base(0, 1, lat);
    c.combine_s = c.combine_round_trips * lat + combine_issue;
    const std::vector<double> pub = Published(
        u, warps,
        [&](int64_t group, int begin, int end) {
          return group < u.front_groups && begin == 0 ? c.unit_front0_s
                                                      : branch_unit(begin, end, lat);
        },
        &c.quant_busy_s);
    const Replay opt = ReplayGemm(u, pr, pub, pr.t_startup + c.startup);
    c.lateness_options = opt.lateness;
    c.stall_options = opt.stall;
    c.keepup = std::max(0.0, c.stall_options - c.stall_plain);
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

std::vector<ModelUnit> ModelUnitOrder(const Hardware& hw, const Design& d, const Problem& p,
                                      int rows, bool chunk_units) {
  const UnitMap u = Units(hw, d, p, Predict(hw, d, p), rows, chunk_units);
  std::vector<ModelUnit> order(static_cast<size_t>(u.Count()));
  for (int64_t i = 0; i < u.Count(); ++i) {
    ModelUnit& w = order[static_cast<size_t>(i)];
    int64_t group;
    u.Decode(i, &group, &w.chunk_begin, &w.chunk_end);
    w.row0 = group * rows;
    w.row_end = std::min(u.m, w.row0 + rows);
  }
  return order;
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
