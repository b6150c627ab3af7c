// The epilogue of one tile: its own duration and the part of it no main loop hides, per
// epilogue design (model.h Epilogue), given the stage the main loop runs.

#include <algorithm>
#include <cmath>

#include "harness/perf_model/model.h"
#include "harness/perf_model/model_internal.h"

namespace h3::perf_model::internal {
namespace {

// L1 wavefronts of one epilogue warp access from the MMA C layout: 8 rows, one line each.
constexpr double kEpiWavefrontsPerAccess = 8;

}  // namespace

EpilogueTimes PredictEpilogue(const Hardware& hw, const Design& d, const StageTimes& s,
                              const EpilogueInputs& in) {
  const double clk = in.clk, port = in.port, active_sms = in.active_sms;
  const double stage_bytes = in.stage_bytes, stages_per_sm = in.stages_per_sm;
  const double other_l2_main = in.other_l2_main, tile_main = in.tile_main;
  const int wpg = WarpsPerGroup(d);
  EpilogueTimes r;

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
  const double epi_warps = wpg;  // the consumer group runs the epilogue
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
  // Every epilogue duration below x scale, before the overlap hides part of it: the what-if
  // (Design::epilogue_time_scale) x the measured ratio (Hardware::epilogue_ratio) for the fused
  // epilogues (the GEMM-only reference's store is inside the cuBLASLt calibration).
  const double scale = d.epilogue_time_scale * (d.gemm_only ? 1.0 : hw.epilogue_ratio.value);
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
      // + gate_index, + the gate's columns when they are not staged in shared memory. A
      // GEMM alone (the CuTe DSL ping-pong anchors) only stores D: one round trip, no reads.
      const double lat = d.gemm_only ? hw.l2_latency_s.value
                                     : (batches + 1 + (d.gate_in_smem ? 0 : 1)) *
                                           hw.l2_latency_s.value;
      const double bytes = d.gemm_only ? out_b : res_b + out_b;
      epi = scale * std::max({lat + alu / epi_w_per_smsp + lsu, burst(bytes, 0), alu});
      epi_exposed = d.epilogue == Epilogue::kPingPong ? std::max(0.0, epi - tile_main) : epi;
      break;
    }
    case Epilogue::kSmemStaged: {
      // Consumers: t = bf16(gate * o) into smem (~7 instr per pair incl. the STS) + a barrier,
      // + gate_index -> gate from global (two dependent L2 round trips; one where gate_index is
      // loaded at the tile's start, as the built kernel does: kernels/device/staged_epilogue.cuh)
      // when the gate is not staged in shared memory;
      // producers: residual from L2 (prefetched) + add + store, under the next main loop.
      const double consumer =
          scale * (pairs * 7.0 / 32 / std::min(kSubPartitions, epi_warps) / clk +
                   res_b / hw.smem_bytes_per_clk.value / clk + kMbarrierClk / clk +
                   (d.gate_in_smem ? 0 : d.gate_index_early ? 1 : 2) * hw.l2_latency_s.value);
      const double producer =
          scale *
          std::max({pairs * 6.0 / 32 / std::max(1, d.quant_warps) / hw.quant_warp_ipc.value / clk,
                    burst(res_b + out_b, 0), 2 * hw.l2_latency_s.value});
      epi = consumer + producer;
      epi_exposed = consumer + std::max(0.0, producer - tile_main);
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
      const double fill = s.tma_latency + a_stage_bytes / port;  // loaded, as in the stage
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
  r.duration = epi;
  r.exposed = epi_exposed;
  return r;
}

}  // namespace h3::perf_model::internal
