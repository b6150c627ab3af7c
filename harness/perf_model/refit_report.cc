// The refit's part of the perf_model report (issue 29): the fitted parameters, the anchors table
// with leave-one-out errors, and per GPU the candidate schedules with our fused work against the
// built default and the unfused cuBLASLt pipeline at one M.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "harness/perf_model/fit.h"
#include "harness/perf_model/model.h"
#include "harness/perf_model/reading.h"
#include "harness/perf_model/report.h"

namespace h3::perf_model {
namespace {

// The model's cuBLASLt-like GEMM (the anchors' design set) at its best square of 4096 .. 15360
// (step 1024): what gn-kernels' "Realistic SOL" table reports per board.
double BestCublasLtSquare(const Hardware& h) {
  double best = 0;
  for (int64_t s = 4096; s <= 15360; s += 1024) {
    Problem p;
    p.m = p.n = p.k = s;
    for (const Design& d : CublasLtDesigns()) {
      const Prediction pr = Predict(h, d, p);
      if (pr.feasibility.ok) best = std::max(best, pr.tflops);
    }
  }
  return best;
}

}  // namespace

void PrintRefit() {
  const FitResult& f = Refit();
  const std::vector<FitParameter>& ps = FitParameters();
  std::printf(
      "Refit (issue 29): ONE parameter set for every anchor, least squares of the log error "
      "(fit.cc); each anchor predicted from its own kernel's design, board and power limit.\n"
      "  %-36s %9s %9s %19s %19s  %s\n",
      "parameter", "fitted", "prior", "documented range", "leave-one-out", "");
  for (size_t j = 0; j < ps.size(); ++j) {
    double lo = f.params[j], hi = f.params[j];
    for (const std::vector<double>& l : f.loo_params) {
      lo = std::min(lo, l[j]);
      hi = std::max(hi, l[j]);
    }
    const double s = ps[j].scale;
    std::printf("  %-36s %9.4g %9.4g %19s %19s  %s%s\n", ps[j].name, f.params[j] * s,
                ps[j].prior * s,
                absl::StrFormat("%.4g .. %.4g", ps[j].doc_low * s, ps[j].doc_high * s).c_str(),
                absl::StrFormat("%.4g .. %.4g", lo * s, hi * s).c_str(), ps[j].unit,
                OutsideDocumentedRange(j, f.params[j]) ? "  OUTSIDE ITS DOCUMENTED RANGE" : "");
  }
  std::printf("\n  %-58s %9s %9s %7s %9s %7s\n", "anchor (TFLOP/s)", "measured", "predicted",
              "error", "LOO pred", "LOO err");
  const std::vector<Anchor> anchors = Anchors();
  for (size_t i = 0; i < f.rows.size(); ++i) {
    const AnchorRow& r = f.rows[i];
    std::printf("  %-58s %9.0f %9.0f %+6.1f%% %9.0f %+6.1f%%\n", r.name.c_str(), r.measured,
                r.predicted, r.error * 100, r.loo_predicted, r.loo_error * 100);
  }
  std::printf("  designs (source; [ASSUMED] where not published):\n");
  for (const Anchor& a : anchors) {
    std::printf("    %s: %s (%s)\n", a.name.c_str(), a.design_note.c_str(), a.source.c_str());
  }
  // Not an anchor of issue 29: gn-kernels' cuBLASLt NVFP4 on an RTX PRO 6000 (edition unstated).
  // The same table (one script, one software stack, the best square of 4096 .. 15360) has the
  // RTX 5090 too, so the model's excess on the 5090 row is what that stack and script lose against
  // the model's cuBLASLt-like design set (fitted to quack#153's runs on that board), and only
  // the PRO 6000 row's excess beyond it is the board's. Printed, never fitted.
  const Hardware pro = RtxPro6000(), g5090 = Rtx5090();
  const double m_pro = BestCublasLtSquare(pro), m_5090 = BestCublasLtSquare(g5090);
  const double gn_pro = pro.gemm_anchor_tflops.value;     // 1425.95 (hardware.cc)
  const double gn_5090 = g5090.gemm_anchor_tflops.value;  // 1306.48
  const double board = (m_pro / gn_pro) / (m_5090 / gn_5090) - 1;  // the PRO 6000's own share
  std::printf(
      "  cross-check, not fitted: gn-kernels' 'Realistic SOL' table, cuBLASLt NVFP4, best square "
      "4096..15360 at 600 W, one script and software stack for both boards: RTX 5090 %.0f "
      "measured, model %.0f (%+.1f%%); RTX PRO 6000 (edition unstated) %.0f measured, model %.0f "
      "(%+.1f%%). PRO 6000 / 5090: measured %.3f, model %.3f; the board's share of the excess "
      "%+.1f%% (the rest, %+.1f%%, what the table's runs lose against the anchors' on the 5090). "
      "Either the Server Edition of the CuTe DSL anchors sustains ~%.0f%% more clock than that "
      "board (its cuBLAS BF16, 427.6 TFLOP/s, says nothing of its clock in a power-limited NVFP4 "
      "GEMM), or the CuTe DSL ping-pong kernel is ~%.0f%% better than its design here and the fit "
      "carries that in the PRO 6000's clock (README). Unexplained, left outside the fit: \"every "
      "anchor within +-%.0f%%\" does not cover it.\n"
"  worst |error| %.1f%% (goal +-%.0f%%), worst leave-one-out |error| %.1f%% (goal +-%.0f%%)"
      "\n\n",
      gn_5090, m_5090, (m_5090 / gn_5090 - 1) * 100, gn_pro, m_pro, (m_pro / gn_pro - 1) * 100,
      gn_pro / gn_5090, m_pro / m_5090, board * 100, (m_5090 / gn_5090 - 1) * 100, board * 100,
      board * 100, kAnchorTolerance * 100, f.worst_error * 100,
      kAnchorTolerance * 100, f.worst_loo_error * 100, kLeaveOneOutTolerance * 100);
}

double XUnfused(const Hardware& h, int64_t m, double fused_tflops) {
  Problem p;
  p.m = m;
  const double fused_s = p.Flop() / (fused_tflops * 1e12);
  return PredictUnfused(h, p).Total() / fused_s;
}

void PrintCandidates(const Hardware& h, int64_t m, double goal) {
  Problem p;
  p.m = m;
  std::vector<Design> designs = BuiltDesigns();
  for (const Design& d : CuteScheduleDesigns()) designs.push_back(d);
  const Reading def = Read(h, designs[0], p);
  std::printf(
      "  %s, M = %lld: candidate schedules with our fused work (default reading; raw = before "
      "the clamp and the hand-kernel efficiency %.2f)\n  %-30s %8s %8s %8s %9s  %s\n",
      h.name.c_str(), static_cast<long long>(m), h.hand_kernel_efficiency.value, "design",
      "TFLOP/s", "raw", "vs dflt", "regs c/p", "limiter, or why not");
  size_t best = 0;
  double best_t = 0;
  for (size_t i = 0; i < designs.size(); ++i) {
    const Reading r = Read(h, designs[i], p);
    const Prediction& c = r.prediction;
    const std::string regs =
        designs[i].setmaxnreg
            ? absl::StrFormat("%d/%d", designs[i].regs_consumer, designs[i].regs_producer)
            : absl::StrFormat("%d", c.feasibility.launch_regs);
    if (!c.feasibility.ok) {
      std::printf("  %-30s %8s %8s %8s %9s  infeasible: %s\n", designs[i].name.c_str(), "-", "-",
                  "-", regs.c_str(), absl::StrJoin(c.feasibility.reasons, "; ").c_str());
      continue;
    }
    if (r.tflops > best_t) best_t = r.tflops, best = i;
    std::printf(
        "  %-30s %8.0f %8.0f %+7.1f%% %9s  %s; main %.1f + epi %.1f + start %.1f us; %s %.0f\n",
        designs[i].name.c_str(), r.tflops, r.model_tflops, (r.tflops / def.tflops - 1) * 100,
        regs.c_str(), (c.limiter + (r.clamped ? " (clamped)" : "")).c_str(), c.t_main * kUs,
        c.t_epilogue * kUs, c.t_startup * kUs, r.tflops >= goal ? "reaches" : "short of",
        goal);
  }
  const Unfused u = PredictUnfused(h, p);
  std::printf(
      "  unfused pipeline (quantizer %.1f + cuBLASLt GEMM %.1f + gated-residual kernel %.1f us = "
      "%.1f us, %.0f TFLOP/s): default config x%.2f, best (%s) x%.2f\n",
      u.t_quant * kUs, u.t_gemm * kUs, u.t_epilogue * kUs, u.Total() * kUs,
      p.Flop() / u.Total() * 1e-12, XUnfused(h, m, def.tflops), designs[best].name.c_str(),
      XUnfused(h, m, best_t));
  std::printf("  the refit model's pick at M = %lld: %s, %.0f TFLOP/s, %+.1f%% over %s (%.0f)\n",
              static_cast<long long>(m), designs[best].name.c_str(), best_t,
              (best_t / def.tflops - 1) * 100, designs[0].name.c_str(), def.tflops);
  // Item 2's "any design the refit suggests": the best of every fused design the model has,
  // the earlier candidates (designs.cc) included, built or not.
  const size_t built = BuiltDesigns().size();
  for (const Design& d : CandidateDesigns()) designs.push_back(d);
  size_t all_best = 0;
  double all_t = 0;
  for (size_t i = 0; i < designs.size(); ++i) {
    const Reading r = Read(h, designs[i], p);
    if (r.prediction.feasibility.ok && !designs[i].gemm_only && r.tflops > all_t) {
      all_t = r.tflops;
      all_best = i;
    }
  }
  std::printf(
      "  the best of every fused design the model has at M = %lld: %s, %.0f TFLOP/s, %+.1f%% over "
      "%s%s\n\n",
      static_cast<long long>(m), designs[all_best].name.c_str(), all_t,
      (all_t / def.tflops - 1) * 100, designs[0].name.c_str(),
      all_best < built ? " (built)" : " (not built)");
}

}  // namespace h3::perf_model
