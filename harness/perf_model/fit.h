#ifndef H3_HARNESS_PERF_MODEL_FIT_H_
#define H3_HARNESS_PERF_MODEL_FIT_H_

// The refit of the SM120 model (issue 29): published SM120 NVFP4 / MXFP4 GEMMs (the anchors),
// each predicted from its own kernel's design on its own board and power, and ONE parameter set
// fitted to all of them (no per-anchor factor), with each anchor's leave-one-out error (refit
// without it, predict it). Also the unfused pipeline a user would otherwise run: cuBLASLt GEMM
// + a separate activation quantizer + a separate gated-residual kernel.

#include <cstdint>
#include <string>
#include <vector>

#include "harness/perf_model/model.h"

namespace h3::perf_model {

enum class Board { kRtx5090, kRtxPro6000 };

// Before the fit: every constant at its prior (hardware.cc).
Hardware Rtx5090Unfitted();
Hardware RtxPro6000Unfitted();

// One fitted parameter: its prior, the range its source documents, and the wider box the fit
// may search (so that a fit outside the documented range shows, instead of being clipped).
struct FitParameter {
  const char* name;
  const char* unit;
  double scale;  // value x scale = the printed figure
  double prior, doc_low, doc_high, box_low, box_high;
};
const std::vector<FitParameter>& FitParameters();

struct Anchor {
  std::string name;
  std::string source;
  std::string design_note;  // the kernel's design, [ASSUMED] where not published
  Board board = Board::kRtx5090;
  double power_w = 600;
  Problem problem;
  std::vector<int64_t> ms;      // several M: the prediction is their mean (a chart's range)
  std::vector<Design> designs;  // a library picks the best of these ([ASSUMED] set)
  double measured = 0;
  bool omma_loop = false;  // a register-only OMMA loop at its measured clock (no GEMM)
  double loop_clock_ghz = 0;
};
std::vector<Anchor> Anchors();

// The hardware of a board with parameter vector x (FitParameters() order) applied.
Hardware ApplyFit(Hardware h, Board board, const std::vector<double>& x);
double PredictAnchor(const Anchor& a, const std::vector<double>& x);
// Rtx5090() / RtxPro6000(): the unfitted board with Refit()'s parameters, each a Cited that says
// it was fitted, its prior and documented range, and whether the fit left that range; its range
// for the Monte Carlo is the leave-one-out fits' spread (the documented range where the anchors
// do not pin it: spread < 1% of it).
Hardware FittedHardware(Hardware h, Board board);
// Whether the fitted value of FitParameters()[j] lies outside its documented range.
bool OutsideDocumentedRange(size_t j, double value);

struct AnchorRow {
  std::string name;
  double measured = 0, predicted = 0, error = 0;  // error = predicted / measured - 1
  double loo_predicted = 0, loo_error = 0;        // fitted without this anchor
};
struct FitResult {
  std::vector<double> params;                    // fitted to every anchor
  std::vector<std::vector<double>> loo_params;   // [anchor] fitted without it
  std::vector<AnchorRow> rows;
  double worst_error = 0, worst_loo_error = 0;   // largest |error|
};
// Fits the parameters to the anchors (all but `leave_out`, -1 for none): a MAP fit, least squares
// of the log error (sigma 3% per anchor) plus a Gaussian prior per parameter (its documented range
// = +-1 sigma around its prior), so that a parameter no remaining anchor constrains stays near its
// prior. Coordinate descent from three starts, deterministic.
std::vector<double> FitParams(const std::vector<Anchor>& anchors, int leave_out);
// The fit and the leave-one-out table, computed once.
const FitResult& Refit();

// The done-when tolerances of issue 29.
inline constexpr double kAnchorTolerance = 0.08, kLeaveOneOutTolerance = 0.12;
// `anchors: K of K within +-P% (worst W%)`.
std::string AnchorsLine(const FitResult& f, double tolerance = kAnchorTolerance);

// The cuBLASLt GEMM the anchors model ([ASSUMED]: the best of three cooperative tiles, static or
// stream-K tail), for the unfused pipeline and the anchors.
std::vector<Design> CublasLtDesigns();

// What a user runs without the fused kernel: three launches.
struct Unfused {
  double t_quant = 0, t_gemm = 0, t_epilogue = 0;
  double Total() const { return t_quant + t_gemm + t_epilogue; }
};
Unfused PredictUnfused(const Hardware& hw, const Problem& p);

}  // namespace h3::perf_model

#endif  // H3_HARNESS_PERF_MODEL_FIT_H_
