// The refit (fit.h): one parameter set for every anchor, fitted by coordinate descent on the
// squared log errors, and the leave-one-out table.

#include "harness/perf_model/fit.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "harness/perf_model/model.h"

namespace h3::perf_model {
namespace {

enum Param { kClk5090, kClkPro, kTmaLatency, kQueueing, kL2Bandwidth5090, kBeta, kOverhead };

const Hardware& Unfitted(Board b) {
  static const Hardware* const k5090 = new Hardware(Rtx5090Unfitted());
  static const Hardware* const kPro = new Hardware(RtxPro6000Unfitted());
  return b == Board::kRtx5090 ? *k5090 : *kPro;
}

// A MAP fit: each anchor's log error as a Gaussian of sigma 3% (chart readings +-1%, another
// card of the same model, its cooling), each parameter's documented range as +-1 sigma (sigma =
// half its width) around its prior: weight (0.03 / 0.5)^2 per (shift / range width)^2.
constexpr double kPriorWeight = (0.03 / 0.5) * (0.03 / 0.5);

double Objective(const std::vector<Anchor>& anchors, int leave_out, const std::vector<double>& x) {
  const std::vector<FitParameter>& ps = FitParameters();
  double sum = 0;
  for (size_t i = 0; i < anchors.size(); ++i) {
    if (static_cast<int>(i) == leave_out) continue;
    const double e = std::log(PredictAnchor(anchors[i], x) / anchors[i].measured);
    sum += e * e;
  }
  for (size_t j = 0; j < ps.size(); ++j) {
    const double z = (x[j] - ps[j].prior) / (ps[j].doc_high - ps[j].doc_low);
    sum += kPriorWeight * z * z;
  }
  return sum;
}

}  // namespace

const std::vector<FitParameter>& FitParameters() {
  // Priors and documented ranges as hardware.cc states them (the clocks' and the exponent's
  // sources there); the box is what the fit may search.
  static const std::vector<FitParameter>* const ps = [] {
    const Hardware& a = Unfitted(Board::kRtx5090);
    const Hardware& b = Unfitted(Board::kRtxPro6000);
    auto* v = new std::vector<FitParameter>{
        {"RTX 5090 sustained clock @600 W", "GHz", 1, a.sustained_clock_ghz.value,
         a.sustained_clock_ghz.low, a.sustained_clock_ghz.high, 1.5, 2.87},
        {"RTX PRO 6000 sustained clock @600 W", "GHz", 1, b.sustained_clock_ghz.value,
         b.sustained_clock_ghz.low, b.sustained_clock_ghz.high, 1.5, 2.87},
        {"TMA stage latency (unloaded)", "ns", 1e9, a.tma_latency_s.value, a.tma_latency_s.low,
         a.tma_latency_s.high, 0.05e-6, 1.5e-6},
        {"L2 queueing q", "", 1, a.l2_queueing.value, a.l2_queueing.low, a.l2_queueing.high, 0.0,
         1.0},
        {"RTX 5090 L2 bandwidth", "TB/s", 1e-12, a.l2_bytes_per_s.value, a.l2_bytes_per_s.low,
         a.l2_bytes_per_s.high, 4.0e12, 8.7e12},
        {"clock-power exponent beta", "", 1, a.clock_power_exponent.value,
         a.clock_power_exponent.low, a.clock_power_exponent.high, 2.0, 6.0},
        {"kernel overhead", "us", 1e6, a.kernel_overhead_s.value, a.kernel_overhead_s.low,
         a.kernel_overhead_s.high, 0.0, 8e-6},
    };
    return v;
  }();
  return *ps;
}

Hardware ApplyFit(Hardware h, Board board, const std::vector<double>& x) {
  h.sustained_clock_ghz.value = x[board == Board::kRtx5090 ? kClk5090 : kClkPro];
  h.tma_latency_s.value = x[kTmaLatency];
  h.l2_queueing.value = x[kQueueing];
  if (board == Board::kRtx5090) h.l2_bytes_per_s.value = x[kL2Bandwidth5090];
  h.clock_power_exponent.value = x[kBeta];
  h.kernel_overhead_s.value = x[kOverhead];
  return h;
}

bool OutsideDocumentedRange(size_t j, double value) {
  const FitParameter& p = FitParameters()[j];
  return value < p.doc_low * (1 - 1e-9) || value > p.doc_high * (1 + 1e-9);
}

Hardware FittedHardware(Hardware h, Board board) {
  const FitResult& f = Refit();
  const std::vector<FitParameter>& ps = FitParameters();
  Hardware out = ApplyFit(h, board, f.params);
  Cited* cited[] = {&out.sustained_clock_ghz, &out.sustained_clock_ghz, &out.tma_latency_s,
                    &out.l2_queueing,         &out.l2_bytes_per_s,      &out.clock_power_exponent,
                    &out.kernel_overhead_s};
  for (size_t j = 0; j < ps.size(); ++j) {
    if ((j == kClk5090 && board != Board::kRtx5090) || (j == kClkPro && board != Board::kRtxPro6000))
      continue;
    if (j == kL2Bandwidth5090 && board != Board::kRtx5090) continue;
    const double v = f.params[j];
    double lo = v, hi = v;
    for (const std::vector<double>& l : f.loo_params) lo = std::min(lo, l[j]), hi = std::max(hi, l[j]);
    // Pinned: the anchors move it (its leave-one-out fits spread, and the fit took it away from
    // its prior). A parameter the fit leaves at its prior (the TMA latency and q at q ~0.1, where
    // the anchors barely depend on them) keeps its documented range in the Monte Carlo.
    const double width = ps[j].doc_high - ps[j].doc_low;
    const bool pinned = hi - lo >= 0.01 * width && std::abs(v - ps[j].prior) >= 0.02 * width;
    if (!pinned) lo = std::min(v, ps[j].doc_low), hi = std::max(v, ps[j].doc_high);
    const bool outside = OutsideDocumentedRange(j, v);
    *cited[j] = {v,
                 absl::StrFormat("FITTED to the %d anchors (issue 29, fit.cc): %.4g %s; prior %.4g, "
                                 "documented range %.4g .. %.4g%s; Monte Carlo range: %s",
                                 static_cast<int>(f.rows.size()), v * ps[j].scale, ps[j].unit,
                                 ps[j].prior * ps[j].scale, ps[j].doc_low * ps[j].scale,
                                 ps[j].doc_high * ps[j].scale,
                                 outside ? " -- THE FIT MOVED IT OUTSIDE ITS DOCUMENTED RANGE" : "",
                                 pinned ? "the leave-one-out fits' spread"
                                        : "documented (the anchors do not pin it)"),
                 true, lo, hi};
  }
  return out;
}

double PredictAnchor(const Anchor& a, const std::vector<double>& x) {
  Hardware hw = ApplyFit(Unfitted(a.board), a.board, x);
  hw.power_w.value = a.power_w;
  if (a.omma_loop) {
    return hw.sms.value * hw.mma_flop_per_clk_per_sm.value * a.loop_clock_ghz * 1e-3;
  }
  const std::vector<int64_t> ms = a.ms.empty() ? std::vector<int64_t>{a.problem.m} : a.ms;
  double sum = 0;
  for (int64_t m : ms) {
    Problem p = a.problem;
    p.m = m;
    double best = 0;
    for (const Design& d : a.designs) {
      const Prediction pr = Predict(hw, d, p);
      if (pr.feasibility.ok) best = std::max(best, pr.tflops);
    }
    sum += best;
  }
  return sum / ms.size();
}

namespace {

// Coordinate descent from x until no parameter moves the objective; returns the objective.
double Descend(const std::vector<Anchor>& anchors, int leave_out, std::vector<double>& x) {
  const std::vector<FitParameter>& ps = FitParameters();
  double best = Objective(anchors, leave_out, x);
  // Coordinate descent: per parameter a scan of its box, then a golden-section refinement
  // around the best point of the scan; sweeps until no parameter moves the objective.
  constexpr int kScan = 16, kGolden = 24, kSweeps = 6;
  for (int sweep = 0; sweep < kSweeps; ++sweep) {
    const double before = best;
    for (size_t j = 0; j < ps.size(); ++j) {
      const double lo = ps[j].box_low, hi = ps[j].box_high, step = (hi - lo) / kScan;
      std::vector<double> y = x;
      double arg = x[j];
      for (int i = 0; i <= kScan; ++i) {
        y[j] = lo + i * step;
        const double f = Objective(anchors, leave_out, y);
        if (f < best) best = f, arg = y[j];
      }
      double a = std::max(lo, arg - step), b = std::min(hi, arg + step);
      const double g = 0.5 * (std::sqrt(5.0) - 1);
      for (int i = 0; i < kGolden; ++i) {
        const double c = b - g * (b - a), d = a + g * (b - a);
        y[j] = c;
        const double fc = Objective(anchors, leave_out, y);
        y[j] = d;
        const double fd = Objective(anchors, leave_out, y);
        if (fc < best) best = fc, arg = c;
        if (fd < best) best = fd, arg = d;
        (fc < fd ? b : a) = fc < fd ? d : c;
      }
      x[j] = arg;
    }
    if (before - best < 1e-10) break;
  }
  return best;
}

}  // namespace

std::vector<double> FitParams(const std::vector<Anchor>& anchors, int leave_out) {
  // Coordinate descent is local: start from the priors, the documented ranges' middles and
  // their low ends, keep the best end point.
  const std::vector<FitParameter>& ps = FitParameters();
  std::vector<std::vector<double>> starts(3);
  for (const FitParameter& p : ps) {
    starts[0].push_back(p.prior);
    starts[1].push_back(0.5 * (p.doc_low + p.doc_high));
    starts[2].push_back(p.doc_low);
  }
  std::vector<double> best_x;
  double best = 0;
  for (std::vector<double>& x : starts) {
    const double f = Descend(anchors, leave_out, x);
    if (best_x.empty() || f < best) best = f, best_x = x;
  }
  return best_x;
}

const FitResult& Refit() {
  static const FitResult* const result = [] {
    auto* r = new FitResult();
    const std::vector<Anchor> anchors = Anchors();
    r->params = FitParams(anchors, -1);
    for (size_t i = 0; i < anchors.size(); ++i) {
      r->loo_params.push_back(FitParams(anchors, static_cast<int>(i)));
      AnchorRow row;
      row.name = anchors[i].name;
      row.measured = anchors[i].measured;
      row.predicted = PredictAnchor(anchors[i], r->params);
      row.error = row.predicted / row.measured - 1;
      row.loo_predicted = PredictAnchor(anchors[i], r->loo_params.back());
      row.loo_error = row.loo_predicted / row.measured - 1;
      r->worst_error = std::max(r->worst_error, std::abs(row.error));
      r->worst_loo_error = std::max(r->worst_loo_error, std::abs(row.loo_error));
      r->rows.push_back(row);
    }
    return r;
  }();
  return *result;
}

std::string AnchorsLine(const FitResult& f, double tolerance) {
  int within = 0;
  for (const AnchorRow& row : f.rows) within += std::abs(row.error) <= tolerance ? 1 : 0;
  return absl::StrFormat("anchors: %d of %d within +-%.0f%% (worst %.1f%%)", within,
                         static_cast<int>(f.rows.size()), tolerance * 100, f.worst_error * 100);
}

}  // namespace h3::perf_model
