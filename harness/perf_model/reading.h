#ifndef H3_HARNESS_PERF_MODEL_READING_H_
#define H3_HARNESS_PERF_MODEL_READING_H_

// The model's reading of a design (a model, NOT a measurement): the calibrated figure with the
// hand-kernel factor and the same-shape GEMM clamp, its spread over every ASSUMED input's
// stated range (a seeded Monte Carlo), the built configs' pick per M, the headline line for
// scripts, and the inputs a first SM12x run measures (for the bench to print beside its rows).

#include <cstdint>
#include <string>
#include <vector>

#include "harness/perf_model/model.h"

namespace h3::perf_model {

struct Reading {
  Prediction prediction;    // the design itself
  double model_tflops = 0;  // Predict()'s raw figure
  // Raw figure of the best GEMM alone at the same problem shape: GemmOnlyReference()'s tile or
  // the design's own (no quantizer, bf16 D stored).
  double gemm_tflops = 0;
  // The fused op does the same-shape GEMM and more: its raw figure is capped at the GEMM's.
  bool clamped = false;
  double calibration = 1;  // CalibrateToGemmAnchor(hw).factor
  // min(model, GEMM) x calibration x hw.hand_kernel_efficiency (GEMM-only designs: model x
  // calibration, neither clamped nor scaled: they are the library the anchor measured).
  double tflops = 0;
  double seconds = 0;  // the problem's FLOP / tflops
};
Reading Read(const Hardware& hw, const Design& d, const Problem& p, const Calibration& cal);
Reading Read(const Hardware& hw, const Design& d, const Problem& p);

// Every assumed input of `hw` that states a range, with a short name, in a fixed order.
struct AssumedInput {
  const char* name;
  Cited* input;
};
std::vector<AssumedInput> AssumedInputs(Hardware& hw);

struct UncertaintyOptions {
  int samples = 2000;
  uint64_t seed = 18;
  double goal_tflops = 1250;  // the goal
};

// A design at one M: low / high = the 5th / 95th percentiles of the calibrated figure when
// every assumed input is drawn from a triangular distribution over [low, high] with its default
// as the mode (the calibration recomputed per draw, as the anchor is measured); def = the
// reading at the defaults; p_goal = the share of draws >= the goal; clamped = the same-shape
// GEMM clamp binds at the defaults, clamped_share = in that share of the draws; feasible = the
// design fits the hardware and the problem at the defaults (the figures are then "if it fitted").
struct Uncertainty {
  double low = 0, def = 0, high = 0;
  double p_goal = 0;
  bool clamped = false;
  double clamped_share = 0;
  bool feasible = true;
};
// [design][m], deterministic for a seed.
std::vector<std::vector<Uncertainty>> ReadUncertainty(const Hardware& hw,
                                                      const std::vector<Design>& designs,
                                                      const std::vector<int64_t>& ms,
                                                      const UncertaintyOptions& options);

// The built configs: the registry's default first (kernels/device/tiles.h kOutProjTileDefault:
// the 128x128 with the staged epilogue, CurrentStagedDesign()), then the others in the
// registry's order (the lockstep 128x256, CurrentLockstepDesign(); the skewed 128x256,
// CurrentDesign(); the 128x128, Current128Design()). current_design_test checks them against the
// registry's configs.
std::vector<Design> BuiltDesigns();

// `headline: <GPU> M=<m> default-config low L default D high H TFLOP/s P(>=1250)=P
// x_unfused=X`, numbers plain (TFLOP/s rounded to integers, P and X to two decimals); <GPU> is
// hw.name up to " ("; X = the unfused pipeline's time over the default config's (fit.h).
std::string HeadlineLine(const Hardware& hw, int64_t m, const Uncertainty& u, double x_unfused,
                         double goal_tflops = 1250);

// The inputs a first SM12x run measures, as the model has them for a design and problem: the
// bench prints them beside its measurements (fused_128x256_one_group's one_warp_mma, fused -
// fused_no_epilogue, ...).
struct MeasurableInputs {
  double one_warp_mma = 0;    // Hardware::single_warp_mma (eta)
  double epilogue_ratio = 0;  // Hardware::epilogue_ratio, inside the exposed epilogue below
  // The call's exposed epilogue on the bench's scale: (t(design) - t(design, Epilogue::kNone))
  // / (calibration x hand efficiency), what `fused_128x256_lockstep - fused_128x256_lockstep_no_epilogue` measures.
  double exposed_epilogue_s = 0;
  double tma_latency_s = 0;         // unloaded stage latency (Hardware::tma_latency_s)
  double tma_latency_loaded_s = 0;  // at the modelled L2 utilisation below
  double l2_utilisation = 0;
  double l2_bytes_per_s = 0;
};
MeasurableInputs ModelMeasurableInputs(const Hardware& hw, const Design& d, const Problem& p);

}  // namespace h3::perf_model

#endif  // H3_HARNESS_PERF_MODEL_READING_H_
