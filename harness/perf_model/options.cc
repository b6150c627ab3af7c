// Issue 30's options in the SM120 model (options.h): the terms (a)-(e) over the plain op's
// prediction, each with its assumption; the units' times behind (c) and (e) (the schedule they
// run in: options_schedule.h). A model, NOT a measurement.

#include "harness/perf_model/options.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "harness/perf_model/model.h"
#include "harness/perf_model/model_internal.h"
#include "harness/perf_model/options_schedule.h"
#include "kernels/device/work_units.h"

namespace h3::perf_model {
namespace {

using internal::CeilDivI;
using internal::QuantSchedule;
using internal::ReplayGemm;
using internal::RunQuantizer;
using internal::UnitMap;
using internal::Units;
using internal::UnitSplit;

// Rows of a branch unit: the n8 of the down-projection's m16n8k16 (kernels/device/lowrank.cuh),
// the kernel's own constant. Every branch unit is 8 rows x ONE k-chunk
// (WorkUnits<8, kChunkUnits>), wherever it is.
constexpr int kBranchUnitRows = kernels::kBranchUnitRows;
static_assert(kBranchUnitRows == 8, "the tests assume 8-row units");
// A branch unit is one of three kinds (producers.cuh QuantizerLoop, work_units.h Kind): the
// front's (group, chunk) pairs (what the first tiles wait for) first as quantize-only units, then
// as down-only units, and every later unit fused.
// A fused unit runs the loop (lowrank.cuh BranchDownUnit<kQuantize = true>, `#pragma
// unroll 1`): lane (g, t) takes row g's blocks t, t + 4, ...: ONE 16-element block a lane and
// iteration (the plain quantizer has 4 in flight, producers.cuh QuantizeUnit), chunk_elems / 64
// iterations (16 at K = 7168). Before the loop (dab8b1d) lane t = 0 of each row issues one
// cp.async.bulk.prefetch.L2 of the row's whole chunk (chunk_elems x 2 bytes: 16 KB a unit at K =
// 7168). The first iteration's load of x (ld.global.cs) leaves with the prefetch: a DRAM round
// trip, as in the quantizer model's iteration. Every later iteration's x is an L2 hit at the
// loaded L2 round trip [ASSUMED in every reading: the bulk prefetch is honoured (not dropped),
// lands within one DRAM round trip of its issue, and the unit's 16 KB stay in L2 until the loop
// reads them]. The loop cannot outrun the prefetch: the second iteration's load leaves a DRAM
// round trip (the first's) + its instructions after the prefetch, so within that bound every
// later block is there; the first round's prefetches all leave at once (510 units x 16 KB on the
// 5090) and share the DRAM's bandwidth: options_test checks that they land, at that bandwidth,
// before the loops ask for them on average, and the per-iteration arrival is not modelled. An
// iteration then smooths, quantizes and stores its block (the quantizer model's instructions per
// block), then per 16 ranks loads lora_down (4 LDG.128: 2 rank rows x 32 bytes) and issues 4
// m16n8k16 MMAs on the block's registers: 4 LDG + 4 HMMA + ~2 address / guard = 10 instructions
// [ASSUMED]. The lora_down loads come after the block's quantization and stores in program order
// (past its `has_row` branch, each behind its rank tile's guard): an L2 round trip after x's
// [ASSUMED: ptxas does not hoist them above the quantization; the SASS would show; low: hoisted,
// under x's round trip, the first iteration's DRAM one or the later ones' L2 one]. No pipelining
// across iterations [ASSUMED: unroll 1]; the MMAs' accumulator chain (4 a rank tile) runs under
// the next iteration's loads: left out. The unit publishes after its last iteration: all of it
// delays its chunk.
// lora_down: at the quantizers' start each CTA's first quantizer lane prefetches its 1/grid share
// of it to L2 (PrefetchLoraDown, dab8b1d: r x K x 2 bytes in all, 459 KB at r = 32). Every unit's
// lora_down reads are taken as (loaded) L2 hits, the first units' too [ASSUMED in every reading:
// the prefetch is honoured and lands within one DRAM round trip of the kernel's start, and
// lora_down (r x K x 2) stays in L2]: a fused unit's first lora_down loads follow its claim and its
// first x DRAM round trip, a down-only unit's its claim after every quantize-only unit, so no
// unit reads lora_down within one DRAM round trip of the prefetch's issue.
// A front quantize-only unit first prefetches its rows' chunk to L2 (PrefetchUnitRows, as a fused
// unit), then runs the plain op's loop (QuantizeUnit<kStreamed = false>: quant_depth blocks a
// lane in flight, the quantizer model's iterations over its 8 rows, the first at the DRAM round
// trip, the later ones at the loaded L2 one; x through a cached load, not evict-first), and
// publishes. Its down-only unit, claimed after every quantize-only unit, runs the same loop as a
// fused unit without the quantization (BranchDownUnit<kQuantize = false>, no prefetch): an
// iteration reads its block of x again (an L2 hit, read microseconds before [ASSUMED in every
// reading: not an L1 hit, the warp's own lora_down reads, 64 KB a unit at r = 32, and the SM's
// other units' pass through L1]), smooths it again, issues x's loads and the loop
// (kDownOnlyInstrPerBlock), then lora_down's loads (L2 hits, above) and the MMAs as above. With
// act_smooth the smoothing, inside the `has_row` branch, waits for x, so lora_down's round trip
// follows x's [ASSUMED, as above; low: under it]; without it nothing between them uses x: under
// it. The quantize-only unit's publish waits for its quantization alone; the down-only unit
// delays only its group's arrival and its warp's next unit.
constexpr double kDownInstrPerRankTile = 10;
// x's 2 LDG.128, their address and the loop's counter, compare and branch [ASSUMED].
constexpr double kDownOnlyInstrPerBlock = 6;
// After the publish (its PublishUnit membar.gl waits for the codes' stores, as the plain op's:
// counted on neither side), or a down-only unit's down-projection, BranchFinishUnit: the
// partials' stores, every lane's membar.gl, which waits for them (one L2 round trip) [ASSUMED],
// then, when K has more than one chunk, one lane's atomicAdd on the group's counter, whose return
// value the warp waits for: one more round trip. The last arrival's acquire membar.gl (nothing
// outstanding) is left out.
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

// The loaded latency of an L2 hit at utilisation rho with queueing q, as Predict loads the
// TMA's (model.cc).
double Loaded(double latency, double rho, double q) {
  rho = std::min(rho, internal::kMaxL2Utilisation);
  return latency * (1 + q * rho / (1 - rho));
}

// Seconds one quantizer warp spends quantizing `rows` x `cols` (quantizer.cc: a DRAM round trip +
// quant_depth blocks per lane per iteration).
double QuantSeconds(const Hardware& hw_q, const Design& d, int rows, double cols) {
  return std::ceil(rows * cols / 16 / 32 / d.quant_depth) * internal::QuantIterSeconds(hw_q, d);
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
  // (its k-range x 4 B; the unit's rows share them in L1; the fused units' MMAs take x' from the
  // quantizer's registers; the front's down-only units smooth x again: the front's factors again,
  // from L2 [ASSUMED]).
  const UnitMap u = Units(hw, d, p, pr, kBranchUnitRows, /*chunk_units=*/true);
  const double front0_rows = std::min(M, static_cast<double>(u.front_groups * kBranchUnitRows));
  if (o.act_smooth) {
    const double rows = r > 0 ? kBranchUnitRows : d.quant_rows_per_unit;
    c.smooth_bytes =
        std::ceil(M / rows) * K * 4 + (r > 0 ? static_cast<double>(u.front_groups) * K * 4 : 0);
    c.smooth = internal::PredictWithExtraL2(hw_q, d, p, c.smooth_bytes).t_total - pr.t_total;
  }
  if (o.lora_rank <= 0) {
    c.t_options = c.t_plain + c.smooth;
    return c;
  }

  // (b) bytes, as the kernel moves them (lowrank.cuh). attn_out is read by the quantizer (the
  // plain op's bytes) and again by the front's down-only units: the front's rows x all of K. The
  // arrival counters' atomics (4 B a unit) are left out.
  const double chunks = u.chunks;
  c.bytes.lora_down = static_cast<double>(u.groups) * K * r * 2;
  c.bytes.x_reread = front0_rows * K * 2;
  c.bytes.partial_write = M * chunks * r * 4;
  c.bytes.partial_read = M * chunks * r * 4;
  c.bytes.act_write = M * r * 2;
  c.bytes.act_read = M * std::ceil(N / d.WarpTileN()) * r * 2;
  c.bytes.lora_up = static_cast<double>(pr.m_tiles) * d.warps_m * N * r * 2;
  // Through the model's L2 and TMA-latency terms (Predict): all from L2 [ASSUMED: lora_down no L1
  // reuse (an SM's quantizer warps hold different units), lora_up none between the warps_m warps
  // of a column; x again: read microseconds before by a cached load], in every reading.
  const Prediction q = internal::PredictWithExtraL2(hw, d, p, c.bytes.Total());
  c.bytes_s = q.t_total - pr.t_total;

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

  // The quantizer warps' units as (c) and (e) time them, the plain op's too: each iteration's
  // DRAM round trip at the reading's end of its range (hardware.cc; Predict keeps its value). A
  // branch unit (producers.cuh QuantizerLoop; kDownInstrPerRankTile's comment): a front
  // quantize-only unit's quantization (the quantizer model's iterations over 8 rows, prefetched),
  // its publish; a front down-only unit's chunk_elems / 64 iterations of one block a lane: x's L2
  // round trip again + the smoothing and the loop + lora_down's L2 round trip after it (act_smooth;
  // low, or without it: under it) + the MMAs' issue. Every other unit: chunk_elems / 64 iterations
  // of one block a lane, the first the quantizer model's iteration at quant_depth 1 (x's DRAM round
  // trip), the later ones the same with x's L2 round trip (the unit's prefetch) + lora_down's L2
  // round trip after it (low: under x's) + the MMAs' issue, then the publish. Then either's
  // partials' fence and arrival (kPartialsFenceRoundTrips, kArrivalRoundTrips when K has more than
  // one chunk); the group's last arrival then sums the partials, writes l and counts it on its
  // m-tile's word (kCombineInstrPerStepBase's comment). RunQuantizer finds which unit arrives last.
  // `lat`: the (loaded) L2 round trip. A DRAM round trip at the L2's load: every DRAM access is an
  // L2 miss and queues in the L2 as a hit does, so it is the loaded L2 round trip `lat` + the
  // DRAM's extra over an unloaded L2 hit (the reading's DRAM latency - its L2 latency) [ASSUMED:
  // the DRAM part adds to the L2's queueing, it does not queue separately], never faster than an L2
  // hit under the same load. Every DRAM round trip below (every unit's quantizer iterations, the
  // plain op's unit in (c) too, and the fused loop's first iteration) takes it; Predict keeps its
  // own, unloaded.
  Hardware hw_u = hw_q;
  hw_u.dram_latency_s.value = Pick(hw.dram_latency_s, reading, false);
  const double dram_unloaded = hw_u.dram_latency_s.value;
  Design d_branch = d;
  d_branch.quant_depth = 1;
  const double l2_lat = Pick(hw.l2_latency_s, reading, false);
  // The queueing at the reading's end of its range: the low reading loads nothing (rho 0 below).
  const double l2_q = Pick(hw.l2_queueing, reading, false);
  auto dram_at = [&](double lat) { return lat + (dram_unloaded - l2_lat); };
  const double ipc_clk = hw.quant_warp_ipc.value * clk;
  const double down_issue = kDownInstrPerRankTile * CeilDivI(o.lora_rank, 16) / ipc_clk;
  // x_lat: x's round trip (the first iteration DRAM, the later ones the prefetched L2 hit).
  auto unit_iter = [&](double x_lat, double lat) {
    Hardware hw_x = hw_u;
    hw_x.dram_latency_s.value = x_lat;
    return internal::QuantIterSeconds(hw_x, d_branch) + down_issue +
           (reading == OptionsReading::kLow ? std::max(0.0, lat - x_lat) : lat);
  };
  const double x_again_issue =
      (kDownOnlyInstrPerBlock + (o.act_smooth ? kSmoothInstrPerBlock[ri] : 0)) / ipc_clk;
  const bool down_after_x = o.act_smooth && reading != OptionsReading::kLow;
  auto front0_iter = [&](double lat) {
    return lat + x_again_issue + down_issue + (down_after_x ? lat : 0.0);
  };
  auto branch_iters = [&](double cols) { return std::ceil(kBranchUnitRows * cols / 16 / 32); };
  const int steps = CeilDivI(o.lora_rank, 16);
  const int batches = std::max(1, static_cast<int>(CeilDivI(u.chunks - 1, 4)));
  c.combine_round_trips = (reading == OptionsReading::kLow ? batches : steps * batches) + 1;
  const double combine_issue =
      steps * (kCombineInstrPerStepBase + kCombineInstrPerStepPerChunk * u.chunks) / ipc_clk;
  const int tail_round_trips = kPartialsFenceRoundTrips + (u.chunks > 1 ? kArrivalRoundTrips : 0);
  // A unit's quantizer iterations with the DRAM round trip `dram`.
  auto quant = [&](int rows, double cols, double dram) {
    Hardware hw_d = hw_u;
    hw_d.dram_latency_s.value = dram;
    return QuantSeconds(hw_d, d, rows, cols);
  };
  // A front quantize-only unit: its rows' chunk prefetched to L2 at its claim (PrefetchUnitRows),
  // so its first quantizer iteration waits for the DRAM round trip and the later ones for the
  // loaded L2 round trip [ASSUMED, as the fused units' prefetch above].
  auto iter_at = [&](double dram) {
    Hardware hw_d = hw_u;
    hw_d.dram_latency_s.value = dram;
    return internal::QuantIterSeconds(hw_d, d);
  };
  auto quant_prefetched = [&](int rows, double cols, double lat) {
    const double iters = std::ceil(rows * cols / 16 / 32 / d.quant_depth);
    return iter_at(dram_at(lat)) + (iters - 1) * iter_at(lat);
  };
  auto branch_unit = [&](int begin, int end, bool front0, double lat) {
    const double cols = u.Cols(begin, end);
    if (front0) {  // the quantize-only unit's publish; the down-only unit's finish
      return UnitSplit{quant_prefetched(kBranchUnitRows, cols, lat),
                       branch_iters(cols) * front0_iter(lat) + tail_round_trips * lat};
    }
    return UnitSplit{unit_iter(dram_at(lat), lat) + (branch_iters(cols) - 1) * unit_iter(lat, lat),
                     tail_round_trips * lat};
  };

  // (c) start-up: the first MMAs wait for chunk 0 of their m-tile, published once its front
  // units' quantizations end: 8 rows at quant_depth blocks a lane in flight, prefetched (the
  // down-projection is another unit's), against the plain op's 4-row unit (d.quant_rows_per_unit,
  // no prefetch). Both
  // latency-bound, the plain op's as Predict has it [ASSUMED: not hidden by the quantizer's DRAM
  // bandwidth bound]. Both at the loaded DRAM round trip (dram_at) of the call's L2 utilisation,
  // so set in at_rho below.
  const int plain_rows = d.quant_rows_per_unit;
  const UnitMap u_plain = Units(hw, d, p, pr, plain_rows, /*chunk_units=*/false);
  auto startup_at = [&](double lat) {
    c.quant_front0_plain_s = quant(plain_rows, u_plain.Cols(0, 1), dram_at(lat));
    c.startup_iter_s = iter_at(dram_at(lat));
    c.quant_front0_s = quant_prefetched(kBranchUnitRows, u.Cols(0, 1), lat);
    c.startup = std::max(0.0, c.quant_front0_s - c.quant_front0_plain_s);
  };

  // (e) keep-up: every unit claimed, timed, published and (the branch) finished and combined
  // (RunQuantizer), the GEMM replayed per CTA against the publications and the m-tiles' l
  // (ReplayGemm), with and without the branch; the term is the critical CTA's extra stall, what
  // the quantizer warps' lead does not hide. The plain op's units at its own DRAM round trip, as
  // Predict has it (unloaded): its replay is the plain op's baseline.
  const int64_t warps = u.grid * d.quant_warps;
  const QuantSchedule plain_schedule = RunQuantizer(
      u_plain, warps,
      [&](int begin, int end, bool) {
        return UnitSplit{quant(plain_rows, u_plain.Cols(begin, end), dram_unloaded), 0};
      },
      /*combine=*/-1);
  const ModelReplay plain = ReplayGemm(u_plain, d, pr, plain_schedule.published, {}, pr.t_startup);
  c.lateness_plain = plain.lateness;
  c.stall_plain = plain.stall;
  c.chunks = u.chunks;
  const double t_fixed_no_startup = c.t_plain + c.tensor + c.bytes_s + c.smooth;
  // The op's time when the branch's L2 accesses (lora_down, x again, the fences, the atomics, the
  // combines, x's prefetched reads) see the L2 at utilisation rho: all of them beside the GEMM
  // [ASSUMED: the front's down-only units too, which may start before the first MMAs].
  auto at_rho = [&](double rho) {
    const double lat = Loaded(l2_lat, rho, l2_q);
    startup_at(lat);
    c.unit_first_iter_s = unit_iter(dram_at(lat), lat);
    c.unit_iter_s = unit_iter(lat, lat);
    const UnitSplit unit = branch_unit(0, 1, false, lat);
    c.unit_publish_s = unit.publish;
    c.unit_finish_s = unit.finish;
    c.front0_down_iter_s = front0_iter(lat);
    c.front0_finish_s = branch_unit(0, 1, true, lat).finish;
    c.combine_s = c.combine_round_trips * lat + combine_issue;
    QuantSchedule s = RunQuantizer(
        u, warps,
        [&](int begin, int end, bool front0) { return branch_unit(begin, end, front0, lat); },
        c.combine_s);
    c.quant_busy_s = s.busy;
    const ModelReplay opt = ReplayGemm(u, d, pr, s.published, s.l_ready, pr.t_startup + c.startup);
    c.published = std::move(s.published);
    c.l_ready = std::move(s.l_ready);
    c.lateness_options = opt.lateness;
    c.l_lateness = opt.l_lateness;
    c.stall_options = opt.stall;
    c.keepup = std::max(0.0, c.stall_options - c.stall_plain);
    return t_fixed_no_startup + c.startup + c.keepup;
  };
  // Their L2 utilisation [ASSUMED]: low, none; high, the main loop's with the branch's bytes (the
  // stage's rho, capped as Predict caps it) at q's high end (l2_q); default, the call's SM-side
  // L2 bytes over the options' own time (a later publication or l stretches the call and unloads
  // the L2): the fixed point of t = at_rho(bytes / (t x L2 bandwidth)), by bisection (at_rho
  // grows with rho, rho falls with t).
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
