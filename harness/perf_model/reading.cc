// The model's reading (reading.h): the clamped, hand-scaled calibrated figure, its Monte Carlo
// over the assumed inputs, the headline line and the measurable inputs.

#include "harness/perf_model/reading.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "harness/perf_model/model.h"

namespace h3::perf_model {
namespace {

// The design's own tile as a GEMM alone (no quantizer, bf16 D stored, groups in step).
Design OwnGemm(const Design& d) {
  Design g = d;
  g.gemm_only = true;
  g.quant_order = QuantOrder::kNone;
  g.epilogue = Epilogue::kStoreOnly;
  g.a_stages = 0;
  g.epilogue_instr_per_pair = GemmOnlyReference().epilogue_instr_per_pair;
  return g;
}

// The best GEMM the model has at this problem shape: the library's tile or the design's own
// (a library would not run 128x256 tiles where 128x128 ones fill more SMs).
double SameShapeGemm(const Hardware& hw, const Design& d, const Problem& p, double reference) {
  const Prediction own = Predict(hw, OwnGemm(d), p);
  return own.feasibility.ok ? std::max(reference, own.tflops) : reference;
}

// The reading from a prediction and the same-shape GEMM's raw figure.
Reading Combine(const Hardware& hw, const Design& d, const Problem& p, const Prediction& pr,
                double gemm_tflops, double calibration) {
  Reading r;
  r.prediction = pr;
  r.model_tflops = pr.tflops;
  r.gemm_tflops = gemm_tflops;
  r.calibration = calibration;
  if (d.gemm_only) {
    r.tflops = pr.tflops * calibration;
  } else {
    r.clamped = pr.tflops > gemm_tflops;
    r.tflops = std::min(pr.tflops, gemm_tflops) * calibration * hw.hand_kernel_efficiency.value;
  }
  r.seconds = r.tflops > 0 ? p.Flop() / (r.tflops * 1e12) : 0;
  return r;
}

// Uniform in [0, 1) from the engine's raw bits (std:: distributions differ between libraries).
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Triangular over [lo, hi] with mode c, by inverting its CDF.
double Triangular(double u, double lo, double c, double hi) {
  const double f = (c - lo) / (hi - lo);
  if (u < f) return lo + std::sqrt(u * (hi - lo) * (c - lo));
  return hi - std::sqrt((1 - u) * (hi - lo) * (hi - c));
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(std::floor(q * (v.size() - 1)))];
}

}  // namespace

Reading Read(const Hardware& hw, const Design& d, const Problem& p, const Calibration& cal) {
  const double gemm =
      d.gemm_only ? 0 : SameShapeGemm(hw, d, p, Predict(hw, GemmOnlyReference(), p).tflops);
  return Combine(hw, d, p, Predict(hw, d, p), gemm, cal.factor);
}

Reading Read(const Hardware& hw, const Design& d, const Problem& p) {
  return Read(hw, d, p, CalibrateToGemmAnchor(hw));
}

std::vector<AssumedInput> AssumedInputs(Hardware& h) {
  const AssumedInput all[] = {
      {"sms", &h.sms},
      {"mma_tflops", &h.mma_tflops},
      {"mma_flop_per_clk_per_sm", &h.mma_flop_per_clk_per_sm},
      {"l2_bytes_per_s", &h.l2_bytes_per_s},
      {"l2_latency_s", &h.l2_latency_s},
      {"l2_port_bytes_per_clk", &h.l2_port_bytes_per_clk},
      {"dram_bytes_per_s", &h.dram_bytes_per_s},
      {"dram_latency_s", &h.dram_latency_s},
      {"smem_bytes_per_clk", &h.smem_bytes_per_clk},
      {"smem_per_block", &h.smem_per_block},
      {"regs_per_sm", &h.regs_per_sm},
      {"l2_size_bytes", &h.l2_size_bytes},
      {"tma_latency_s", &h.tma_latency_s},
      {"l2_queueing", &h.l2_queueing},
      {"ldsm_latency_clk", &h.ldsm_latency_clk},
      {"single_warp_mma", &h.single_warp_mma},
      {"quant_instr_per_block", &h.quant_instr_per_block},
      {"quant_warp_ipc", &h.quant_warp_ipc},
      {"gemm_anchor_tflops", &h.gemm_anchor_tflops},
      {"epilogue_ratio", &h.epilogue_ratio},
      {"hand_kernel_efficiency", &h.hand_kernel_efficiency},
  };
  std::vector<AssumedInput> out;
  for (const AssumedInput& a : all) {
    if (a.input->assumed && a.input->HasRange()) out.push_back(a);
  }
  return out;
}

std::vector<std::vector<Uncertainty>> ReadUncertainty(const Hardware& hw,
                                                      const std::vector<Design>& designs,
                                                      const std::vector<int64_t>& ms,
                                                      const UncertaintyOptions& options) {
  std::vector<std::vector<Uncertainty>> out(designs.size(), std::vector<Uncertainty>(ms.size()));
  // Defaults.
  const Calibration cal = CalibrateToGemmAnchor(hw);
  for (size_t j = 0; j < ms.size(); ++j) {
    const Problem p = AtM(ms[j]);
    const double gemm = Predict(hw, GemmOnlyReference(), p).tflops;
    for (size_t i = 0; i < designs.size(); ++i) {
      const Reading r = Combine(hw, designs[i], p, Predict(hw, designs[i], p),
                                SameShapeGemm(hw, designs[i], p, gemm), cal.factor);
      out[i][j].def = r.tflops;
      out[i][j].clamped = r.clamped;
      out[i][j].feasible = r.prediction.feasibility.ok;
    }
  }
  // Draws: every assumed input at once, the same draws for every design and M.
  const int n = std::max(1, options.samples);
  std::vector<std::vector<std::vector<double>>> draws(
      designs.size(), std::vector<std::vector<double>>(ms.size()));
  std::vector<std::vector<int>> clamped(designs.size(), std::vector<int>(ms.size(), 0));
  std::mt19937_64 rng(options.seed);
  for (int s = 0; s < n; ++s) {
    Hardware h = hw;
    for (const AssumedInput& a : AssumedInputs(h)) {
      a.input->value = Triangular(Uniform(rng), a.input->low, a.input->value, a.input->high);
    }
    const Calibration c = CalibrateToGemmAnchor(h);
    for (size_t j = 0; j < ms.size(); ++j) {
      const Problem p = AtM(ms[j]);
      const double gemm = Predict(h, GemmOnlyReference(), p).tflops;
      for (size_t i = 0; i < designs.size(); ++i) {
        const Reading r = Combine(h, designs[i], p, Predict(h, designs[i], p),
                                  SameShapeGemm(h, designs[i], p, gemm), c.factor);
        draws[i][j].push_back(r.tflops);
        clamped[i][j] += r.clamped ? 1 : 0;
      }
    }
  }
  for (size_t i = 0; i < designs.size(); ++i) {
    for (size_t j = 0; j < ms.size(); ++j) {
      Uncertainty& u = out[i][j];
      const std::vector<double>& v = draws[i][j];
      u.low = Percentile(v, 0.05);
      u.high = Percentile(v, 0.95);
      u.p_goal = static_cast<double>(std::count_if(v.begin(), v.end(), [&](double t) {
                   return t >= options.goal_tflops;
                 })) /
                 v.size();
      u.clamped_share = static_cast<double>(clamped[i][j]) / v.size();
    }
  }
  return out;
}

std::vector<Design> BuiltDesigns() {
  return {CurrentStagedDesign(), CurrentLockstepDesign(), CurrentDesign(), Current128Design()};
}

std::string HeadlineLine(const Hardware& hw, int64_t m, const Uncertainty& u, double x_unfused,
                         double goal_tflops) {
  const std::string gpu = hw.name.substr(0, hw.name.find(" ("));
  return absl::StrFormat(
      "headline: %s M=%d default-config low %.0f default %.0f high %.0f TFLOP/s P(>=%.0f)=%.2f "
      "x_unfused=%.2f",
      gpu, m, u.low, u.def, u.high, goal_tflops, u.p_goal, x_unfused);
}

MeasurableInputs ModelMeasurableInputs(const Hardware& hw, const Design& d, const Problem& p) {
  MeasurableInputs in;
  in.one_warp_mma = hw.single_warp_mma.value;
  in.epilogue_ratio = hw.epilogue_ratio.value;
  const Prediction with = Predict(hw, d, p);
  Design none = d;
  none.epilogue = Epilogue::kNone;
  const Prediction without = Predict(hw, none, p);
  const double scale = CalibrateToGemmAnchor(hw).factor * hw.hand_kernel_efficiency.value;
  in.exposed_epilogue_s = (with.t_total - without.t_total) / scale;
  in.tma_latency_s = hw.tma_latency_s.value;
  in.tma_latency_loaded_s = with.stage.tma_latency;
  in.l2_utilisation = with.stage.l2_utilisation;
  in.l2_bytes_per_s = hw.l2_bytes_per_s.value;
  return in;
}

}  // namespace h3::perf_model
