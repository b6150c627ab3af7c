// ./bazelw run //harness:perf_model [-- --hardware=rtx5090|rtx_pro_6000|all --m=4096,16384
//                                       --design=all|current,v2_... --calibrate_h200 --verbose]
//
// Prints the performance model's components and predicted TFLOP/s for the current kernel and the
// v2 candidates (model.h), on the RTX 5090 and the RTX PRO 6000, and names the best design per
// M. A model, not a measurement: see each constant's source, `ASSUMED` marks the unmeasured ones.

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "harness/perf_model/model.h"

ABSL_FLAG(std::string, hardware, "all", "rtx5090, rtx_pro_6000 or all (both)");
ABSL_FLAG(std::string, m, "128,1024,4096,16384,75856", "comma-separated M values");
ABSL_FLAG(std::string, design, "all",
          "comma-separated design names (current, v2_..., L0_..L8_ ladder steps, "
          "ref_gemm_128x256_k128_s3, x_256x256_k256_s2) or all");
ABSL_FLAG(bool, ladder, true, "print the gain of each design choice, cumulatively");
ABSL_FLAG(bool, verbose, false, "print each design's per-stage breakdown");
ABSL_FLAG(bool, calibrate_h200, false,
          "print the model's predictions of the terms measurable on the H200, instead");
ABSL_FLAG(double, l2_tbps, 0, "override the L2 bandwidth (TB/s) of every hardware (sensitivity)");
ABSL_FLAG(double, tma_latency_ns, 0, "override the TMA stage latency (ns)");
ABSL_FLAG(double, dram_latency_ns, 0, "override the DRAM latency (ns)");

namespace h3::perf_model {
namespace {

constexpr double kUs = 1e6;

void ApplyOverrides(Hardware& h) {
  if (absl::GetFlag(FLAGS_l2_tbps) > 0) {
    h.l2_bytes_per_s = {absl::GetFlag(FLAGS_l2_tbps) * 1e12, "--l2_tbps override", true};
  }
  if (absl::GetFlag(FLAGS_tma_latency_ns) > 0) {
    h.tma_latency_s = {absl::GetFlag(FLAGS_tma_latency_ns) * 1e-9, "--tma_latency_ns override",
                       true};
  }
  if (absl::GetFlag(FLAGS_dram_latency_ns) > 0) {
    h.dram_latency_s = {absl::GetFlag(FLAGS_dram_latency_ns) * 1e-9, "--dram_latency_ns override",
                        true};
  }
}

void PrintConstant(const char* what, const Cited& c, double scale, const char* unit) {
  std::printf("  %-28s %12.4g %-8s %s%s\n", what, c.value * scale, unit,
              c.assumed ? "[ASSUMED] " : "", c.source.c_str());
}

void PrintHardware(const Hardware& h) {
  std::printf("%s\n", h.name.c_str());
  PrintConstant("SMs", h.sms, 1, "");
  PrintConstant("boost clock", h.boost_clock_ghz, 1, "GHz");
  PrintConstant("MMA rate (all SMs)", h.mma_tflops, 1, "TFLOP/s");
  PrintConstant("MMA per clk per SM", h.mma_flop_per_clk_per_sm, 1, "FLOP");
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
  PrintConstant("ldmatrix latency", h.ldsm_latency_clk, 1, "clk");
  PrintConstant("one-warp MMA rate", h.single_warp_mma, 1, "of full");
  PrintConstant("quantizer instr / block", h.quant_instr_per_block, 1, "");
  PrintConstant("quantizer warp IPC", h.quant_warp_ipc, 1, "");
  PrintConstant("GEMM anchor", h.gemm_anchor_tflops, 1, "TFLOP/s");
}

std::vector<int64_t> ParseMs() {
  std::vector<int64_t> ms;
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_m), ',', absl::SkipEmpty())) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(s, &v) || v < 0) {
      std::fprintf(stderr, "bad --m value '%s'\n", std::string(s).c_str());
      std::exit(2);
    }
    ms.push_back(v);
  }
  return ms;
}

std::vector<Design> SelectedDesigns() {
  const std::string sel = absl::GetFlag(FLAGS_design);
  std::vector<Design> out;
  if (sel == "all") {
    out.push_back(CurrentDesign());
    out.push_back(CurrentLockstepDesign());
    out.push_back(Current128Design());
    out.push_back(V1Design());
    for (const Design& d : CandidateDesigns()) out.push_back(d);
    return out;
  }
  for (absl::string_view s : absl::StrSplit(sel, ',', absl::SkipEmpty())) {
    const Design* d = FindDesign(std::string(s));
    if (d == nullptr) {
      std::fprintf(stderr, "unknown --design '%s'\n", std::string(s).c_str());
      std::exit(2);
    }
    out.push_back(*d);
  }
  return out;
}

const char kRule[] =
    "Combining rule: per stage  period = max(MMA, smem, L2, TMA latency)  (concurrent resources "
    "of one asynchronous pipeline; MMA = max(tensor + fragment stall, issue));\n"
    "  per SM  compute = startup + tiles_per_SM x (k_blocks x period + exposed epilogue) + "
    "fix-ups;  total = max(compute, DRAM bytes / DRAM bandwidth).\n"
    "Columns (us, critical SM): MMA/L2/SMEM/LAT = stages x that stage term (each alone is a lower "
    "bound; MAIN = stages x period), EPI = exposed epilogue, START = first quantized rows + first "
    "TMA stage (+ quantizer keep-up), WAVES = idle share of the last partial wave (inside MAIN), "
    "DRAM = bytes / bandwidth.\n"
    "TF/s raw = model; cal = raw x (measured cuBLASLt anchor / model of a cuBLASLt-like GEMM): the "
    "factor absorbs the power-limited clock and whatever the model leaves out.\n";

void PrintComponentHeader() {
  std::printf("  %-36s %7s %7s %7s %7s %7s %7s %7s %7s %7s %8s %6s %6s  %s\n", "design", "MMA",
              "L2", "SMEM", "LAT", "MAIN", "EPI", "START", "WAVES", "DRAM", "TOTAL", "raw", "cal",
              "limiter");
}

void PrintComponentRow(const Design& d, const Prediction& p, double factor) {
  if (!p.feasibility.ok) {
    std::printf("  %-36s INFEASIBLE: %s\n", d.name.c_str(),
                absl::StrJoin(p.feasibility.reasons, "; ").c_str());
    return;
  }
  std::printf(
      "  %-36s %7.1f %7.1f %7.1f %7.1f %7.1f %7.1f %7.1f %7.1f %7.1f %8.1f %6.0f %6.0f  %s\n",
      d.name.c_str(), p.t_mma * kUs, p.t_l2 * kUs, p.t_smem * kUs, p.t_latency * kUs,
      p.t_main * kUs, p.t_epilogue * kUs, p.t_startup * kUs, p.t_waves * kUs, p.t_dram * kUs,
      p.t_total * kUs, p.tflops, p.tflops * factor, p.limiter.c_str());
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

// What caps the built design: its terms on the critical SM against the time 1250 TFLOP/s
// (the issue's goal) allows, beside the GEMM alone under the same static schedule.
// The exposed epilogue measured on the H200 (bench: fused - fused_no_epilogue, faithful build =
// the SM120 kernel's own code and 128x256 tile, with the 16-byte epilogue, per tile wave;
// harness/bench/results/h200_2026-11-30_s10_vec16_epilogue_ab.csv) over the model's epilogue of
// that tile on the H200: how optimistic the epilogue term was where it could be measured.
double H200EpilogueRatio() {
  constexpr double kMeasuredUs = 7.3;  // 9.0 / 5.5 us at M = 4096 / 16384
  Problem p;
  p.m = 4096;
  return kMeasuredUs / (Predict(H200(), CurrentLockstepDesign(), p).epilogue_tile * kUs);
}

void PrintCap(const Hardware& h, const Calibration& cal, const std::vector<int64_t>& ms) {
  const Design cur = CurrentDesign(), gemm = GemmOnlyReference();
  const double epi_ratio = H200EpilogueRatio();
  std::printf(
      "  %s: what caps `current` (calibrated TFLOP/s; the critical SM's time in us)\n"
      "  %8s %9s %11s %9s %9s %9s %9s %9s %12s %14s\n",
      h.name.c_str(), "M", "MMA cap", "GEMM alone", "current", "main", "epi", "startup", "total",
      "1250 needs", absl::StrFormat("epi x%.1f", epi_ratio).c_str());
  Design scaled = cur;  // every epilogue epi_ratio times longer, then hidden as far as it goes
  scaled.epilogue_time_scale = epi_ratio;
  for (int64_t m : ms) {
    Problem p;
    p.m = m;
    const Prediction c = Predict(h, cur, p), g = Predict(h, gemm, p), s = Predict(h, scaled, p);
    const double flops = 2.0 * m * p.n * p.k;
    std::printf("  %8lld %9.0f %11.0f %9.0f %9.1f %9.1f %9.1f %9.1f %12.1f %14.0f\n",
                static_cast<long long>(m), flops / c.t_main * 1e-12 * cal.factor,
                g.tflops * cal.factor, c.tflops * cal.factor, c.t_main * kUs, c.t_epilogue * kUs,
                c.t_startup * kUs, c.t_total * kUs, flops / (1250e12 / cal.factor) * kUs,
                s.tflops * cal.factor);
  }
  std::printf(
      "  (MMA cap: the main loop alone; GEMM alone: cuBLASLt-like, static schedule, bf16 D "
      "stored. The fused op adds the residual read and the quantizer start-up to it, so under "
      "a static schedule it stays below the GEMM alone; 1250 needs most of the exposed epilogue "
      "hidden: `current` (skewed groups) hides it under the other group's MMAs up to the lead "
      "its A ring allows. epi xR: `current` if every epilogue took R times the model's "
      "duration (then hidden as far as the lead goes), R = the H200's measured / modelled "
      "lockstep epilogue (--calibrate_h200): what the one term the H200 could check says about "
      "the uncertainty.)\n");
  // The skew's one new assumption: a group alone (one MMA warp per sub-partition) keeps the
  // tensor pipes at `single_warp_mma` of the full rate. Below ~0.5 the alone phases cost more
  // than the lockstep epilogue they replace.
  std::printf(
      "  `current` (skewed) if one MMA warp per sub-partition ran at eta of the full "
      "rate, beside `current_lockstep` (calibrated TFLOP/s):\n  %8s",
      "M");
  const double etas[] = {1.0, 0.75, 0.5, 0.25};
  for (double eta : etas) std::printf("  %9s", absl::StrFormat("eta %.2f", eta).c_str());
  std::printf("  %9s\n", "lockstep");
  for (int64_t m : ms) {
    Problem p;
    p.m = m;
    std::printf("  %8lld", static_cast<long long>(m));
    for (double eta : etas) {
      Hardware he = h;
      he.single_warp_mma.value = eta;
      std::printf("  %9.0f", Predict(he, cur, p).tflops * cal.factor);
    }
    std::printf("  %9.0f\n", Predict(h, CurrentLockstepDesign(), p).tflops * cal.factor);
  }
  std::printf("\n");
}

void RunSm120(const std::vector<Hardware>& hws) {
  const std::vector<int64_t> ms = ParseMs();
  const std::vector<Design> designs = SelectedDesigns();
  std::printf("%s\n", kRule);
  for (const Hardware& h : hws) {
    PrintHardware(h);
    const Calibration cal = CalibrateToGemmAnchor(h);
    std::printf(
        "  calibration: %s at its best square %lld^3: model %.0f TFLOP/s vs anchor %.0f -> "
        "factor %.3f\n",
        GemmOnlyReference().name.c_str(), static_cast<long long>(cal.best_square),
        cal.model_best_tflops, cal.anchor_tflops, cal.factor);
    {
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

    // Summary: calibrated TFLOP/s per design and M.
    std::printf("  calibrated TFLOP/s (raw in brackets), %s\n  %-36s", h.name.c_str(), "design");
    for (int64_t m : ms) std::printf(" %16s", absl::StrFormat("M=%d", m).c_str());
    std::printf("\n");
    std::vector<std::vector<Prediction>> preds(designs.size());
    for (size_t i = 0; i < designs.size(); ++i) {
      std::printf("  %-36s", designs[i].name.c_str());
      for (int64_t m : ms) {
        Problem p;
        p.m = m;
        preds[i].push_back(Predict(h, designs[i], p));
        const Prediction& pr = preds[i].back();
        if (pr.feasibility.ok) {
          std::printf(" %16s",
                      absl::StrFormat("%.0f [%.0f]", pr.tflops * cal.factor, pr.tflops).c_str());
        } else {
          std::printf(" %16s", "infeasible");
        }
      }
      std::printf("\n");
    }
    std::printf("\n");
    for (size_t j = 0; j < ms.size(); ++j) {
      std::printf("  %s, M = %lld\n", h.name.c_str(), static_cast<long long>(ms[j]));
      PrintComponentHeader();
      size_t best = designs.size();
      for (size_t i = 0; i < designs.size(); ++i) {
        PrintComponentRow(designs[i], preds[i][j], cal.factor);
        if (absl::GetFlag(FLAGS_verbose) && preds[i][j].feasibility.ok) {
          PrintVerbose(h, designs[i], preds[i][j]);
        }
        if (preds[i][j].feasibility.ok &&
            (best == designs.size() || preds[i][j].tflops > preds[best][j].tflops)) {
          best = i;
        }
      }
      if (best < designs.size()) {
        std::printf("  best at M = %lld: %s, %.0f TFLOP/s calibrated (%.0f raw)\n\n",
                    static_cast<long long>(ms[j]), designs[best].name.c_str(),
                    preds[best][j].tflops * cal.factor, preds[best][j].tflops);
      }
    }
    if (absl::GetFlag(FLAGS_ladder)) {
      std::printf("  %s: the gain of each choice, cumulatively (calibrated TFLOP/s)\n",
                  h.name.c_str());
      std::printf("  %-26s", "step");
      for (int64_t m : ms) std::printf(" %14s", absl::StrFormat("M=%d", m).c_str());
      std::printf("  what changed\n");
      std::vector<double> prev(ms.size(), 0);
      for (const Design& d : DesignLadder()) {
        std::printf("  %-26s", d.name.c_str());
        for (size_t j = 0; j < ms.size(); ++j) {
          Problem p;
          p.m = ms[j];
          const Prediction pr = Predict(h, d, p);
          const double t = pr.tflops * cal.factor;
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
    PrintCap(h, cal, ms);
  }
}

void RunCalibrateH200() {
  Hardware h = H200();
  ApplyOverrides(h);
  std::printf(
      "H200 calibration: the model's predictions of the terms the H200 can measure (sm_90a "
      "validation build; the block-scaled MMA is emulated there, so no MMA term is predicted).\n"
      "Put each measurement beside its line; the SM120 inputs it calibrates are named.\n\n");
  PrintHardware(h);
  std::printf("\n");

  // 1. The standalone quantizer (bench 'quantize'): issue-bound on sm_90a (software e2m1).
  // Measured: harness/bench/results/h200_2026-11-30_s10_faithful.csv (GBps column = (2+1/2+1/16)
  // B/elem / t; the same run's copy: 3766 / 4162 / 4254 GB/s).
  struct Measured {
    int64_t m;
    double gbps;
  };
  const Measured kQuantMeasured[] = {{4096, 3245.34}, {16384, 3739.43}, {75856, 3885.49}};
  std::printf(
      "1. standalone quantize kernel (kernels/quantize_kernel.cu, K = 7168): predicted at issue "
      "efficiency 1.0 and 0.8, vs measured "
      "(harness/bench/results/h200_2026-11-30_s10_faithful.csv)\n"
      "   calibrates: quant_instr_per_block x issue efficiency (SM120: 230 SASS instr/block, "
      "native cvt e2m1; H200: 206, software e2m1)\n");
  std::printf("   %8s %12s %12s %12s %10s %14s\n", "M", "pred GB/s@1", "pred GB/s@.8", "measured",
              "ratio@1", "issue bound");
  for (const Measured& q : kQuantMeasured) {
    const QuantizeStandalone a = PredictStandaloneQuantize(h, q.m, 7168, 1.0);
    const QuantizeStandalone b = PredictStandaloneQuantize(h, q.m, 7168, 0.8);
    std::printf("   %8lld %12.0f %12.0f %12.0f %10.2f %14.0f\n", static_cast<long long>(q.m),
                a.bench_gbps, b.bench_gbps, q.gbps, q.gbps / a.bench_gbps, a.issue_bound_gbps);
  }

  // 2. The fused kernel's quantizer warps (3 per SM) and their start-up.
  const Design cur = CurrentDesign();
  std::printf(
      "\n2. fused kernel's quantizer (current design, 3 warps/SM, depth 4, 4-row units): "
      "predicted attn_out rate and time to the first ready m-tile\n"
      "   measure: %%globaltimer at kernel entry, at the first WaitMTileReady return and at "
      "the last PublishUnit, per CTA (or ncu on a K=7168, N=128 run)\n");
  std::printf("   %8s %14s %14s %14s %14s\n", "M", "quant GB/s", "ready (us)", "fill (us)",
              "all rows (us)");
  for (int64_t m : {128, 1024, 4096, 16384, 75856}) {
    Problem p;
    p.m = m;
    const Prediction pr = Predict(h, cur, p);
    std::printf("   %8lld %14.0f %14.2f %14.2f %14.1f\n", static_cast<long long>(m),
                pr.quant_bytes_per_s * 1e-9, pr.startup_quant * kUs, pr.startup_fill * kUs,
                m * 7168 * 2.0 / pr.quant_bytes_per_s * kUs);
  }

  // 3. Epilogue per tile and the per-tile fixed cost: K = 256 and 512 runs, intercept at K = 0.
  std::printf(
      "\n3. epilogue (current design: residual prefetched to L2, t first, residual loads batched "
      "32 words per thread, cvt packs): predicted per tile\n"
      "   measure: the fused op at K = 256 .. 2048 (bench --bench_k); T(K) ~ linear in K, its "
      "intercept = startup + waves x (epilogue + TMA fill). calibrates: DRAM latency, the "
      "lockstep burst\n");
  std::printf("   %8s %8s %14s %14s %16s %14s\n", "M", "waves", "epilogue (us)", "fill (us)",
              "intercept (us)", "epi DRAM MB");
  for (int64_t m : {1024, 4096, 16384}) {
    Problem p;
    p.m = m;
    p.k = 256;
    const Prediction pr = Predict(h, cur, p);
    const double intercept =
        pr.startup_quant + pr.startup_fill + pr.tiles_per_sm * (pr.epilogue_tile + pr.startup_fill);
    std::printf("   %8lld %8.0f %14.2f %14.2f %16.1f %14.1f\n", static_cast<long long>(m),
                pr.tiles_per_sm, pr.epilogue_tile * kUs, pr.startup_fill * kUs, intercept * kUs,
                (pr.dram.residual + pr.dram.out) * 1e-6);
  }
  {
    // Session 10's measurements timed the lockstep tile: its epilogue, not the skewed one's.
    const Design lock = CurrentLockstepDesign();
    Design serial = lock;  // the epilogue before session 10: one DRAM round trip per fragment row
    serial.epilogue = Epilogue::kSerialDram;
    serial.epilogue_instr_per_pair = 36;
    serial.epilogue_access_bytes = 4;
    Problem p;
    p.m = 4096;
    Design cur4 = lock;  // the L4 epilogue with 4-byte accesses (StoreTile)
    cur4.epilogue_access_bytes = 4;
    const Prediction a = Predict(h, lock, p), b = Predict(h, serial, p);
    const double model4 = Predict(h, cur4, p).epilogue_tile * kUs;
    std::printf(
        "   model per tile: serial DRAM epilogue %.2f us -> L4, 4-byte accesses %.2f -> 16-byte "
        "%.2f (now)\n",
        b.epilogue_tile * kUs, model4, a.epilogue_tile * kUs);
    // harness/bench/results/h200_2026-11-30_s10_epilogue_ab.csv: the faithful build with either
    // epilogue (the L4 one with 4-byte accesses then), medians of 5, A/B alternated twice.
    std::printf(
        "   measured (faithful, 128x256, A/B): serial - L4 4-byte = 48 / 127 us at M = 4096 / "
        "16384, K = 7168 = 8.0 / 6.1 us per tile wave (6 / 21 waves); model %.2f.\n"
        "   intercepts of T(K) fitted over K = 256..2048: 85 / 307 us (L4), 141 / 481 us "
        "(serial); at small K the residual prefetch has no main loop to hide under and T(K) is "
        "not linear, so the intercept overstates the K = 7168 epilogue.\n",
        b.epilogue_tile * kUs - model4);
    Problem p128;
    p128.m = 4096;
    const double model128 = Predict(h, Current128Design(), p128).epilogue_tile * kUs;
    // harness/bench/results/h200_2026-11-30_s10_vec16_epilogue_ab.csv: the bench's
    // fused - fused_no_epilogue (OutProjDebug::kSkipEpilogue), medians of 5, A/B twice.
    std::printf(
        "   measured exposed epilogue (bench fused - fused_no_epilogue), 4-byte -> 16-byte "
        "epilogue: faithful 128x256 95 -> 54 / 213 -> 116 us at M = 4096 / 16384 = 15.9 -> 9.0 / "
        "10.1 -> 5.5 us per tile wave; model %.2f -> %.2f (measured / model %.1fx -> %.1fx). "
        "Fast 128x128: 66 -> 44 / 235 -> 158 us (16-byte: 4.0 / 3.9 us per tile wave, model "
        "%.2f: %.1fx)\n\n",
        model4, a.epilogue_tile * kUs, 13.0 / model4, 7.3 / (a.epilogue_tile * kUs), model128,
        3.95 / model128);
  }

  // 4. DRAM bytes per call (ncu dram__bytes_read.sum / dram__bytes_write.sum).
  std::printf(
      "\n4. DRAM bytes per call (current design; ncu dram__bytes_read.sum + "
      "dram__bytes_write.sum), and their time at the copy bandwidth\n");
  std::printf("   %8s %10s %10s %10s %10s %10s %10s %10s %10s\n", "M", "attn MB", "act w", "act r",
              "resid", "out", "weight", "total MB", "us");
  for (int64_t m : {128, 1024, 4096, 16384, 75856}) {
    Problem p;
    p.m = m;
    const Prediction pr = Predict(h, cur, p);
    std::printf("   %8lld %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f\n",
                static_cast<long long>(m), pr.dram.attn_out * 1e-6, pr.dram.act_write * 1e-6,
                pr.dram.act_read * 1e-6, pr.dram.residual * 1e-6, pr.dram.out * 1e-6,
                pr.dram.weight * 1e-6, pr.dram.Total() * 1e-6, pr.t_dram * kUs);
  }
  std::printf(
      "\n5. not predicted here, measure and feed back: TMA round trip of one 36 KiB / 18 KiB "
      "stage from L2 (single CTA, clock64 from arrive.expect_tx to try_wait success) -> "
      "tma_latency; L2 bandwidth by an LDG loop (Chips-and-Cheese style) and by TMA bulk loads "
      "over a 20 MB buffer -> how TMA relates to the 8.7 TB/s figure the 5090's L2 is scaled "
      "from; DRAM latency by pointer chase -> dram_latency.\n");
}

}  // namespace
}  // namespace h3::perf_model

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  using namespace h3::perf_model;
  if (absl::GetFlag(FLAGS_calibrate_h200)) {
    RunCalibrateH200();
    return 0;
  }
  std::vector<Hardware> hws;
  const std::string hw = absl::GetFlag(FLAGS_hardware);
  if (hw == "rtx5090" || hw == "all") hws.push_back(Rtx5090());
  if (hw == "rtx_pro_6000" || hw == "all") hws.push_back(RtxPro6000());
  if (hws.empty()) {
    std::fprintf(stderr, "unknown --hardware '%s' (rtx5090, rtx_pro_6000, all)\n", hw.c_str());
    return 2;
  }
  for (Hardware& h : hws) ApplyOverrides(h);
  RunSm120(hws);
  return 0;
}
