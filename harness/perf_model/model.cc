#include "harness/perf_model/model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"

namespace h3::perf_model {
namespace {

constexpr double kSubPartitions = 4;             // SMSPs per SM, each with its own tensor pipe
constexpr double kOmmaFlop = 2.0 * 16 * 8 * 64;  // one mma.m16n8k64
constexpr double kMbarrierClk = 20;              // try_wait + arrive + stage bookkeeping
constexpr double kSmemAlignPad = 1024 - 16;      // config.cuh: kSmemAlign - 16
constexpr double kWavefront = 128;               // bytes of one shared-memory wavefront
// L1 wavefronts of one epilogue warp access from the MMA C layout: 8 rows, one line each.
constexpr double kEpiWavefrontsPerAccess = 8;
// Consumer issue slots per warp, from NOTES.md's SASS reading of the sm_120a main loop
// (per stage of 4 k-steps: 64 OMMA, 44 NOP, 24 LDSM, 20 LDS, 37 other = 189), generalized:
constexpr double kNopPerOmma = 44.0 / 64.0;  // nvcc pads every OMMA pair with NOPs
constexpr double kOtherPerKStep = 5;         // address arithmetic per k-step
constexpr double kOtherPerStage = 17;        // barrier wait / arrive, stage index, loop
// Quantizer registers (estimate): pointers, loop state, qp, the 16 converted values, and the
// two uint4 loads of each block in flight.
// Calibrated to ptxas: the kernel's depth-4 quantizer loop compiles into the producers' 56
// registers (setmaxnreg 56 / 224, sm_120f) with 0 spills, so base + 4 x 8 <= 56.
constexpr int kQuantRegsBase = 24;
constexpr int kQuantRegsPerDepth = 8;
// Consumer registers beyond accumulators and fragments: addresses, indices, barriers, loop.
constexpr int kConsumerRegsOverhead = 24;
// nvcc interleaves the next k-step's fragment loads into the current k-step's MMAs (SASS):
// ~1.5 fragment sets live at once; a cross-stage prefetch makes it ~2.
constexpr double kFragSetsLive = 1.5;
constexpr double kFragSetsLiveCrossStage = 2.0;

int64_t CeilDivI(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool Skewed(const Design& d) { return d.epilogue == Epilogue::kSkewedGroups; }
// Depth of the ring that holds the activation codes and scales.
int AStages(const Design& d) { return d.a_stages > 0 ? d.a_stages : d.stages; }

// Activation-scale bytes one stage occupies in shared memory, and the scale bytes the TMA moves
// per stage (redundant loads move more than they use).
double SfaStageBytesLoaded(const Design& d) {
  const double used = d.bm * (d.bk / 16.0);
  if (d.sfa_load == SfaLoad::kRedundant16B) return d.bm * 16.0;
  return used;
}
double SfaSmemBytes(const Design& d) {
  switch (d.sfa_load) {
    case SfaLoad::kTmaBox:
    case SfaLoad::kBulkRepacked:
      return AStages(d) * d.bm * (d.bk / 16.0);
    case SfaLoad::kRedundant16B:
      return AStages(d) * d.bm * 16.0;
    case SfaLoad::kTmaBoxPairStages:
      // floor(S/2)+1 slots of two k-blocks each: stage s+S (pair (s+S)/2) is issued when stage s
      // is released, but pair slot (s+S)/2 - slots is free only after its odd stage.
      return (AStages(d) / 2 + 1) * d.bm * 16.0;
  }
  return 0;
}
double SfbStageBytes(const Design& d) { return d.bn * (d.bk / 16.0); }
double StageBytes(const Design& d) {
  return d.bm * d.bk / 2.0 + d.bn * d.bk / 2.0 + SfaStageBytesLoaded(d) + SfbStageBytes(d);
}
// Partial tiles the owner of a split tile reads when every SM runs `work` of a tile's `per_tile`
// units (k-blocks or phase slices) contiguously: none when whole tiles line up.
double SplitPartials(double work, double per_tile) {
  if (work >= per_tile) return std::fmod(work, per_tile) == 0 ? 0 : 1;
  return std::ceil(per_tile / work) - 1 + (std::fmod(per_tile, work) == 0 ? 0 : 1);
}
int WarpsPerGroup(const Design& d) { return d.warps_m * d.warps_n; }
bool EpilogueConcurrent(const Design& d) {
  return d.epilogue == Epilogue::kPingPong || d.epilogue == Epilogue::kSmemStaged;
}
bool EpilogueDesynchronized(const Design& d) {
  return EpilogueConcurrent(d) || Skewed(d) || (d.schedule == Schedule::kPhased && d.phases > 1);
}

Feasibility CheckFeasibility(const Hardware& hw, const Design& d, const Problem& p) {
  Feasibility f;
  auto fail = [&f](const std::string& why) {
    f.ok = false;
    f.reasons.push_back(why);
  };
  if (d.bm % (16 * d.warps_m) != 0 || d.bn % (8 * d.warps_n) != 0) fail("warp grid does not tile");
  if (d.NFrags() % 2 != 0) fail("ldmatrix.x4 loads B fragments in pairs: warp tile n % 16");
  if (d.bk % 64 != 0) fail("BK must be whole m16n8k64 k-steps");
  if (d.bk / 2 != 32 && d.bk / 2 != 64 && d.bk / 2 != 128) {
    fail("code rows of BK/2 bytes must be a TMA swizzle span (32/64/128 B): BK in {64,128,256}");
  }
  if (d.bm > 256 || d.bn > 256) fail("TMA box rows <= 256");
  if (p.n % d.bn != 0) fail(absl::StrFormat("N=%d not a multiple of BN=%d", p.n, d.bn));
  if (p.k % d.bk != 0) fail(absl::StrFormat("K=%d not a multiple of BK=%d", p.k, d.bk));
  if (d.stages < 2) fail("at least 2 stages");
  const double sfa_row = d.bk / 16.0;  // bytes of act_sf per row per stage
  switch (d.sfa_load) {
    case SfaLoad::kTmaBox:
      if (std::fmod(sfa_row, 16.0) != 0) {
        fail(absl::StrFormat(
            "act-scale TMA box [%d][%g B]: inner box must be a multiple of 16 B (needs BK>=256)",
            d.bm, sfa_row));
      }
      break;
    case SfaLoad::kTmaBoxPairStages:
      if (sfa_row * 2 != 16) fail("pair-stage act-scale box needs BK = 128 (2 x 8 B = 16 B)");
      break;
    case SfaLoad::kBulkRepacked:
      if (std::fmod(d.bm * sfa_row, 16.0) != 0) fail("bulk copy size not a multiple of 16 B");
      break;
    case SfaLoad::kRedundant16B:
      if (sfa_row > 16) fail("redundant 16-byte act-scale box only for BK <= 256");
      break;
  }
  if (d.Threads() > 1024) fail("more than 1024 threads");

  // Shared memory.
  f.stage_bytes = static_cast<int64_t>(StageBytes(d));
  double smem = AStages(d) * d.bm * d.bk / 2.0 + d.stages * (d.bn * d.bk / 2.0 + SfbStageBytes(d)) +
                SfaSmemBytes(d);
  // full/empty mbarriers: one ring, or the A ring and one B ring per group.
  smem += 2.0 * 8 * (Skewed(d) ? AStages(d) + 2 * d.stages : d.stages);
  if (d.sfa_load == SfaLoad::kTmaBoxPairStages) smem += 2.0 * (AStages(d) / 2 + 1) * 8;
  const bool stages_gate =
      d.gate_in_smem && (d.epilogue == Epilogue::kSerialL2Prefetch ||
                         d.epilogue == Epilogue::kPingPong || d.epilogue == Epilogue::kSmemStaged);
  if (stages_gate) {
    // gate_index[m-tile] and gate[:, n-tile] TMA'd per tile by the load warp (per group).
    smem += d.consumer_groups * (d.bm * 4.0 + p.g * d.bn * 2.0 + 16);
  }
  if (d.epilogue == Epilogue::kSmemStaged) smem += d.consumer_groups * d.bm * d.bn * 2.0;
  smem += kSmemAlignPad;
  f.smem_bytes = static_cast<int64_t>(smem);
  if (smem > hw.smem_per_block.value) {
    fail(absl::StrFormat("shared memory %d B > %d B per block", f.smem_bytes,
                         static_cast<int64_t>(hw.smem_per_block.value)));
  }

  // Registers.
  const int threads = d.Threads();
  f.launch_regs = std::min(255, static_cast<int>(hw.regs_per_sm.value / threads) / 8 * 8);
  const int acc = d.WarpTileM() * d.WarpTileN() / 32;
  const int sfa_regs = d.MFrags() * std::max(1, d.KSteps());  // one word per k-step per frag
  const int sfb_regs = d.NFrags() * (d.sfb_once_per_stage ? d.KSteps() : 1);
  const int frag = d.MFrags() * 4 + d.NFrags() * 2 + sfa_regs + sfb_regs;
  const double live = d.frag_prefetch_across_stages ? kFragSetsLiveCrossStage : kFragSetsLive;
  int need = acc + static_cast<int>(std::ceil(live * frag)) + kConsumerRegsOverhead;
  if (d.epilogue == Epilogue::kSerialL2Prefetch || d.epilogue == Epilogue::kPingPong) {
    // Residual words held before the stores (fragments are dead by then): never the binding
    // term below 32 words.
    need = std::max(need, acc + 32 + kConsumerRegsOverhead);
  }
  f.consumer_regs_needed = need;
  f.producer_regs_needed = d.gemm_only ? 32 : kQuantRegsBase + kQuantRegsPerDepth * d.quant_depth;
  int rc = f.launch_regs, rp = f.launch_regs;
  if (d.setmaxnreg) {
    const int producer_warps = d.load_warps + d.quant_warps;
    if (producer_warps != 4 || d.ConsumerWarps() % 4 != 0) {
      fail("setmaxnreg acts per warpgroup: producers must be one warpgroup of 4 warps");
    }
    rc = d.regs_consumer;
    rp = d.regs_producer;
    for (int r : {rc, rp}) {
      if (r % 8 != 0 || r < 24 || r > 256)
        fail(absl::StrFormat("setmaxnreg %d not in 24..256/8", r));
    }
    f.regs_total = 32LL * producer_warps * rp + 32LL * d.ConsumerWarps() * rc;
    // CUTLASS keeps the sum within the launch allocation (e.g. 40 + 232 over 384 threads at 168).
    if (f.regs_total > static_cast<int64_t>(threads) * f.launch_regs) {
      fail(absl::StrFormat("setmaxnreg %d/%d: %d registers > launch allocation %d x %d", rp, rc,
                           f.regs_total, threads, f.launch_regs));
    }
  } else {
    f.regs_total = static_cast<int64_t>(threads) * f.launch_regs;
  }
  if (f.regs_total > hw.regs_per_sm.value) fail("more registers than the SM has");
  if (need > rc) {
    fail(absl::StrFormat("consumer needs ~%d registers/thread (estimate), has %d", need, rc));
  }
  if (f.producer_regs_needed > rp) {
    fail(absl::StrFormat("quantizer (depth %d) needs ~%d registers/thread (estimate), has %d",
                         d.quant_depth, f.producer_regs_needed, rp));
  }
  if (d.epilogue == Epilogue::kPingPong && d.consumer_groups != 2) {
    fail("ping-pong needs two consumer groups");
  }
  if (Skewed(d) && (d.consumer_groups != 1 || d.warps_n % 2 != 0 || d.bn % 256 != 0)) {
    fail("skewed groups split one tile's N into halves of whole 128-row weight-scale groups");
  }
  if (d.a_stages > 0 && d.a_stages < d.stages) fail("the A ring is at least as deep as B's");
  return f;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Hardware.

double Hardware::ClockHz() const {
  return mma_tflops.value * 1e12 / (sms.value * mma_flop_per_clk_per_sm.value);
}
double Hardware::OmmaSeconds() const {
  return kOmmaFlop / (mma_flop_per_clk_per_sm.value / kSubPartitions) / ClockHz();
}

// ---------------------------------------------------------------------------------------------
// Predict.

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

// One quantizer iteration of `depth` blocks per lane: a DRAM round trip plus its ALU work.
double QuantIterSeconds(const Hardware& hw, const Design& d) {
  return hw.dram_latency_s.value +
         d.quant_depth * hw.quant_instr_per_block.value / hw.quant_warp_ipc.value / hw.ClockHz();
}

}  // namespace

namespace {

// split_cap: with fewer tiles than SMs, a split schedule (stream-K tail, phases) uses at most
// tiles x split_cap SMs; 0 = all of them. Predict() picks the best cap, as the host would.
Prediction PredictWithSplitCap(const Hardware& hw, const Design& d, const Problem& p,
                               int split_cap) {
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
        const double tail_kb = std::ceil(rem * kb / sms_used);
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
  const double lds_w = d.MFrags() + d.NFrags() * (d.sfb_once_per_stage ? 1.0 : d.KSteps());
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
      wpg * ldsm_w * 4 + wpg * (d.MFrags() * 2.0 + (lds_w - d.MFrags())) + stage_bytes / kWavefront;
  double other_l2 = 0;  // SM-side L2 bytes of the whole call besides the operand feed
  double epi_bytes_tile = 0;
  if (!d.gemm_only) {
    const double quant_bytes = M * K * 2 + r.dram.act_write;
    other_l2 += quant_bytes;
    wavefronts += quant_bytes / sms / std::max(1.0, stages_per_sm) / kWavefront;
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
  // Little's law on the ring: (stages - 1) stages in flight cover one TMA round trip.
  s.latency = (hw.tma_latency_s.value + stage_bytes / port) / (d.stages - 1);
  s.period = std::max({s.mma, s.smem, s.l2, s.latency});
  s.limiter = s.period == s.mma    ? (s.mma == s.issue ? "issue" : "MMA")
              : s.period == s.smem ? "smem"
              : s.period == s.l2   ? "L2"
                                   : "TMA latency";
  r.tile_main = kb * s.period;

  // ---- Epilogue of one tile. ----
  // SMs whose epilogues burst at the same time: all of them in lockstep (identical tiles,
  // simultaneous start); 1/phases of them with phase groups; one at a time (in the limit) when
  // the epilogue runs under another group's main loop.
  const double sync_sms = EpilogueConcurrent(d) ? 1.0
                          : (d.schedule == Schedule::kPhased && d.phases > 1)
                              ? std::max(1.0, active_sms / d.phases)
                              : active_sms;
  // L2 left to a burst: what the SMs still in their main loops do not use.
  const double main_demand_sm =
      (stage_bytes + (stages_per_sm > 0 ? other_l2_main / active_sms / stages_per_sm : 0)) /
      s.period;
  const double l2_for_burst =
      std::max(0.05 * hw.l2_bytes_per_s.value,
               hw.l2_bytes_per_s.value - (active_sms - sync_sms) * main_demand_sm);
  const double pairs = d.bm * d.bn / 2.0;
  const double epi_warps = d.epilogue == Epilogue::kSmemStaged ? wpg : wpg;
  const double epi_w_per_smsp = std::max(1.0, std::ceil(epi_warps / kSubPartitions));
  const double alu =
      pairs * d.epilogue_instr_per_pair / 32 / std::min(kSubPartitions, epi_warps) / clk;
  const double res_b = d.bm * d.bn * 2.0, out_b = d.bm * d.bn * 2.0;
  // L1 wavefronts of the epilogue's memory instructions (gate, residual, out: 3 per pair at 4
  // bytes per lane, 3/4 at 16), 8 per warp instruction (8 rows of the C layout), one per clock
  // per SM; 16-byte accesses add the quad transposes' shuffles (2 per pair, a warp's per clock).
  // Calibrated on the H200, where 4 -> 16 bytes cut the exposed epilogue by 33-46% (NOTES.md).
  const double pairs_per_access = d.epilogue_access_bytes / 4.0;
  const double lsu = (pairs * 3.0 / pairs_per_access / 32 * kEpiWavefrontsPerAccess +
                      (d.epilogue_access_bytes > 4 ? pairs * 2.0 / 32 : 0.0)) /
                     clk;
  // Bandwidth in a burst: the bursting SMs share the L2 the others leave (and DRAM for a
  // residual not yet in L2); one SM alone bursts at its port rate.
  auto burst = [&](double l2_bytes, double dram_bytes) {
    const double l2 = std::max(l2_bytes * sync_sms / l2_for_burst, l2_bytes / port);
    const double dram = dram_bytes * sync_sms / hw.dram_bytes_per_s.value;
    return std::max(l2, dram);
  };
  double epi = 0, epi_exposed = 0;
  const double words_per_thread = pairs / (32.0 * wpg);
  // What-if (model.h Design::epilogue_time_scale): every epilogue duration below x scale, before
  // the overlap hides part of it.
  const double scale = d.epilogue_time_scale;
  switch (d.epilogue) {
    case Epilogue::kSerialDram: {
      // One (i, h) fragment row per round trip: the residual load cannot move above the
      // previous row's stores (residual may alias out); gate_index -> gate rides alongside.
      const double lat = 2.0 * d.MFrags() * hw.dram_latency_s.value;
      epi = scale * std::max({lat + alu / epi_w_per_smsp + lsu, burst(res_b + out_b, res_b), alu});
      epi_exposed = epi;
      break;
    }
    case Epilogue::kSerialL2Prefetch:
    case Epilogue::kPingPong: {
      const double batches = std::ceil(words_per_thread / 32.0);
      // + gate_index, + the gate's columns when they are not staged in shared memory.
      const double lat = (batches + 1 + (d.gate_in_smem ? 0 : 1)) * hw.l2_latency_s.value;
      epi = scale * std::max({lat + alu / epi_w_per_smsp + lsu, burst(res_b + out_b, 0), alu});
      epi_exposed = d.epilogue == Epilogue::kPingPong ? std::max(0.0, epi - r.tile_main) : epi;
      break;
    }
    case Epilogue::kSmemStaged: {
      // Consumers: t = bf16(gate * o) into smem (~7 instr per pair incl. the STS) + a barrier;
      // producers: residual from L2 (prefetched) + add + store, under the next main loop.
      const double consumer =
          scale * (pairs * 7.0 / 32 / std::min(kSubPartitions, epi_warps) / clk +
                   res_b / hw.smem_bytes_per_clk.value / clk + kMbarrierClk / clk);
      const double producer =
          scale *
          std::max({pairs * 6.0 / 32 / std::max(1, d.quant_warps) / hw.quant_warp_ipc.value / clk,
                    burst(res_b + out_b, 0), 2 * hw.l2_latency_s.value});
      epi = consumer + producer;
      epi_exposed = consumer + std::max(0.0, producer - r.tile_main);
      break;
    }
    case Epilogue::kSkewedGroups: {
      // One group's epilogue: half the pairs, half the warps (one per sub-partition), beside
      // the other group's MMAs. Across SMs the tiles stay in lockstep: every SM's leading group
      // bursts at once (half a tile each).
      const double batches = std::ceil(words_per_thread / 32.0);
      const double lat = (batches + 1 + (d.gate_in_smem ? 0 : 1)) * hw.l2_latency_s.value;
      const double alu_h =
          pairs / 2 * d.epilogue_instr_per_pair / 32 / std::min(kSubPartitions, wpg / 2.0) / clk;
      epi = scale * std::max({lat + alu_h + lsu / 2, burst((res_b + out_b) / 2, 0), alu_h});
      // The leader runs ahead on A stages the trailer has not released: at most the A ring
      // less the trailer's stage. At that lead the newest stage was issued one shared period
      // ago (when the trailer released its slot), so a TMA round trip longer than a period
      // holds the leader back by the difference; in the shared phase that costs nothing (the
      // trailer keeps the pipes busy) but it lowers the lead the steady state settles at.
      // The lead persists: each group runs alone exactly while the other is in its epilogue.
      const double a_stage_bytes = d.bm * d.bk / 2.0 + SfaStageBytesLoaded(d);
      const double fill = hw.tma_latency_s.value + a_stage_bytes / port;
      r.skew_lead_stages = std::max(0.0, AStages(d) - 1 - std::max(0.0, fill / s.period - 1));
      // Alone, a group has the tensor pipes to itself: half the stage's OMMAs, one MMA warp per
      // sub-partition at hw.single_warp_mma of the full rate (the stage-boundary stall applies).
      const double eta = hw.single_warp_mma.value;
      const double w_alone = s.tensor / 2 / eta + (hw.ldsm_latency_clk.value + kMbarrierClk) / clk;
      r.skew_lead_time = r.skew_lead_stages * w_alone;
      // Per tile the tensor pipes idle only while both groups are in their epilogues (the
      // trailer covers the leader's with its lag, the leader the trailer's with its lead), and
      // run at eta during the two alone phases: exposed = idle + alone time x (1 - eta).
      epi_exposed =
          std::max(0.0, epi - r.skew_lead_time) + 2 * (1 - eta) * std::min(epi, r.skew_lead_time);
      break;
    }
    case Epilogue::kStoreOnly:
      epi = scale * std::max({hw.l2_latency_s.value + alu / epi_w_per_smsp, burst(out_b, 0), alu});
      epi_exposed = epi;
      break;
    case Epilogue::kNone:
      break;
  }
  r.epilogue_tile = epi;
  r.epilogue_exposed_tile = epi_exposed;

  // ---- Start-up: quantized rows for the first MMAs, then the first stage's TMA. ----
  r.startup_fill = hw.tma_latency_s.value + stage_bytes / port;
  const double first_tiles = std::min(tiles, sms);
  double first_m_tiles = std::ceil(first_tiles / r.n_tiles);
  if (d.schedule == Schedule::kPhased && d.phases > 1) {
    // Groups g >= 1 begin on k-slices of tail tiles: their m-tiles too.
    first_m_tiles += std::ceil(sms * (d.phases - 1) / (2.0 * d.phases) / r.n_tiles);
  }
  const double first_rows = std::min(M, first_m_tiles * d.bm);
  // The first wave reads the weight columns of its n-tiles from DRAM (m-tile-major order).
  const double first_n_frac = std::min(1.0, first_tiles / r.n_tiles);
  double quant_ready = 0, keepup = 0;
  // The critical SM's first tile (or its whole share, if less than a tile).
  const double first_main = std::min(1.0, tiles_per_sm) * r.tile_main;
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
  r.startup_quant = quant_ready;
  r.t_startup = quant_ready + r.startup_fill;

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
  r.t_total = std::max(r.t_compute, r.t_dram);
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
  Prediction best = PredictWithSplitCap(hw, d, p, 0);
  const bool split_schedule =
      d.schedule == Schedule::kStreamKTail || (d.schedule == Schedule::kPhased && d.phases > 1);
  const double tiles = static_cast<double>(CeilDivI(p.m, d.bm) * (p.n / d.bn));
  if (split_schedule && tiles > 0 && tiles < hw.sms.value) {
    const int max_cap = static_cast<int>(std::ceil(hw.sms.value / tiles));
    for (int cap = 1; cap < max_cap; ++cap) {
      Prediction q = PredictWithSplitCap(hw, d, p, cap);
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
  c.factor = (c.anchor_tflops > 0 && c.model_best_tflops > 0)
                 ? c.anchor_tflops / c.model_best_tflops
                 : 1.0;
  return c;
}

QuantizeStandalone PredictStandaloneQuantize(const Hardware& hw, int64_t m, int64_t k,
                                             double issue_efficiency) {
  QuantizeStandalone q;
  const double elems = static_cast<double>(m) * k;
  const double read = elems * 2, total = elems * (2 + 0.5 + 1.0 / 16);
  const double clk = hw.ClockHz();
  // Full occupancy: every sub-partition issues; one block per thread.
  const double issue_read_bps = hw.sms.value * kSubPartitions * clk * issue_efficiency * 32.0 /
                                hw.quant_instr_per_block.value * 32.0;
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
