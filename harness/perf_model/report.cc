// The SM120 report of the perf_model tool: the hardware's constants, the designs' predicted
// TFLOP/s and components per M, the ladder of design choices and what caps the built design.

#include "harness/perf_model/report.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "harness/perf_model/model.h"
#include "harness/perf_model/reading.h"

namespace h3::perf_model {
namespace {

void PrintConstant(const char* what, const Cited& c, double scale, const char* unit) {
  std::printf("  %-28s %12.4g %-8s %s%s\n", what, c.value * scale, unit,
              c.assumed ? "[ASSUMED] " : "", c.source.c_str());
}

}  // namespace

void PrintHardware(const Hardware& h) {
  std::printf("%s\n", h.name.c_str());
  PrintConstant("SMs", h.sms, 1, "");
  PrintConstant("boost clock", h.boost_clock_ghz, 1, "GHz");
  PrintConstant("MMA rate (all SMs)", h.mma_tflops, 1, "TFLOP/s");
  PrintConstant("MMA per clk per SM", h.mma_flop_per_clk_per_sm, 1, "FLOP");
  PrintConstant("bf16 MMA per clk per SM", h.bf16_mma_flop_per_clk_per_sm, 1, "FLOP");
  std::printf("  %-28s %12.4g %-8s derived: MMA rate / (SMs x FLOP/clk/SM); one OMMA = %.1f ns\n",
              "clock used per clk", h.ClockGhz(), "GHz", h.OmmaSeconds() * 1e9);
  PrintConstant("L2 bandwidth", h.l2_bytes_per_s, 1e-12, "TB/s");
  PrintConstant("L2 latency", h.l2_latency_s, 1e9, "ns");
  PrintConstant("L2 port per SM", h.l2_port_bytes_per_clk, 1, "B/clk");
  PrintConstant("DRAM bandwidth", h.dram_bytes_per_s, 1e-9, "GB/s");
  PrintConstant("DRAM latency", h.dram_latency_s, 1e9, "ns");
  PrintConstant("shared memory bandwidth", h.smem_bytes_per_clk, 1, "B/clk");
  PrintConstant("shared memory per block", h.smem_per_block, 1, "B");
  PrintConstant("registers per SM", h.regs_per_sm, 1, "");
  PrintConstant("L2 size", h.l2_size_bytes, 1.0 / (1024 * 1024), "MiB");
  PrintConstant("TMA stage latency", h.tma_latency_s, 1e9, "ns");
  PrintConstant("L2 queueing (TMA latency)", h.l2_queueing, 1, "");
  PrintConstant("ldmatrix latency", h.ldsm_latency_clk, 1, "clk");
  PrintConstant("one-warp MMA rate", h.single_warp_mma, 1, "of full");
  PrintConstant("quantizer instr / block", h.quant_instr_per_block, 1, "");
  PrintConstant("quantizer warp IPC", h.quant_warp_ipc, 1, "");
  PrintConstant("GEMM anchor", h.gemm_anchor_tflops, 1, "TFLOP/s");
  PrintConstant("epilogue ratio", h.epilogue_ratio, 1, "x model");
  PrintConstant("hand-kernel efficiency", h.hand_kernel_efficiency, 1, "");
}

namespace {

const char kRule[] =
    "Combining rule: per stage  period = max(MMA, smem, L2, TMA latency)  (concurrent resources "
    "of one asynchronous pipeline; MMA = max(tensor + fragment stall, issue));\n"
    "  per SM  compute = startup + tiles_per_SM x (k_blocks x period + exposed epilogue) + "
    "fix-ups;  total = max(compute, DRAM bytes / DRAM bandwidth).\n"
    "Columns (us, critical SM): MMA/L2/SMEM/LAT = stages x that stage term (each alone is a lower "
    "bound; MAIN = stages x period), EPI = exposed epilogue, START = first quantized rows + first "
    "TMA stage (+ quantizer keep-up), WAVES = idle share of the last partial wave (inside MAIN), "
    "DRAM = bytes / bandwidth.\n"
    "TF/s raw = model; cal = min(raw, the same-shape GEMM's raw) x (measured cuBLASLt anchor / "
    "model of a cuBLASLt-like GEMM) x hand-kernel efficiency: the factor absorbs the "
    "power-limited clock and whatever the model leaves out of a tuned library GEMM, the "
    "efficiency what our hand kernel may lose against one (GEMM-only designs: raw x factor).\n";

// The width of a column of design names: the longest name, or the header.
int NameWidth(const std::vector<Design>& designs, const char* header) {
  size_t width = std::strlen(header);
  for (const Design& d : designs) width = std::max(width, d.name.size());
  return static_cast<int>(width);
}

void PrintComponentHeader(int name_width) {
  std::printf("  %-*s %7s %7s %7s %7s %7s %7s %7s %7s %7s %8s %6s %6s  %s\n", name_width, "design",
              "MMA", "L2", "SMEM", "LAT", "MAIN", "EPI", "START", "WAVES", "DRAM", "TOTAL", "raw",
              "cal", "limiter");
}

void PrintComponentRow(const Design& d, const Reading& r, int name_width) {
  const Prediction& p = r.prediction;
  if (!p.feasibility.ok) {
    std::printf("  %-*s INFEASIBLE: %s\n", name_width, d.name.c_str(),
                absl::StrJoin(p.feasibility.reasons, "; ").c_str());
    return;
  }
  std::printf(
      "  %-*s %7.1f %7.1f %7.1f %7.1f %7.1f %7.1f %7.1f %7.1f %7.1f %8.1f %6.0f %6.0f  %s\n",
      name_width, d.name.c_str(), p.t_mma * kUs, p.t_l2 * kUs, p.t_smem * kUs, p.t_latency * kUs,
      p.t_main * kUs, p.t_epilogue * kUs, p.t_startup * kUs, p.t_waves * kUs, p.t_dram * kUs,
      p.t_total * kUs, p.tflops, r.tflops,
      (p.limiter + (r.clamped ? " (clamped to the GEMM)" : "")).c_str());
}

void PrintVerbose(const Hardware& h, const Design& d, const Prediction& p) {
  const StageTimes& s = p.stage;
  std::printf("    %s: %s\n", d.name.c_str(), d.summary.c_str());
  std::printf(
      "      tiles %lld (%lld x %lld), k-blocks %lld, tiles/SM %.3f, wave eff %.3f; smem %lld B "
      "(stage %lld B), regs: launch %d, total %lld, consumer needs ~%d, producer ~%d\n",
      static_cast<long long>(p.tiles), static_cast<long long>(p.m_tiles),
      static_cast<long long>(p.n_tiles), static_cast<long long>(p.k_blocks), p.tiles_per_sm,
      p.wave_efficiency, static_cast<long long>(p.feasibility.smem_bytes),
      static_cast<long long>(p.feasibility.stage_bytes), p.feasibility.launch_regs,
      static_cast<long long>(p.feasibility.regs_total), p.feasibility.consumer_regs_needed,
      p.feasibility.producer_regs_needed);
  std::printf(
      "      tile bytes: A %.0f + B %.0f + SFA %.0f + SFB %.0f = %.0f (%.2f B per 1000 FLOP)\n",
      p.tile_bytes.a_codes, p.tile_bytes.b_codes, p.tile_bytes.sfa, p.tile_bytes.sfb,
      p.tile_bytes.Total(), p.bytes_per_kflop);
  std::printf(
      "      stage (ns): tensor %.0f, frag stall %.0f, issue %.0f (%.0f slots/SMSP), smem %.0f "
      "(%.0f wavefronts, ldmatrix %.0f B), L2 %.0f (%.0f B), latency %.0f -> period %.0f [%s]\n",
      s.tensor * 1e9, s.frag_stall * 1e9, s.issue * 1e9, s.issue_slots_per_smsp, s.smem * 1e9,
      s.smem_wavefronts, s.ldmatrix_bytes, s.l2 * 1e9, s.l2_bytes, s.latency * 1e9, s.period * 1e9,
      s.limiter.c_str());
  std::printf(
      "      tile main %.2f us, epilogue %.2f us (exposed %.2f); quantizer %.0f GB/s, ready %.2f "
      "us, fill %.2f us, keep-up stall %.2f us; fix-up %.2f us\n",
      p.tile_main * kUs, p.epilogue_tile * kUs, p.epilogue_exposed_tile * kUs,
      p.quant_bytes_per_s * 1e-9, p.startup_quant * kUs, p.startup_fill * kUs,
      p.quant_keepup_stall * kUs, p.t_fixup * kUs);
  std::printf(
      "      DRAM %.1f MB (attn %.1f, act w %.1f r %.1f, residual %.1f, out %.1f, weight %.1f, "
      "A %.1f) = %.1f us; L2 SM-side %.1f MB = %.1f us at %.2f TB/s\n",
      p.dram.Total() * 1e-6, p.dram.attn_out * 1e-6, p.dram.act_write * 1e-6,
      p.dram.act_read * 1e-6, p.dram.residual * 1e-6, p.dram.out * 1e-6, p.dram.weight * 1e-6,
      p.dram.gemm_a * 1e-6, p.t_dram * kUs, p.l2_bytes_total * 1e-6,
      p.l2_bytes_total / h.l2_bytes_per_s.value * kUs, h.l2_bytes_per_s.value * 1e-12);
}

// What caps the built default: its terms on the critical SM against the time 1250 TFLOP/s
// (the issue's goal) allows, beside the GEMM alone under the same static schedule.
void PrintCap(const Hardware& h, const Calibration& cal, const std::vector<int64_t>& ms) {
  const Design cur = BuiltDesigns()[0], gemm = GemmOnlyReference();
  const double eff = h.hand_kernel_efficiency.value;
  Hardware h1 = h;  // the model's own epilogue (before the H200's ratio)
  h1.epilogue_ratio.value = 1;
  std::printf(
      "  %s: what caps `%s`, the built default (calibrated TFLOP/s; the critical SM's time in "
      "us)\n"
      "  %8s %9s %11s %9s %9s %9s %9s %9s %12s %10s\n",
      h.name.c_str(), cur.name.c_str(), "M", "MMA cap", "GEMM alone", "TFLOP/s", "main", "epi",
      "startup", "total", "1250 needs", "epi x1");
  for (int64_t m : ms) {
    Problem p;
    p.m = m;
    const Reading r = Read(h, cur, p, cal), one = Read(h1, cur, p, cal);
    const Prediction& c = r.prediction;
    const Prediction g = Predict(h, gemm, p);
    const double flops = 2.0 * m * p.n * p.k;
    std::printf("  %8lld %9.0f %11.0f %9s %9.1f %9.1f %9.1f %9.1f %12.1f %10.0f\n",
                static_cast<long long>(m), flops / c.t_main * 1e-12 * cal.factor * eff,
                g.tflops * cal.factor,
                absl::StrFormat("%.0f%s", r.tflops, r.clamped ? "c" : "").c_str(), c.t_main * kUs,
                c.t_epilogue * kUs, c.t_startup * kUs, c.t_total * kUs,
                flops / (1250e12 / (cal.factor * eff)) * kUs, one.tflops);
  }
  std::printf(
      "  (MMA cap: the main loop alone, x the hand-kernel efficiency %.2f; GEMM alone: "
      "cuBLASLt-like, static schedule, bf16 D stored; c: the fused figure clamped to its "
      "same-shape GEMM (the fused op does that GEMM and more). 1250 needs: the raw time the goal "
      "allows. epi x1: `%s` with the model's own epilogue, i.e. without the H200's "
      "measured ratio %.2f.)\n",
      eff, cur.name.c_str(), h.epilogue_ratio.value);
  // The skew's one extra assumption: a group alone (one MMA warp per sub-partition) keeps the
  // tensor pipes at `single_warp_mma` of the full rate.
  std::printf(
      "  `current` (skewed) if one MMA warp per sub-partition ran at eta of the full "
      "rate (default %.2f), beside `current_lockstep` (calibrated TFLOP/s):\n  %8s",
      h.single_warp_mma.value, "M");
  const double etas[] = {1.0, 0.85, 0.7, 0.5};
  for (double eta : etas) std::printf("  %9s", absl::StrFormat("eta %.2f", eta).c_str());
  std::printf("  %9s\n", "lockstep");
  for (int64_t m : ms) {
    Problem p;
    p.m = m;
    std::printf("  %8lld", static_cast<long long>(m));
    for (double eta : etas) {
      Hardware he = h;
      he.single_warp_mma.value = eta;
      std::printf("  %9.0f", Read(he, CurrentDesign(), p, cal).tflops);
    }
    std::printf("  %9.0f\n", Read(h, CurrentLockstepDesign(), p, cal).tflops);
  }
  std::printf("\n");
}

// The calibration factor and a cross-check of the GEMM-only model against a published chart.
void PrintCalibration(const Hardware& h, const Calibration& cal) {
  std::printf(
      "  calibration: %s at its best square %lld^3: model %.0f TFLOP/s vs anchor %.0f -> "
      "factor %.3f\n",
      GemmOnlyReference().name.c_str(), static_cast<long long>(cal.best_square),
      cal.model_best_tflops, cal.anchor_tflops, cal.factor);
  // Cross-check: QuTLASS's 256x128x128 GEMM alone, M = 2048, N = 51200, K = 5120.
  Design q = GemmOnlyReference();
  q.bm = 256;
  q.bn = 128;
  q.warps_m = 4;
  q.warps_n = 2;
  Problem p;
  p.m = 2048;
  p.n = 51200;
  p.k = 5120;
  const Prediction pr = Predict(h, q, p);
  std::printf(
      "  cross-check: 256x128x128 GEMM alone at 2048x51200x5120: model %.0f, calibrated %.0f "
      "TFLOP/s (QuTLASS chart, RTX 5090: ~1280-1307)\n\n",
      pr.tflops, pr.tflops * cal.factor);
}

// Calibrated TFLOP/s per design and M; returns the readings, [design][m].
std::vector<std::vector<Reading>> PrintSummary(const Hardware& h,
                                                  const std::vector<Design>& designs,
                                                  const std::vector<int64_t>& ms,
                                                  const Calibration& cal) {
  const int name_width = NameWidth(designs, "design");
  std::printf("  calibrated TFLOP/s (raw in brackets), %s\n  %-*s", h.name.c_str(), name_width,
              "design");
  for (int64_t m : ms) std::printf(" %16s", absl::StrFormat("M=%d", m).c_str());
  std::printf("\n");
  std::vector<std::vector<Reading>> preds(designs.size());
  for (size_t i = 0; i < designs.size(); ++i) {
    std::printf("  %-*s", name_width, designs[i].name.c_str());
    for (int64_t m : ms) {
      Problem p;
      p.m = m;
      preds[i].push_back(Read(h, designs[i], p, cal));
      const Reading& r = preds[i].back();
      if (r.prediction.feasibility.ok) {
        std::printf(" %16s", absl::StrFormat("%.0f%s[%.0f]", r.tflops, r.clamped ? "c " : " ",
                                             r.model_tflops)
                                 .c_str());
      } else {
        std::printf(" %16s", "infeasible");
      }
    }
    std::printf("\n");
  }
  std::printf("\n");
  return preds;
}

// Per M: every design's components, and the best design.
void PrintComponents(const Hardware& h, const std::vector<Design>& designs,
                     const std::vector<int64_t>& ms,
                     const std::vector<std::vector<Reading>>& preds, bool verbose) {
  const int name_width = NameWidth(designs, "design");
  for (size_t j = 0; j < ms.size(); ++j) {
    std::printf("  %s, M = %lld\n", h.name.c_str(), static_cast<long long>(ms[j]));
    PrintComponentHeader(name_width);
    size_t best = designs.size();
    for (size_t i = 0; i < designs.size(); ++i) {
      const Prediction& pr = preds[i][j].prediction;
      PrintComponentRow(designs[i], preds[i][j], name_width);
      if (verbose && pr.feasibility.ok) PrintVerbose(h, designs[i], pr);
      if (pr.feasibility.ok &&
          (best == designs.size() || preds[i][j].tflops > preds[best][j].tflops)) {
        best = i;
      }
    }
    if (best < designs.size()) {
      std::printf("  best at M = %lld: %s, %.0f TFLOP/s calibrated (%.0f raw)\n\n",
                  static_cast<long long>(ms[j]), designs[best].name.c_str(), preds[best][j].tflops,
                  preds[best][j].model_tflops);
    }
  }
}

// DesignLadder(): each step's calibrated TFLOP/s and its gain over the step before.
void PrintLadder(const Hardware& h, const std::vector<int64_t>& ms, const Calibration& cal) {
  std::printf("  %s: the gain of each choice, cumulatively (calibrated TFLOP/s)\n", h.name.c_str());
  const std::vector<Design> ladder = DesignLadder();
  const int name_width = NameWidth(ladder, "step");
  std::printf("  %-*s", name_width, "step");
  for (int64_t m : ms) std::printf(" %14s", absl::StrFormat("M=%d", m).c_str());
  std::printf("  what changed\n");
  std::vector<double> prev(ms.size(), 0);
  for (const Design& d : ladder) {
    std::printf("  %-*s", name_width, d.name.c_str());
    for (size_t j = 0; j < ms.size(); ++j) {
      Problem p;
      p.m = ms[j];
      const Reading r = Read(h, d, p, cal);
      const Prediction& pr = r.prediction;
      const double t = r.tflops;
      if (!pr.feasibility.ok) {
        // What it would give if it fitted (Predict computes every term regardless).
        std::printf(" %14s", absl::StrFormat("n/f (%.0f)", t).c_str());
        continue;
      }
      std::printf(" %14s",
                  prev[j] > 0
                      ? absl::StrFormat("%.0f (%+.1f%%)", t, 100 * (t / prev[j] - 1)).c_str()
                      : absl::StrFormat("%.0f", t).c_str());
      prev[j] = t;
    }
    std::printf("  %s\n", d.summary.c_str());
    for (size_t j = 0; j < ms.size(); ++j) {
      Problem p;
      p.m = ms[j];
      const Prediction pr = Predict(h, d, p);
      if (!pr.feasibility.ok) {
        std::printf("      not feasible (figure in brackets: if it fitted): %s\n",
                    absl::StrJoin(pr.feasibility.reasons, "; ").c_str());
        break;
      }
    }
  }
  std::printf("\n");
}

}  // namespace

void PrintSm120Report(const std::vector<Hardware>& hws, const std::vector<Design>& designs,
                      const std::vector<int64_t>& ms, const ReportOptions& options) {
  std::printf("%s\n", kRule);
  for (const Hardware& h : hws) {
    PrintHardware(h);
    const Calibration cal = CalibrateToGemmAnchor(h);
    PrintCalibration(h, cal);
    const std::vector<std::vector<Reading>> preds = PrintSummary(h, designs, ms, cal);
    PrintComponents(h, designs, ms, preds, options.verbose);
    if (options.ladder) PrintLadder(h, ms, cal);
    PrintCap(h, cal, ms);
  }
}

}  // namespace h3::perf_model
