#ifndef H3_HARNESS_PERF_MODEL_MODEL_INTERNAL_H_
#define H3_HARNESS_PERF_MODEL_MODEL_INTERNAL_H_

// Private to the model library: what Predict (model.cc) shares with the feasibility check
// (feasibility.cc), the epilogue model (epilogue.cc) and the quantizer model (quantizer.cc).

#include <cstdint>

#include "harness/perf_model/model.h"

namespace h3::perf_model::internal {

constexpr double kSubPartitions = 4;  // SMSPs per SM, each with its own tensor pipe
constexpr double kMbarrierClk = 20;   // try_wait + arrive + stage bookkeeping
// The L2 utilisation the TMA latency's queueing term saturates at (latency <= 5x unloaded): near
// rho = 1 the L2 term of the period binds first, and a pure 1 / (1 - rho) would diverge there.
constexpr double kMaxL2Utilisation = 0.8;

inline int64_t CeilDivI(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline bool Skewed(const Design& d) { return d.epilogue == Epilogue::kSkewedGroups; }
// Depth of the ring that holds the activation codes and scales.
inline int AStages(const Design& d) { return d.a_stages > 0 ? d.a_stages : d.stages; }
inline int WarpsPerGroup(const Design& d) { return d.warps_m * d.warps_n; }

// The activation-scale bytes the TMA moves per stage (redundant loads move more than they use).
inline double SfaStageBytesLoaded(const Design& d) {
  const double used = d.bm * (d.bk / static_cast<double>(d.sf_vec));
  if (d.sfa_load == SfaLoad::kRedundant16B) return d.bm * 16.0;
  return used;
}
inline double SfbStageBytes(const Design& d) {
  return d.bn * (d.bk / static_cast<double>(d.sf_vec));
}
inline double StageBytes(const Design& d) {
  return d.bm * d.bk / 2.0 + d.bn * d.bk / 2.0 + SfaStageBytesLoaded(d) + SfbStageBytes(d);
}

// Epilogues that run under another consumer group's main loop.
inline bool EpilogueConcurrent(const Design& d) {
  return d.epilogue == Epilogue::kPingPong || d.epilogue == Epilogue::kSmemStaged;
}
// Epilogues whose bursts do not fall on every SM at once.
inline bool EpilogueDesynchronized(const Design& d) {
  return EpilogueConcurrent(d) || Skewed(d) || (d.schedule == Schedule::kPhased && d.phases > 1);
}

// Shared memory, registers and the layout rules of the design on this hardware and problem.
Feasibility CheckFeasibility(const Hardware& hw, const Design& d, const Problem& p);

// Predict() with `extra_l2_bytes` more SM-side L2 traffic spread over the main loop (the optional
// operands' reads and writes, options.cc); Predict() is this with 0.
Prediction PredictWithExtraL2(const Hardware& hw, const Design& d, const Problem& p,
                              double extra_l2_bytes);

// ---- The epilogue of one tile (epilogue.cc). ----

// What the epilogue model takes from the rest of Predict.
struct EpilogueInputs {
  double clk = 0;            // Hardware::ClockHz()
  double port = 0;           // one SM's L2 burst rate (bytes/s)
  double active_sms = 0;     // SMs that run tiles
  double stage_bytes = 0;    // StageBytes()
  double other_l2_main = 0;  // SM-side L2 bytes of the call besides operands, epilogues, fix-ups
  double stages_per_sm = 0;  // pipeline stages the critical SM runs
  double tile_main = 0;      // k_blocks x stage period
};

struct EpilogueTimes {
  double duration = 0;  // an epilogue's own duration (overlapped or not)
  double exposed = 0;   // what no main loop hides
  // kSkewedGroups: A stages the leading group can run ahead, and the time that buys.
  double skew_lead_stages = 0, skew_lead_time = 0;
};

EpilogueTimes PredictEpilogue(const Hardware& hw, const Design& d, const StageTimes& s,
                              const EpilogueInputs& in);

// ---- The quantizer's start-up (quantizer.cc). ----

struct StartupInputs {
  double tiles = 0;         // tiles of the call
  int64_t n_tiles = 0;      // tiles along N
  double tiles_per_sm = 0;  // what the critical SM runs
  double tile_main = 0;     // k_blocks x stage period
  double weight = 0;        // the weight's bytes (codes + scales)
  double stage_bytes = 0;   // StageBytes()
  double port = 0;          // one SM's L2 burst rate (bytes/s)
};

struct StartupTimes {
  double fill = 0;               // first stage's TMA round trip
  double quant_bytes_per_s = 0;  // attn_out read rate of the quantizer warps (0: none)
  double quant_ready = 0;        // first MMA waits for quantized rows
  double keepup = 0;             // quantizer (or cold DRAM) behind the first tiles
};

StartupTimes PredictStartup(const Hardware& hw, const Design& d, const Problem& p,
                            const StartupInputs& in);

// One quantizer iteration of `quant_depth` blocks per lane: a DRAM round trip plus its ALU work.
double QuantIterSeconds(const Hardware& hw, const Design& d);

}  // namespace h3::perf_model::internal

#endif  // H3_HARNESS_PERF_MODEL_MODEL_INTERNAL_H_
