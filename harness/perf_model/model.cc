// Predict (model.h): the shape and waves of the call, its DRAM bytes, the work of the critical
// SM, one pipeline stage, and the whole kernel; the epilogue (epilogue.cc), the quantizer's
// start-up (quantizer.cc) and the feasibility check (feasibility.cc) are computed beside it.
// The calibration against the measured GEMM anchor.

#include "harness/perf_model/model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/perf_model/model_internal.h"

namespace h3::perf_model {
namespace {

using internal::CeilDivI;
using internal::CheckFeasibility;
using internal::EpilogueConcurrent;
using internal::EpilogueDesynchronized;
using internal::kMbarrierClk;
using internal::kSubPartitions;
using internal::SfaStageBytesLoaded;
using internal::SfbStageBytes;
using internal::Skewed;
using internal::StageBytes;
using internal::WarpsPerGroup;

constexpr double kWavefront = 128;  // bytes of one shared-memory wavefront
// Consumer issue slots per warp, from NOTES.md's SASS reading of the sm_120a main loop
// (per stage of 4 k-steps: 64 OMMA, 44 NOP, 24 LDSM, 20 LDS, 37 other = 189), generalized:
constexpr double kNopPerOmma = 44.0 / 64.0;  // nvcc pads every OMMA pair with NOPs
constexpr double kOtherPerKStep = 5;         // address arithmetic per k-step
constexpr double kOtherPerStage = 17;        // barrier wait / arrive, stage index, loop

// Partial tiles the owner of a split tile reads when every SM runs `work` of a tile's `per_tile`
// units (k-blocks or phase slices) contiguously: none when whole tiles line up.
double SplitPartials(double work, double per_tile) {
  if (work >= per_tile) return std::fmod(work, per_tile) == 0 ? 0 : 1;
  return std::ceil(per_tile / work) - 1 + (std::fmod(per_tile, work) == 0 ? 0 : 1);
}

// split_cap: with fewer tiles than SMs, a split schedule (stream-K tail, phases) uses at most
// tiles x split_cap SMs; 0 = all of them. Predict() picks the best cap, as the host would.
// extra_l2: SM-side L2 bytes of optional operands (options.cc), spread over the main loop.
Prediction PredictWithSplitCap(const Hardware& hw, const Design& d, const Problem& p, int split_cap,
                               double extra_l2) {
  Prediction r;
  r.feasibility = CheckFeasibility(hw, d, p);
  const double sms = hw.sms.value;
  const double clk = hw.ClockHz();
  const double t_omma = hw.OmmaSeconds();
  const double port = hw.l2_port_bytes_per_clk.value * clk;  // one SM's L2 burst rate
  const double M = static_cast<double>(p.m), N = static_cast<double>(p.n),
               K = static_cast<double>(p.k);

  // ---- Shape and waves. ----
  r.m_tiles = CeilDivI(p.m, d.bm);
  r.n_tiles = p.n / d.bn;
  r.k_blocks = p.k / d.bk;
  r.tiles = r.m_tiles * r.n_tiles;
  const double tiles = static_cast<double>(r.tiles);
  const double kb = static_cast<double>(r.k_blocks);
  const bool split_schedule =
      d.schedule == Schedule::kStreamKTail || (d.schedule == Schedule::kPhased && d.phases > 1);
  // SMs the split schedules spread the work over.
  const double sms_used =
      (split_schedule && split_cap > 0) ? std::min(sms, std::max(1.0, tiles * split_cap)) : sms;
  const double active_sms = split_schedule ? sms_used : std::min(sms, std::max(1.0, tiles));

  // ---- Bytes per tile (as the TMA loads them). ----
  r.tile_bytes.a_codes = d.bm * K / 2;
  r.tile_bytes.b_codes = d.bn * K / 2;
  r.tile_bytes.sfa = SfaStageBytesLoaded(d) * kb;
  r.tile_bytes.sfb = SfbStageBytes(d) * kb;
  r.bytes_per_kflop = r.tile_bytes.Total() / (2.0 * d.bm * d.bn * K) * 1000;
  const double stage_bytes = StageBytes(d);

  // ---- DRAM bytes of the call. ----
  const double weight = N * K * (0.5 + 1.0 / 16);
  if (d.gemm_only) {
    r.dram.gemm_a = M * K * (0.5 + 1.0 / 16);
    r.dram.weight = weight;
    r.dram.out = M * N * 2;
  } else {
    const double act = M * K * (0.5 + 1.0 / 16);
    r.dram.attn_out = M * K * 2;
    r.dram.act_write = act + (d.sfa_load == SfaLoad::kBulkRepacked ? M * K / 16 : 0);
    // The quantizer runs ahead of the GEMM; its output is re-read from DRAM where it does not
    // fit the half of L2 the streams (attn_out, residual, out) leave it beside the weight
    // (an assumption: LRU-like replacement, half of L2 churned by the streams).
    const double l2_avail = std::max(0.0, 0.5 * hw.l2_size_bytes.value - weight);
    const double spill = act > 0 ? std::clamp(1.0 - l2_avail / act, 0.0, 1.0) : 0;
    r.dram.act_read = act * spill;
    r.dram.residual = M * N * 2;
    r.dram.out = M * N * 2;
    r.dram.weight = weight;
    r.dram.gate_index = M * 4;
    r.dram.gate = static_cast<double>(p.g) * N * 2;
  }
  r.t_dram = r.dram.Total() / hw.dram_bytes_per_s.value;

  // ---- Work per SM: how many tile-equivalents the critical SM runs. ----
  double tiles_per_sm = 0;  // incl. partial tiles of stream-K / phases
  double epilogues_per_sm = 0;
  double fixup_partials = 0;      // f32 partial tiles the critical SM reads (worst alignment)
  double fixup_partials_avg = 0;  // per split tile, over the call (for the bytes)
  switch (d.schedule) {
    case Schedule::kStatic:
      tiles_per_sm = std::ceil(tiles / sms);
      epilogues_per_sm = tiles_per_sm;
      break;
    case Schedule::kStreamKTail: {
      const double full = std::floor(tiles / sms_used);
      const double rem = tiles - full * sms_used;
      if (rem == 0) {
        tiles_per_sm = full;
        epilogues_per_sm = full;
      } else {
        // With at least a wave of tiles, split_cap bounds the SMs per tail tile (CUTLASS's
        // data-parallel + stream-K hybrid keeps a minimum of k-blocks per unit).
        const double tail_sms =
            (tiles >= sms && split_cap > 0) ? std::min(sms_used, rem * split_cap) : sms_used;
        const double tail_kb = std::ceil(rem * kb / tail_sms);
        tiles_per_sm = full + tail_kb / kb;
        epilogues_per_sm = full + 1;
        fixup_partials = SplitPartials(tail_kb, kb);  // the owner of a tail tile reads the rest
        fixup_partials_avg = tail_kb >= kb ? fixup_partials : (kb - 1) / tail_kb;
      }
      break;
    }
    case Schedule::kPhased: {
      const double units = std::ceil(tiles * d.phases / sms_used);
      tiles_per_sm = units / d.phases;
      epilogues_per_sm = std::ceil(tiles / sms);
      // Each SM has at most one tile split between a head and a tail slice; with fewer tiles
      // than SMs the phases split every tile (split-K) and the owner reads the other slices.
      if (d.phases > 1) {
        fixup_partials = tiles >= sms_used ? 1 : SplitPartials(units, d.phases);
        fixup_partials_avg =
            (tiles >= sms_used || units >= d.phases) ? fixup_partials : (d.phases - 1) / units;
      }
      break;
    }
  }
  r.tiles_per_sm = tiles_per_sm;
  const double stages_per_sm = tiles_per_sm * kb;
  const double useful = M * N * K;
  r.wave_efficiency = useful / (sms * tiles_per_sm * d.bm * d.bn * K);

  // ---- One pipeline stage. ----
  StageTimes& s = r.stage;
  const int wpg = WarpsPerGroup(d);
  const double w_per_smsp = std::ceil(wpg / kSubPartitions);  // MMA warps per sub-partition
  const double smsp_used = std::min(kSubPartitions, static_cast<double>(wpg));
  const double omma_stage = (d.bm / 16.0) * (d.bn / 8.0) * d.KSteps();
  s.omma_per_stage = omma_stage;
  s.tensor = omma_stage / smsp_used * t_omma;
  // The tensor pipe idles at a stage boundary only when a sub-partition has a single MMA warp
  // and that warp's next fragments wait on the stage's mbarrier and ldmatrix latency; with two
  // warps the other one's 16-32 OMMAs (>= 256 clk) cover it.
  s.frag_stall = (w_per_smsp < 2 && !d.frag_prefetch_across_stages)
                     ? (hw.ldsm_latency_clk.value + kMbarrierClk) / clk
                     : 0;
  const double omma_w = d.MFrags() * d.NFrags() * d.KSteps();
  const double ldsm_w = (d.MFrags() + d.NFrags() / 2.0) * d.KSteps();
  // Scale LDS per warp and stage, as kernels/device/mainloop.cuh (LoadStageScales) loads them: a row's
  // activation words of a stage are adjacent in its 16-byte slot (SfaOffset: +4 B per k-step),
  // one LDS.64/128 per m fragment; the weight words of n fragments j and j + 4 are adjacent
  // (SfbFragOffset), one LDS.64 per pair and k-step in a 64-wide warp tile (8 n fragments), else
  // one LDS per n fragment and k-step. The SASS agrees (tools/device/sass_report.sh: 12 per
  // stage at 128x256, 12 per stage of 32 OMMA at 128x128).
  const double sfa_lds_w = d.MFrags() * std::ceil(d.KSteps() / 4.0);
  const double sfb_per_lds = d.NFrags() % 8 == 0 ? 2.0 : 1.0;
  const double sfb_lds_w =
      d.NFrags() / sfb_per_lds * (d.sfb_once_per_stage ? 1.0 : d.KSteps());
  const double lds_w = sfa_lds_w + sfb_lds_w;
  s.lds_per_warp = lds_w;
  const double other_w = kOtherPerKStep * d.KSteps() + kOtherPerStage;
  const double issue_w = omma_w * (1 + kNopPerOmma) + ldsm_w + lds_w + other_w;
  // Quantizer issue, averaged over the run (it runs ahead; its sub-partitions are 3 of 4).
  double quant_issue_per_stage = 0;
  if (!d.gemm_only && stages_per_sm > 0) {
    const double quant_warp_instr =
        M * K / 16 / 32 * hw.quant_instr_per_block.value / sms;  // per SM
    quant_issue_per_stage = quant_warp_instr / std::max(1, d.quant_warps) / stages_per_sm;
  }
  s.issue_slots_per_smsp = w_per_smsp * issue_w + quant_issue_per_stage;
  s.issue = s.issue_slots_per_smsp / clk;
  s.mma = std::max(s.tensor + s.frag_stall, s.issue);

  // Shared memory wavefronts of one stage: ldmatrix.x4 = 4, scale LDS = 1 (sfa LDS.64/128 with
  // broadcast = 2), the TMA's writes, and the L1 share of the quantizer's / epilogue's traffic.
  s.ldmatrix_bytes = wpg * ldsm_w * 512.0;
  double wavefronts =
      wpg * ldsm_w * 4 + wpg * (sfa_lds_w * 2.0 + sfb_lds_w) + stage_bytes / kWavefront;
  double other_l2 = 0;  // SM-side L2 bytes of the whole call besides the operand feed
  double epi_bytes_tile = 0;
  if (!d.gemm_only) {
    const double quant_bytes = M * K * 2 + r.dram.act_write;
    // + the optional operands' reads and writes (issue 30, options.cc): through L1 like the
    // quantizer's, spread over the run (0 for the plain op).
    other_l2 += quant_bytes + extra_l2;
    wavefronts += (quant_bytes + extra_l2) / sms / std::max(1.0, stages_per_sm) / kWavefront;
    epi_bytes_tile = d.bm * d.bn * 4.0 + d.bm * 4.0;  // residual + out + gate_index
  } else {
    epi_bytes_tile = d.bm * d.bn * 2.0;
  }
  if (d.epilogue == Epilogue::kNone) epi_bytes_tile = 0;
  const double other_l2_main = other_l2;  // without epilogue and fix-up bytes
  if (EpilogueDesynchronized(d)) other_l2 += tiles * epi_bytes_tile;
  if (d.epilogue == Epilogue::kSmemStaged) {
    wavefronts += 2.0 * d.bm * d.bn * 2.0 / kWavefront / kb;  // t written and read back
  }
  const double partial_bytes = d.bm * d.bn * 4.0;
  // Fix-up partials (f32) are written and read once each, at tile ends: in the L2 total and in
  // t_fixup, not in the stages' share.
  const double split_tiles = d.schedule == Schedule::kStreamKTail
                                 ? tiles - std::floor(tiles / sms_used) * sms_used
                                 : (tiles >= sms_used ? sms_used : tiles);
  const double fixup_l2 =
      fixup_partials > 0 ? fixup_partials_avg * 2 * partial_bytes * split_tiles : 0;
  // With at least a wave of tiles the splits fall at different times (phase heads, the tail):
  // their bytes share the stages' L2. With fewer tiles than SMs they all fall at the end.
  const bool fixup_spread = tiles >= sms_used;
  if (fixup_spread) other_l2 += fixup_l2;
  s.smem_wavefronts = wavefronts;
  s.smem = wavefronts * kWavefront / hw.smem_bytes_per_clk.value / clk;

  // L2: the stage's bytes plus its share of the rest, at this SM's share of the L2 bandwidth.
  const double l2_rate_sm = std::min(port, hw.l2_bytes_per_s.value / active_sms);
  s.l2_bytes = stage_bytes + (stages_per_sm > 0 ? other_l2 / active_sms / stages_per_sm : 0);
  s.l2 = s.l2_bytes / l2_rate_sm;
  // Little's law on the ring: (stages - 1) stages in flight cover one TMA round trip, whose
  // latency grows with the L2's utilisation rho (base (1 + q rho / (1 - rho)), rho capped). rho
  // falls as the period grows, so a latency-bound period settles where the two are equal.
  const double l2_demand_stage = active_sms * s.l2_bytes;  // all SMs' L2 bytes of one stage
  auto ring_latency = [&](double period, double* rho, double* tma) {
    *rho = std::min(internal::kMaxL2Utilisation,
                    l2_demand_stage / period / hw.l2_bytes_per_s.value);
    *tma = hw.tma_latency_s.value * (1 + hw.l2_queueing.value * *rho / (1 - *rho));
    return (*tma + stage_bytes / port) / (d.stages - 1);
  };
  const double resource_period = std::max({s.mma, s.smem, s.l2});
  s.latency = ring_latency(resource_period, &s.l2_utilisation, &s.tma_latency);
  if (s.latency > resource_period) {
    double lo = resource_period, hi = s.latency;  // ring_latency(hi) <= hi: it decreases
    for (int i = 0; i < 60; ++i) {
      const double mid = 0.5 * (lo + hi);
      double rho, tma;
      (ring_latency(mid, &rho, &tma) > mid ? lo : hi) = mid;
    }
    ring_latency(hi, &s.l2_utilisation, &s.tma_latency);
    s.latency = hi;
  }
  s.period = std::max(resource_period, s.latency);
  s.limiter = s.period == s.mma    ? (s.mma == s.issue ? "issue" : "MMA")
              : s.period == s.smem ? "smem"
              : s.period == s.l2   ? "L2"
                                   : "TMA latency";
  r.tile_main = kb * s.period;

  // ---- Epilogue of one tile. ----
  internal::EpilogueInputs epi_in;
  epi_in.clk = clk;
  epi_in.port = port;
  epi_in.active_sms = active_sms;
  epi_in.stage_bytes = stage_bytes;
  epi_in.other_l2_main = other_l2_main;
  epi_in.stages_per_sm = stages_per_sm;
  epi_in.tile_main = r.tile_main;
  const internal::EpilogueTimes et = internal::PredictEpilogue(hw, d, s, epi_in);
  const double epi = et.duration, epi_exposed = et.exposed;
  r.skew_lead_stages = et.skew_lead_stages;
  r.skew_lead_time = et.skew_lead_time;
  r.epilogue_tile = epi;
  r.epilogue_exposed_tile = epi_exposed;

  // ---- Start-up: quantized rows for the first MMAs, then the first stage's TMA. ----
  internal::StartupInputs start_in;
  start_in.tiles = tiles;
  start_in.n_tiles = r.n_tiles;
  start_in.tiles_per_sm = tiles_per_sm;
  start_in.tile_main = r.tile_main;
  start_in.weight = weight;
  start_in.stage_bytes = stage_bytes;
  start_in.port = port;
  const internal::StartupTimes st = internal::PredictStartup(hw, d, p, start_in);
  r.startup_fill = st.fill;
  r.quant_bytes_per_s = st.quant_bytes_per_s;
  double keepup = st.keepup;
  r.startup_quant = st.quant_ready;
  r.t_startup = st.quant_ready + r.startup_fill;

  // ---- Whole kernel on the critical SM. ----
  r.t_fixup = fixup_partials > 0
                  ? std::max(fixup_partials * partial_bytes / port,
                             fixup_spread ? 0.0 : fixup_l2 / hw.l2_bytes_per_s.value) +
                        2 * hw.l2_latency_s.value
                  : 0;
  r.t_main = stages_per_sm * s.period + r.t_fixup;
  r.t_mma = stages_per_sm * s.mma;
  r.t_l2 = stages_per_sm * s.l2;
  r.t_smem = stages_per_sm * s.smem;
  r.t_latency = stages_per_sm * s.latency;
  r.t_epilogue = epilogues_per_sm * epi_exposed;
  // The last tile's (ping-pong, staged) or the trailing group's last (skewed): unhidden.
  if (EpilogueConcurrent(d) || Skewed(d)) r.t_epilogue += epi - epi_exposed;
  // Quantizer keep-up over the whole run: it must finish all rows before the GEMM needs them.
  if (!d.gemm_only && r.quant_bytes_per_s > 0) {
    const double all = M * K * 2 / r.quant_bytes_per_s;
    keepup = std::max(keepup, all - (r.t_startup + r.t_main + r.t_epilogue));
  }
  r.quant_keepup_stall = std::max(0.0, keepup);
  r.t_startup += r.quant_keepup_stall;
  r.t_waves = (tiles_per_sm - tiles / sms) * (r.tile_main + epi_exposed);
  r.l2_bytes_total = tiles * r.tile_bytes.Total() + other_l2 + (fixup_spread ? 0 : fixup_l2) +
                     (EpilogueDesynchronized(d) ? 0 : tiles * epi_bytes_tile);
  r.t_compute = r.t_startup + r.t_main + r.t_epilogue;
  // + the launch, ramp and drain every timed kernel pays once (Hardware::kernel_overhead_s).
  r.t_total = std::max(r.t_compute, r.t_dram) + hw.kernel_overhead_s.value;
  r.tflops = p.Flop() / r.t_total * 1e-12;
  if (r.t_dram > r.t_compute) {
    r.limiter = "DRAM";
  } else {
    r.limiter = s.limiter;
    if (r.t_epilogue > 0.1 * r.t_total) r.limiter += "+epilogue";
    if (r.t_startup > 0.1 * r.t_total) r.limiter += "+startup";
  }
  return r;
}

}  // namespace

Prediction Predict(const Hardware& hw, const Design& d, const Problem& p) {
  return internal::PredictWithExtraL2(hw, d, p, 0);
}

Prediction internal::PredictWithExtraL2(const Hardware& hw, const Design& d, const Problem& p,
                                        double extra_l2) {
  Prediction best = PredictWithSplitCap(hw, d, p, 0, extra_l2);
  const bool split_schedule =
      d.schedule == Schedule::kStreamKTail || (d.schedule == Schedule::kPhased && d.phases > 1);
  const double tiles = static_cast<double>(CeilDivI(p.m, d.bm) * (p.n / d.bn));
  if (split_schedule && tiles > 0 && tiles < hw.sms.value) {
    const int max_cap = static_cast<int>(std::ceil(hw.sms.value / tiles));
    for (int cap = 1; cap < max_cap; ++cap) {
      Prediction q = PredictWithSplitCap(hw, d, p, cap, extra_l2);
      if (q.t_total < best.t_total) best = q;
    }
  } else if (d.schedule == Schedule::kStreamKTail && tiles >= hw.sms.value) {
    // The tail's split: 1, 2, 4, ... SMs per tail tile, as the host would pick.
    for (int cap = 1; cap < hw.sms.value; cap *= 2) {
      Prediction q = PredictWithSplitCap(hw, d, p, cap, extra_l2);
      if (q.t_total < best.t_total) best = q;
    }
  }
  return best;
}

Calibration CalibrateToGemmAnchor(const Hardware& hw) {
  Calibration c;
  c.anchor_tflops = hw.gemm_anchor_tflops.value;
  // The reference with today's static schedule and with the phased one the v2 design uses: the
  // better of the two, so that the factor is the conservative one (a higher model figure for the
  // GEMM alone means a smaller factor for everything).
  Design phased = GemmOnlyReference();
  phased.schedule = Schedule::kPhased;  // as designs.cc's phased8 candidates
  phased.phases = 8;
  for (const Design& ref : {GemmOnlyReference(), phased}) {
    for (int64_t s = 4096; s <= 15360; s += 1024) {
      Problem p;
      p.m = p.n = p.k = s;
      const Prediction pr = Predict(hw, ref, p);
      if (pr.feasibility.ok && pr.tflops > c.model_best_tflops) {
        c.model_best_tflops = pr.tflops;
        c.best_square = s;
      }
    }
  }
  // Issue 29: no factor. The clock a GEMM sustains at the board's power limit is fitted to
  // every anchor at once (fit.h) instead; model_best_tflops vs the anchor is a cross-check.
  c.factor = 1.0;
  return c;
}

}  // namespace h3::perf_model
