// The honest-reading part of the perf_model tool's report (report.h PrintReading): each
// design's low / default / high and P(>= goal), the built configs' pick per M, which assumed
// input moves the default most, what caps the best design, and the headline line.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "harness/perf_model/fit.h"
#include "harness/perf_model/model.h"
#include "harness/perf_model/options.h"
#include "harness/perf_model/reading.h"
#include "harness/perf_model/report.h"

namespace h3::perf_model {
namespace {

// The M values the built configs are compared at (item 4 of issue 18), whatever --m says.
const std::vector<int64_t>& PickMs() {
  static const std::vector<int64_t> kMs = {128, 1024, 4096, 16384, 75856};
  return kMs;
}

int NameWidth(const std::vector<Design>& designs) {
  size_t w = 6;
  for (const Design& d : designs) w = std::max(w, d.name.size());
  return static_cast<int>(w);
}

void PrintTable(const std::vector<Design>& designs, const std::vector<int64_t>& ms,
                const std::vector<std::vector<Uncertainty>>& u, double goal) {
  const int w = NameWidth(designs);
  std::printf("  %-*s", w, "design");
  for (int64_t m : ms) std::printf(" %22s", absl::StrFormat("M=%d", m).c_str());
  std::printf("\n");
  for (size_t i = 0; i < designs.size(); ++i) {
    std::printf("  %-*s", w, designs[i].name.c_str());
    for (size_t j = 0; j < ms.size(); ++j) {
      const Uncertainty& x = u[i][j];
      std::printf(" %22s", x.feasible ? absl::StrFormat("%.0f/%.0f%s/%.0f P%.2f", x.low, x.def,
                                                        x.clamped ? "c" : "", x.high, x.p_goal)
                                            .c_str()
                                      : "infeasible");
    }
    std::printf("\n");
  }
  std::printf(
      "  (low/default/high P: 5th percentile / the defaults / 95th percentile, P = share of "
      "draws >= %.0f; c: clamped to the same-shape GEMM at the defaults; infeasible: does not "
      "fit the hardware or the problem at the defaults, as in the tables above)\n",
      goal);
}

// The SM12x measurement that settles an assumed input.
const char* MeasuredBy(const std::string& name) {
  if (name == "hand_kernel_efficiency") return "bench fused vs its model_ms";
  if (name == "single_warp_mma") return "bench fused_128x256_one_group (one_warp_mma)";
  if (name == "epilogue_ratio") return "bench fused_128x256_lockstep - fused_128x256_lockstep_no_epilogue";
  if (name == "tma_latency_s" || name == "l2_queueing" || name == "l2_bytes_per_s" ||
      name == "l2_port_bytes_per_clk" || name == "l2_latency_s") {
    return "harness/bench:tma_latency (L2 chase, TMA round trips alone and from every SM)";
  }
  return "microbenchmark";
}

// Each assumed input alone at its low and its high end, the others at their defaults: the
// swing of the design's default reading, largest first. Beside it, the same design one stage
// deeper at the input's worse end (a ring's depth is what a latency-bound low end asks for),
// whether or not it fits (said below).
void PrintSwings(const Hardware& h, const Design& d, int64_t m) {
  struct Swing {
    std::string name;
    double lo_val, hi_val, at_lo, at_hi, deeper_at_worse;
  };
  Design deeper = d;
  deeper.stages += 1;
  if (deeper.a_stages > 0) deeper.a_stages += 1;
  std::vector<Swing> swings;
  Problem p;
  p.m = m;
  Hardware base = h;
  const std::vector<AssumedInput> inputs = AssumedInputs(base);
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Cited& a = *inputs[k].input;
    Hardware lo = h, hi = h;
    AssumedInputs(lo)[k].input->value = a.low;  // the same fixed order in every copy
    AssumedInputs(hi)[k].input->value = a.high;
    const double at_lo = Read(lo, d, p).tflops, at_hi = Read(hi, d, p).tflops;
    swings.push_back({inputs[k].name, a.low, a.high, at_lo, at_hi,
                      Read(at_lo < at_hi ? lo : hi, deeper, p).tflops});
  }
  std::sort(swings.begin(), swings.end(), [](const Swing& x, const Swing& y) {
    return std::abs(x.at_hi - x.at_lo) > std::abs(y.at_hi - y.at_lo);
  });
  const std::string rings =
      deeper.a_stages > 0
          ? absl::StrFormat("%d-stage B rings and a %d-stage A ring", deeper.stages,
                            deeper.a_stages)
          : absl::StrFormat("%d stages", deeper.stages);
  std::printf(
      "  `%s` at M = %lld, one assumed input at a time at its range's ends (deeper: the design "
      "with %s at the worse end):\n",
      d.name.c_str(), static_cast<long long>(m), rings.c_str());
  for (const Swing& s : swings) {
    std::printf(
        "    %-24s %10.4g -> %6.0f   %10.4g -> %6.0f   swing %4.0f   deeper %6.0f   measured "
        "by: %s\n",
        s.name.c_str(), s.lo_val, s.at_lo, s.hi_val, s.at_hi, std::abs(s.at_hi - s.at_lo),
        s.deeper_at_worse, MeasuredBy(s.name));
  }
  const Feasibility f = Read(h, deeper, p).prediction.feasibility;
  std::printf("    (the design with %s %s)\n", rings.c_str(),
              f.ok ? "fits"
                   : absl::StrFormat("does not fit: %s",
                                     f.reasons.empty() ? "?" : f.reasons[0].c_str())
                         .c_str());
}

// The arithmetic of one design's default figure at M.
void PrintArithmetic(const Hardware& h, const Design& d, int64_t m, double goal) {
  Problem p;
  p.m = m;
  const Reading r = Read(h, d, p);
  const Prediction& c = r.prediction;
  const double eff = h.hand_kernel_efficiency.value;
  const double scale = r.calibration * eff;
  std::printf(
      "  `%s` at M = %lld: %.0f TFLOP/s. Critical SM: main loop %.1f us (%lld k-blocks x %.2f "
      "tiles x %.0f ns period [%s]) + exposed epilogue %.1f us + start-up %.1f us = %.1f us "
      "raw -> %.0f TFLOP/s raw%s; x calibration %.3f x hand-kernel efficiency %.2f. %.0f needs "
      "%.1f us raw: %.1f us %s.\n",
      d.name.c_str(), static_cast<long long>(m), r.tflops, c.t_main * kUs,
      static_cast<long long>(c.k_blocks), c.tiles_per_sm, c.stage.period * 1e9,
      c.stage.limiter.c_str(), c.t_epilogue * kUs, c.t_startup * kUs, c.t_total * kUs,
      r.model_tflops,
      r.clamped ? absl::StrFormat(", clamped to the GEMM's %.0f", r.gemm_tflops).c_str() : "",
      r.calibration, eff, goal, p.Flop() / (goal * 1e12 / scale) * kUs,
      std::abs(c.t_total - p.Flop() / (goal * 1e12 / scale)) * kUs,
      c.t_total > p.Flop() / (goal * 1e12 / scale) ? "too many" : "to spare");
  std::printf(
      "    main loop alone: %.0f TFLOP/s after the factors (the stage: tensor %.0f ns, L2 %.0f "
      "ns at utilisation %.2f, TMA ring %.0f ns with a loaded latency of %.0f ns).\n",
      p.Flop() / c.t_main * 1e-12 * scale, c.stage.tensor * 1e9, c.stage.l2 * 1e9,
      c.stage.l2_utilisation, c.stage.latency * 1e9, c.stage.tma_latency * 1e9);
}

}  // namespace

void PrintReading(const std::vector<Hardware>& hws, const std::vector<Design>& designs,
                  const std::vector<int64_t>& ms, const UncertaintyOptions& options) {
  std::vector<std::string> headlines, option_lines;
  for (const Hardware& h : hws) {
    std::printf(
        "%s: the model's honest reading (a model, NOT a measurement; calibrated TFLOP/s over "
        "%d draws of every ASSUMED input, seed %llu)\n",
        h.name.c_str(), options.samples, static_cast<unsigned long long>(options.seed));
    const std::vector<std::vector<Uncertainty>> u = ReadUncertainty(h, designs, ms, options);
    PrintTable(designs, ms, u, options.goal_tflops);

    const std::vector<Design> built = BuiltDesigns();
    const std::vector<std::vector<Uncertainty>> b =
        ReadUncertainty(h, built, PickMs(), options);
    std::printf("\n  the built configs by the honest model (default reading; low-high; P):\n");
    for (size_t j = 0; j < PickMs().size(); ++j) {
      size_t best = 0;
      for (size_t i = 1; i < built.size(); ++i) {
        if (b[i][j].def > b[best][j].def) best = i;
      }
      std::printf("    pick at M=%-6lld %-17s", static_cast<long long>(PickMs()[j]),
                  built[best].name.c_str());
      for (size_t i = 0; i < built.size(); ++i) {
        std::printf("  %s %.0f (%.0f-%.0f; P %.2f)", built[i].name.c_str(), b[i][j].def,
                    b[i][j].low, b[i][j].high, b[i][j].p_goal);
      }
      std::printf("\n");
    }
    const size_t j4096 = 2;  // PickMs()[2] == 4096
    std::printf("\n");
    const Uncertainty& dflt = b[0][j4096];
    if (dflt.def < options.goal_tflops || dflt.p_goal < 0.5) {
      // The best of the designs shown, by its default reading at M = 4096.
      size_t best = 0;
      double best_t = -1;
      for (size_t i = 0; i < designs.size(); ++i) {
        Problem p;
        p.m = 4096;
        const Reading r = Read(h, designs[i], p);
        if (r.prediction.feasibility.ok && !designs[i].gemm_only && r.tflops > best_t) {
          best_t = r.tflops;
          best = i;
        }
      }
      if (dflt.def < options.goal_tflops) {
        std::printf(
            "  the built default is below %.0f at M = 4096 at the defaults; what caps it:\n",
            options.goal_tflops);
      } else {
        std::printf(
            "  the built default reaches %.0f at M = 4096 at the defaults (%.0f) but in only "
            "%.0f%% of the draws (low %.0f); what caps it and what pulls its low end:\n",
            options.goal_tflops, dflt.def, 100 * dflt.p_goal, dflt.low);
      }
      PrintArithmetic(h, built[0], 4096, options.goal_tflops);
      if (!designs.empty() && designs[best].name != built[0].name) {
        PrintArithmetic(h, designs[best], 4096, options.goal_tflops);
      }
      PrintSwings(h, built[0], 4096);
      std::printf(
          "  The SM120 measurements that decide are those of the inputs at the top of that "
          "list.\n");
    }
    std::printf("\n");
    PrintCandidates(h, 4096, options.goal_tflops);
    std::printf("\n");
    // Issue 30's options model is built on the skewed 128x256's schedule (its quantizer warps'
    // keep-up replay has no staged drain): it reads that config, `current`, not the default.
    PrintOptions(h, CurrentDesign(), 4096);
    option_lines.push_back(OptionsLine(h, CurrentDesign(), 4096, Options{32, true}));
    headlines.push_back(HeadlineLine(h, 4096, b[0][j4096], XUnfused(h, 4096, b[0][j4096].def),
                                     options.goal_tflops));
  }
  PrintRefit();
  // For scripts: issue 30's options per GPU (r = 32 with act_smooth, `current`, M = 4096).
  for (const std::string& line : option_lines) std::printf("%s\n", line.c_str());
  // The last two lines, for scripts: the anchors, then the RTX 5090's headline (issue 29); the
  // other GPUs' headlines before them.
  std::string last;
  for (size_t i = 0; i < hws.size(); ++i) {
    if (hws[i].name == Rtx5090().name) {
      last = headlines[i];
    } else {
      std::printf("%s\n", headlines[i].c_str());
    }
  }
  std::printf("%s\n", AnchorsLine(Refit()).c_str());
  if (!last.empty()) std::printf("%s\n", last.c_str());
}

}  // namespace h3::perf_model
