// Issue 30's options in the SM120 model (options.h): the terms (a)-(e) over the plain op's
// prediction, each with its assumption. A model, NOT a measurement.

#include "harness/perf_model/options.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
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
// After its down-projection (the unit's chunk already published, producers.cuh QuantizerLoop),
// BranchDownUnit's tail: every lane's membar.gl, which waits for the unit's partials' stores (one
// L2 round trip) [ASSUMED; before the kernel published after the down-projection this fence was
// also the publish's, counted on neither side as the plain op's PublishUnit fence is: now the
// publish's fence comes first and waits for the codes alone], then, when K has more than one
// chunk, one lane's atomicAdd on the group's counter, whose return value the warp waits for: one
// more round trip. The last arrival's acquire membar.gl (nothing outstanding) is left out.
constexpr int kPartialsFenceRoundTrips = 1, kArrivalRoundTrips = 1;
// The group's last arrival adds the group's partials: per lane ceil(8 r / 4 / 32) = ceil(r / 16)
// steps of 4 ranks of one row; a step loads slot 0 and slots 1 .. chunks - 1 in a loop unrolled
// by 4 (predicated), so its independent loads go in ceil((chunks - 1) / 4) batches, one L2 round
// trip each [ASSUMED: ptxas hoists a batch's loads above its adds, slot 0's with the first]; the
// steps one after another (a loop of runtime trip count) [ASSUMED; low: overlapped]; then l's
// 8-byte stores, which PublishBranchGroup's membar.gl waits for before its red.release on the
// m-tile's BranchReadyWord (ready_flags.h): one more round trip. Issue per step: chunks LDG +
// 4 (chunks - 1) FADD + 2 F2FP + 1 STG + ~10 index / loop = 5 chunks + 9.
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
// quant_depth blocks per lane per iteration).
double QuantSeconds(const Hardware& hw_q, const Design& d, int rows, double cols) {
  return std::ceil(rows * cols / 16 / 32 / d.quant_depth) * internal::QuantIterSeconds(hw_q, d);
}

// Iterations of a branch unit's down-projection over `cols` columns at rank `rank`.
double DownIters(double cols, int rank) {
  return std::ceil(cols / kDownColsPerIter) * std::ceil(rank / kDownRanksPerPass);
}

// A unit's time on its warp, in two parts: from its claim to its publish (the quantization), and
// from its publish to its arrival on its group's counter (the branch's down-projection, the
// partials' fence, the atomic; 0 in the plain op).
struct UnitSplit {
  double quant = 0, down = 0;
};
using UnitTime = std::function<UnitSplit(int begin, int end)>;  // a unit of chunks [begin, end)

// The quantizer warps over the call, from the kernel's start.
struct QuantSchedule {
  std::vector<double> published;  // [m_tile * chunks + c]: chunk c of the m-tile published
  std::vector<double> l_ready;    // [m_tile]: every group's l written (the branch's; else empty)
  double busy = 0;                // every unit's time (and every combine) over the warps
};

// The units claimed in increasing order from one counter (work_units.h), each by the warp that
// frees first; a unit publishes its chunks at its quantization's end (a chunk of an m-tile is
// published with the last of its groups' units). With the branch (combine >= 0), the warp then
// down-projects the unit and arrives on the group's counter: the group's last arrival (in time,
// as the atomic orders them; the group's every unit one chunk) sums the partials and writes l,
// `combine` more, and an m-tile's l is ready when its last group's is. A warp claims its next unit
// only then. Simulated event by event in time order (one event a unit: its arrival, the plain
// op's its end; one more a group's last arrival: its combine's end), so a unit learns whether it
// is its group's last at its arrival, every unit claimed before then having its arrival time.
QuantSchedule RunQuantizer(const UnitMap& u, int64_t warps, const UnitTime& seconds,
                           double combine) {
  const bool branch = combine >= 0;
  QuantSchedule s;
  s.published.assign(static_cast<size_t>(u.m_tiles * u.chunks), -1e30);
  if (branch) s.l_ready.assign(static_cast<size_t>(u.m_tiles), -1e30);
  // A unit's time depends on its chunks alone: [begin * (chunks + 1) + end].
  const int stride = u.chunks + 1;
  std::vector<UnitSplit> times(static_cast<size_t>(stride * stride));
  for (int b = 0; b < u.chunks; ++b) {
    for (int e = b + 1; e <= u.chunks; ++e) {
      times[static_cast<size_t>(b * stride + e)] = seconds(b, e);
    }
  }
  // A binary min-heap of events by (time, then FIFO), by hand: std::priority_queue's layers cost
  // the unoptimized test build most of its time.
  struct Event {
    double t;
    int64_t seq;   // FIFO among equal times
    int64_t unit;  // the unit that arrives (the plain op's: ends); < 0: a combine ends
  };
  std::vector<Event> heap;
  heap.reserve(static_cast<size_t>(warps));
  auto before = [](const Event& x, const Event& y) {
    return x.t < y.t || (x.t == y.t && x.seq < y.seq);
  };
  auto push = [&](const Event& e) {
    size_t i = heap.size();
    heap.push_back(e);
    while (i > 0 && before(e, heap[(i - 1) / 2])) {
      heap[i] = heap[(i - 1) / 2];
      i = (i - 1) / 2;
    }
    heap[i] = e;
  };
  auto pop = [&]() {
    const Event top = heap[0], last = heap.back();
    heap.pop_back();
    const size_t n = heap.size();
    size_t i = 0;
    while (n > 0) {
      size_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && before(heap[child + 1], heap[child])) ++child;
      if (!before(heap[child], last)) break;
      heap[i] = heap[child];
      i = child;
    }
    if (n > 0) heap[i] = last;
    return top;
  };
  int64_t seq = 0;
  for (int64_t w = 0; w < warps; ++w) push({0, seq++, -1});
  const int64_t groups_per_m_tile = kernels::kWorkTileM / u.rows;
  std::vector<int> arrived(branch ? static_cast<size_t>(u.groups) : 0, 0);
  double total = 0;
  int64_t next = 0;
  const int64_t count = u.Count();
  while (!heap.empty()) {
    const Event e = pop();
    int64_t group;
    int begin, end;
    if (branch && e.unit >= 0) {
      u.Decode(e.unit, &group, &begin, &end);
      if (++arrived[static_cast<size_t>(group)] == u.chunks) {  // the group's last: combine
        total += combine;
        double& l = s.l_ready[static_cast<size_t>(group / groups_per_m_tile)];
        l = std::max(l, e.t + combine);
        push({e.t + combine, seq++, -1});
        continue;
      }
    }
    if (next == count) continue;  // the warp is free at e.t: it claims the next unit, if any
    u.Decode(next, &group, &begin, &end);
    const UnitSplit& t = times[static_cast<size_t>(begin * stride + end)];
    total += t.quant + t.down;
    const int64_t m_tile = group / groups_per_m_tile;
    for (int c = begin; c < end; ++c) {
      double& p = s.published[static_cast<size_t>(m_tile * u.chunks + c)];
      p = std::max(p, e.t + t.quant);
    }
    push({e.t + t.quant + t.down, seq++, next});
    ++next;
  }
  s.busy = total / static_cast<double>(warps);
  return s;
}

// The GEMM against the publications, per CTA: CTA b runs tiles b, b + grid, ... (the static
// persistent schedule, m-tile-major), each tile's main loop reaching chunk c after the share of K
// before it and waiting there until (its m-tile, c) is published, and (l_ready not empty: the
// branch's) reaching its last k-step (the load warp's last A stage, loader.cuh) after the share of
// K before that and waiting there until its m-tile's l is ready; a wait delays the rest of that
// CTA, and only the latest CTA's finish counts: a late chunk or l on a CTA with a tile less to
// run, or early enough that the quantizer catches up, is hidden. A wait ends when the word is
// written [ASSUMED: the TMA round trip of the stage the load warp issues only then is not
// counted, for the chunks as for l]. Chunk 0 of the front m-tiles is the start-up's ((c), in t0).
// The need of the lateness: the first tile of the m-tile, unstalled.
ModelReplay ReplayGemm(const UnitMap& u, const Design& d, const Prediction& pr,
                       const std::vector<double>& published, const std::vector<double>& l_ready,
                       double t0) {
  ModelReplay r;
  const bool gate = !l_ready.empty();
  const double period = pr.tile_main + pr.epilogue_exposed_tile;
  std::vector<double> before(u.chunks + 1, 0);  // the main loop's share before chunk c
  for (int c = 0; c < u.chunks; ++c) before[c + 1] = before[c] + u.Cols(c, c + 1) / u.k;
  // The main loop's share before its last k-step (k_blocks of bk columns).
  const double last = static_cast<double>(pr.k_blocks - 1) * d.bk / u.k;
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
        t = std::max(t, ready(m_tile, c));
        if (gate && last >= before[c] && last < before[c + 1]) {
          t += (last - before[c]) * pr.tile_main;
          t = std::max(t, l_ready[static_cast<size_t>(m_tile)]);
          t += (before[c + 1] - last) * pr.tile_main;
        } else {
          t += (before[c + 1] - before[c]) * pr.tile_main;
        }
        t_free += (before[c + 1] - before[c]) * pr.tile_main;
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
    const double start = t0 + wave * period;
    for (int c = 0; c < u.chunks; ++c) {
      r.lateness = std::max(r.lateness, ready(mt, c) - (start + before[c] * pr.tile_main));
    }
    if (gate) {
      r.l_lateness =
          std::max(r.l_lateness, l_ready[static_cast<size_t>(mt)] - (start + last * pr.tile_main));
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

  // A branch unit on its warp (producers.cuh QuantizerLoop): quantize 8 rows x its chunk and
  // publish the chunk, as a plain unit does; then down-project them (one L2 round trip per
  // 32-column iteration, kDownInstrPerIter's comment), fence the partials and arrive
  // (kPartialsFenceRoundTrips, kArrivalRoundTrips when K has more than one chunk); the group's
  // last arrival then sums the partials, writes l and counts it on its m-tile's word
  // (kCombineInstrPerStepBase's comment). RunQuantizer finds which unit arrives last. `lat`: the
  // L2 round trip the down-projection sees.
  const double l2_lat = Pick(hw.l2_latency_s, reading, false);
  const double issue = (kDownInstrPerIter + (o.act_smooth ? kDownSmoothInstrPerIter : 0)) /
                       hw.quant_warp_ipc.value / clk;
  const int steps = CeilDivI(o.lora_rank, 16);
  const int batches = std::max(1, static_cast<int>(CeilDivI(u.chunks - 1, 4)));
  c.combine_round_trips = (reading == OptionsReading::kLow ? batches : steps * batches) + 1;
  const double combine_issue =
      steps * (kCombineInstrPerStepBase + kCombineInstrPerStepPerChunk * u.chunks) /
      hw.quant_warp_ipc.value / clk;
  const int tail_round_trips = kPartialsFenceRoundTrips + (u.chunks > 1 ? kArrivalRoundTrips : 0);
  auto quant = [&](int rows, double cols) { return QuantSeconds(hw_q, d, rows, cols); };
  auto branch_unit = [&](int begin, int end, double lat) {
    const double cols = u.Cols(begin, end);
    return UnitSplit{quant(kBranchUnitRows, cols),
                     DownIters(cols, o.lora_rank) * (lat + issue) + tail_round_trips * lat};
  };

  // (c) start-up: the first MMAs wait for chunk 0 of their m-tile, published as soon as it is
  // quantized, as in the plain op (the down-projections come after); what is left is that a
  // branch unit has 8 rows (the plain op's d.quant_rows_per_unit: 4), so a front chunk-0 unit
  // takes twice the quantizer iterations. Both latency-bound, the plain op's as Predict has it
  // [ASSUMED: the extra iterations are not hidden by the quantizer's DRAM bandwidth bound].
  const int plain_rows = d.quant_rows_per_unit;
  const UnitMap u_plain = Units(hw, d, p, pr, plain_rows, /*chunk_units=*/false);
  c.quant_front0_plain_s = quant(plain_rows, u_plain.Cols(0, 1));
  c.quant_front0_s = quant(kBranchUnitRows, u.Cols(0, 1));
  c.startup = std::max(0.0, c.quant_front0_s - c.quant_front0_plain_s);

  // (e) keep-up: every unit claimed, timed, published and (the branch) down-projected and
  // combined (RunQuantizer), the GEMM replayed per CTA against the publications and the m-tiles'
  // l (ReplayGemm), with and without the branch; the term is the critical CTA's extra stall, what
  // the quantizer warps' lead does not hide.
  const int64_t warps = u.grid * d.quant_warps;
  const QuantSchedule plain_schedule = RunQuantizer(
      u_plain, warps,
      [&](int begin, int end) {
        return UnitSplit{quant(plain_rows, u_plain.Cols(begin, end)), 0};
      },
      /*combine=*/-1);
  const ModelReplay plain = ReplayGemm(u_plain, d, pr, plain_schedule.published, {}, pr.t_startup);
  c.lateness_plain = plain.lateness;
  c.stall_plain = plain.stall;
  c.chunks = u.chunks;
  const double t_fixed = c.t_plain + c.tensor + c.bytes_s + c.startup + c.smooth;
  // The op's time when the down-projections' and the combines' L2 accesses see the L2 at
  // utilisation rho (all of them beside the GEMM now, the front's chunk 0 too: it is published
  // first).
  auto at_rho = [&](double rho) {
    const double lat = Loaded(hw, l2_lat, rho);
    c.down_iter_s = lat + issue;
    const UnitSplit unit = branch_unit(0, 1, lat);
    c.unit_quant_s = unit.quant;
    c.unit_down_s = unit.down;
    c.combine_s = c.combine_round_trips * lat + combine_issue;
    QuantSchedule s = RunQuantizer(
        u, warps, [&](int begin, int end) { return branch_unit(begin, end, lat); }, c.combine_s);
    c.quant_busy_s = s.busy;
    const ModelReplay opt = ReplayGemm(u, d, pr, s.published, s.l_ready, pr.t_startup + c.startup);
    c.published = std::move(s.published);
    c.l_ready = std::move(s.l_ready);
    c.lateness_options = opt.lateness;
    c.l_lateness = opt.l_lateness;
    c.stall_options = opt.stall;
    c.keepup = std::max(0.0, c.stall_options - c.stall_plain);
    return t_fixed + c.keepup;
  };
  // Their L2 utilisation [ASSUMED]: low, none; high, the main loop's with the branch's bytes (the
  // stage's rho, capped as Predict caps it); default, the call's SM-side L2 bytes over the options'
  // own time (a later publication or l stretches the call and unloads the L2): the fixed point of
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

ModelReplay ModelGemmReplay(const Hardware& hw, const Design& d, const Problem& p,
                            const std::vector<double>& published,
                            const std::vector<double>& l_ready, double t0) {
  const Prediction pr = Predict(hw, d, p);
  const UnitMap u = Units(hw, d, p, pr, kBranchUnitRows, /*chunk_units=*/true);
  return ReplayGemm(u, d, pr, published, l_ready, t0);
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
