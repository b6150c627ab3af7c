// The GPUs the model knows, each constant with its source (model.h Hardware).

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "harness/perf_model/fit.h"
#include "harness/perf_model/model.h"
#include "harness/perf_model/model_internal.h"

namespace h3::perf_model {

namespace {
const char kGnKernels[] = "gau-nernst/gn-kernels README";
const char kChipsAndCheese[] = "Chips and Cheese, 'Blackwell: Nvidia's Massive GPU' (RTX PRO 6000)";
const char kSassQuant120[] =
    "SASS count of QuantizeNvfp4Kernel's hot path (LDG..STG) when os was computed per block, "
    "as the fused kernel's quantizer still does, sm_120a, nvcc 13.0 + cuobjdump on the H200, "
    "2026-11-30 (the standalone kernel's os table path: 206, sm_120f)";
constexpr double kOmmaFlop = 2.0 * 16 * 8 * 64;  // one mma.m16n8k64
}  // namespace

double Hardware::ClockHz() const {
  if (sustained_clock_ghz.value > 0) {
    const double f = sustained_clock_ghz.value *
                     std::pow(power_w.value / 600.0, 1.0 / clock_power_exponent.value);
    return std::min(max_clock_ghz.value, f) * 1e9;
  }
  return mma_tflops.value * 1e12 / (sms.value * mma_flop_per_clk_per_sm.value);
}
double Hardware::OmmaSeconds() const {
  return kOmmaFlop / (mma_flop_per_clk_per_sm.value / internal::kSubPartitions) / ClockHz();
}

namespace {

// Every RTX 5090 constant but the two that are derived from the H200's measurements.
Hardware Rtx5090Constants() {
  Hardware h;
  h.name = "RTX 5090 (600 W)";
  h.sms = {170, "NVIDIA RTX 5090 datasheet; mmapeak's device query (main-horse.github.io)"};
  h.boost_clock_ghz = {2.407, "NVIDIA RTX 5090 datasheet boost clock"};
  h.mma_tflops = {1474.2,
                  "mmapeak, mma.sync m16n8k64 nvf4 from registers, RTX 5090 "
                  "(main-horse.github.io/posts/5090-mm-perf): 0.88 of the 1676 spec"};
  h.mma_flop_per_clk_per_sm = {4096,
                               "datasheet 1676 TFLOP/s dense NVFP4 / (170 SM x 2.407 GHz): one "
                               "m16n8k64 per 16 clk per sub-partition"};
  h.bf16_mma_flop_per_clk_per_sm = {
      512,
      "ASSUMED, favoured: half rate. For it: the datasheet's 209.5 TFLOPS dense 'FP16/BF16 Tensor "
      "with FP32 Accumulate' (419 with FP16 accumulate) = 209.5e12 / (170 x 2.407 GHz) = 512; "
      "cuBLAS on an RTX 5060 Ti (sm_120; QuantumDrizzy/BLACKWALL): 47.0 TFLOP/s with f32 "
      "accumulate, 87.9 with f16. Not deciding: cuBLAS BF16 GEMMs with f32 accumulate "
      "(torch.matmul) reach 245.80 TFLOP/s at 600 W (gau-nernst/gn-kernels README 'Realistic "
      "SOL'), 234.7-240.1 (zzc0721/torch-performance-test-data #96, #124): at half rate that is "
      "2.76-2.82 GHz x efficiency (>= 94% efficiency even at 3.0 GHz), at full rate 1.38-1.41 GHz "
      "effective (64-70% efficiency at 2.0-2.2 GHz, against the RTX PRO 6000's 2.22 GHz effective "
      "under the same cuBLAS): each reading strains one way. mmapeak's bf16 WMMA f32-accumulate "
      "370.6 (main-horse.github.io/posts/5090-mm-perf) would be full rate but its f16-accumulate "
      "745.8 is 2x any published rate: not used. Unmeasured: bf16 mma.sync m16n8k16 on any SM12x "
      "part, alone or inside a running FP4 GEMM (the model runs it at the power-limited FP4 "
      "clock, ClockHz()). Range 512 (half) .. 1024 (full rate)",
      true, 512, 1024};
  h.l2_bytes_per_s = {8.7e12 * 96.0 / 128.0,
                      "ASSUMED: 8.7 TB/s measured on the RTX PRO 6000 (Chips and Cheese: 64 L2 "
                      "slices, 128 MB) x 96/128 for the 5090's 96 MB of enabled L2; no 5090 "
                      "measurement exists. Range 5.0 (issue 18's pessimistic point) .. 8.7 (not "
                      "scaled: bandwidth set by the SM-side crossbar, not the slices)",
                      true, 5.0e12, 8.7e12};
  h.l2_latency_s = {130e-9,
                    std::string(kChipsAndCheese) +
                        ", taken as the 5090's; range 110 .. 170 ns (other clocks, other slices)",
                    true, 110e-9, 170e-9};
  h.l2_port_bytes_per_clk = {64,
                             "ASSUMED: per-SM L2->SM return as on Hopper: the H200's 2-D TMA "
                             "copies into one SM grow by 68 B/clk with their size, and one SM's "
                             "ring of 24 KiB stages tops out at ~50 B/clk (tma_latency probe); "
                             "range 32 .. 128",
                             true, 32, 128};
  h.dram_bytes_per_s = {1509e9, std::string(kGnKernels) + ": memcpy-measured (spec 1792 GB/s)"};
  h.dram_latency_s = {600e-9, "ASSUMED: loaded GDDR7 round trip; unmeasured; range 450 .. 900 ns",
                      true, 450e-9, 900e-9};
  h.smem_bytes_per_clk = {128, std::string(kChipsAndCheese) + ": 128 B/clk L1/shared per SM"};
  h.smem_per_block = {101376, "CUTLASS sm120_smem_capacity_bytes (99 KiB)"};
  h.regs_per_sm = {65536, "64K 32-bit registers per SM (CUDA guide, compute capability 12.x)"};
  h.l2_size_bytes = {96.0 * 1024 * 1024, "96 MB L2 (RTX 5090 datasheet)"};
  // The TMA's own latency and the L2's queueing under every SM's load, measured on the H200
  // (harness/bench/tma_latency.cu; harness/bench/results/h200_2026-12-03_tma_latency.txt).
  h.tma_latency_s = {220e-9,
                     "ASSUMED: TMA issue -> complete_tx of a stage from an unloaded L2, the "
                     "transfer at the port rate added apart: this part's L2 hit (130 ns, above) + "
                     "the TMA's own latency beyond it, measured on the H200 (2-D tensor copies: "
                     "fixed 236 ns = its 146 ns L2 chase + 90 ns; tma_latency probe, "
                     "harness/bench/results/h200_2026-12-03_tma_latency.txt), unmeasured on SM12x "
                     "[ASSUMED: Chips and Cheese's 130 ns is what the probe's chase measures]. "
                     "Range 155 .. 350 ns: the L2 hit's 110 .. 170 plus half to twice the "
                     "H200's 90 ns",
                     true, 155e-9, 350e-9};
  h.l2_queueing = {0.1,
                   "ASSUMED: the TMA latency's growth with L2 utilisation rho, x (1 + q rho / "
                   "(1 - rho)). Measured on the H200 (tma_latency probe): every SM keeping one "
                   "24 KiB stage in flight loads the L2 to rho 0.74 and stretches the round trip "
                   "390 -> 482 ns, q 0.08 (0.035 against the single-thread stage's 438 ns); past "
                   "the 8.0-8.2 TB/s wall the latency is Little's law. A ring of stages is a "
                   "closed loop, far flatter than an open M/D/1 queue (0.5) or M/M/1 (1). "
                   "Unmeasured on SM12x: range 0.03 .. 1.0",
                   true, 0.03, 1.0};
  h.ldsm_latency_clk = {33,
                        "ASSUMED: ldmatrix load-to-use as measured on Ampere/Hopper; range 25 .. 45",
                        true, 25, 45};
  h.single_warp_mma = {0.70,
                       "ASSUMED for SM120: the H200's fused_128x256_one_group measured 0.70 / "
                       "0.67-0.71 (emulated MMA, NOTES.md \"Measuring the skew's assumption\"); "
                       "the SASS (issue 18) puts a ~80-instruction address chain and 20 LDS "
                       "before each stage's first OMMA, on the critical path when one warp "
                       "issues alone (0.75-0.85 if half of it is exposed against 1024 clk of "
                       "OMMAs). Range 0.5 .. 1.0",
                       true, 0.5, 1.0};
  h.quant_instr_per_block = {230, kSassQuant120};
  h.quant_warp_ipc = {0.5,
                      "ASSUMED: one quantizer warp per sub-partition beside two consumer warps, "
                      "dependent ALU chains; range 0.3 .. 0.8",
                      true, 0.3, 0.8};
  h.gemm_anchor_tflops = {
      1306.48,
      std::string(kGnKernels) + " 'Realistic SOL': cuBLASLt NVFP4 best square 4096..15360, 600 W"};
  h.epilogue_ratio = {1.0, "the model's epilogue as is"};
  h.hand_kernel_efficiency = {1.0, "none"};
  // The power-limited clock (issue 29): priors here, fitted values applied by fit.cc.
  h.sustained_clock_ghz = {
      1474.2e12 / (170 * 4096.0) * 1e-9,
      "prior: the clock mmapeak's 1474.2 TFLOP/s implies (the model before the refit); "
      "documented range 1.93 (cuBLASLt's 1343 at 8192^3 with every tensor cycle used) .. 2.87 "
      "(the OMMA.SF loop's measured clock, no power limit reached)",
      true, 1.93, 2.87};
  h.max_clock_ghz = {2.87,
                     "OMMA.SF saturated loop at ~2.85-2.88 GHz measured clocks, ~2004-2020 TFLOP/s "
                     "(Neroued/ninfer#160, kekzl/imp#606)"};
  h.power_w = {600, "the board's power limit of the run: 600 W (gn-kernels' 1306 TFLOP/s setting)"};
  h.clock_power_exponent = {
      std::log(1.5) / std::log(1306.48 / 1165.04),
      "prior: cuBLASLt NVFP4 1306.48 at 600 W vs 1165.04 at 400 W (gn-kernels) read as "
      "clock ~ P^(1/beta), beta = ln 1.5 / ln 1.121 = 3.55; documented range 2.5 .. 5 (P ~ f V^2 "
      "with V rising with f, plus leakage)",
      true, 2.5, 5.0};
  h.kernel_overhead_s = {3e-6,
                         "prior: launch + ramp-up + drain of one timed kernel (CUDA events / "
                         "do_bench), unmeasured on SM12x; documented range 1 .. 5 us",
                         true, 1e-6, 5e-6};
  return h;
}

Hardware H200Constants();

}  // namespace

H200EpilogueRatio MeasuredH200EpilogueRatio() {
  // Per tile wave, K = 7168, faithful build, 16-byte epilogue: 9.0 / 5.5 us at M = 4096 / 16384
  // (harness/bench/results/h200_2026-11-30_s10_vec16_epilogue_ab.csv); 7.3 = their mean.
  constexpr double kLowUs = 5.5, kTypicalUs = 7.3, kHighUs = 9.0;
  Problem p;
  p.m = 4096;
  H200EpilogueRatio r;
  r.model_us = Predict(H200Constants(), CurrentLockstepDesign(), p).epilogue_tile * 1e6;
  r.low = kLowUs / r.model_us;
  r.typical = kTypicalUs / r.model_us;
  r.high = kHighUs / r.model_us;
  return r;
}

Hardware Rtx5090Unfitted() {
  Hardware h = Rtx5090Constants();
  const H200EpilogueRatio epi = MeasuredH200EpilogueRatio();
  h.epilogue_ratio = {
      epi.typical,
      absl::StrFormat("ASSUMED to carry over from the H200: its exposed epilogue of the lockstep "
                      "128x256 tile (fused - fused_no_epilogue, 16-byte accesses) measured 5.5 .. "
                      "9.0 us per tile wave, typically 7.3, against the model's %.2f us there "
                      "(harness/bench/results/h200_2026-11-30_s10_vec16_epilogue_ab.csv)",
                      epi.model_us),
      true, epi.low, epi.high};
  h.hand_kernel_efficiency = {
      0.95,
      "ASSUMED: what our kernel, never timed on an SM12x part, may lose against the "
      "CUTLASS-built anchors the model fits at 1.0 (costs no term sees: the non-TMA epilogue's "
      "and the ready flags' instructions beside the MMAs, the NOP-filled OMMA slots); the main "
      "loop's issue count does not argue for a loss (sm_120f, the skewed 128x256: 349 instructions "
      "per 128 OMMA, 174.5 per 64, 60 of them vector, against CUTLASS 256x128's 178 and 44; "
      "NOTES.md, issue 18), and nothing measured moves it. Range 0.85 .. 1.0",
      true, 0.85, 1.0};
  return h;
}

Hardware RtxPro6000Unfitted() {
  Hardware h = Rtx5090Unfitted();
  h.name = "RTX PRO 6000 (600 W)";
  h.sms = {188, std::string(kChipsAndCheese) + "; NVIDIA datasheet"};
  h.boost_clock_ghz = {2.617, "NVIDIA RTX PRO 6000 Blackwell datasheet boost clock"};
  h.mma_tflops = {188 * 4096 * 2.617e9 * (1474.2 / 1676.0) * 1e-12,
                  "ASSUMED: 188 SM x 4096 FLOP/clk x 2.617 GHz = 2015 TFLOP/s x the 5090's "
                  "mmapeak/spec ratio 0.880; no mmapeak on this card; range 0.845 .. 0.915 of "
                  "spec (the 5090's ratio +- 4%: another board, power and clock policy)",
                  true, 2015.0 * 0.845, 2015.0 * 0.915};
  h.bf16_mma_flop_per_clk_per_sm = {
      1024,
      "full rate, derived from cuBLAS BF16 GEMMs with f32 accumulate (torch.matmul): "
      "gau-nernst/gn-kernels README 'Realistic SOL' 427.62 TFLOP/s at 600 W (edition not "
      "stated); zzc0721/torch-performance-test-data #161/#162, Server Edition, 417.34 at "
      "8192^2; #160, Workstation Edition, 368.43 at 4096^2, 350.31 at 8192^2. At half rate "
      "(512) 417-428 TFLOP/s would need 417.3e12 / (188 SM x 512) = 4.3-4.4 GHz: impossible "
      "(GB202's unthrottled clock ~2.87 GHz); at full rate 2.17-2.22 GHz effective (the "
      "Workstation Edition runs 1.82-1.91). Agrees with the datasheet's 503.8 TFLOPS dense "
      "'FP16 Tensor (FP32 Accumulate)' (hmc-tech.com's spec table) = 503.8e12 / (188 x 2.617 "
      "GHz) = 1024. Unmeasured: bf16 mma.sync m16n8k16 inside a running FP4 GEMM on any SM12x "
      "part; the clock while both run is the model's power-limited FP4 clock (ClockHz())"};
  h.l2_bytes_per_s = {8.7e12, std::string(kChipsAndCheese) + ": ~8.7 TB/s measured"};
  h.l2_latency_s = {130e-9, std::string(kChipsAndCheese) + ": ~130 ns measured"};
  h.dram_bytes_per_s = {1792e9,
                        "ASSUMED: datasheet 1792 GB/s, not measured; range 1505 (the 5090's "
                        "memcpy reaches 0.84 of the same spec) .. 1792",
                        true, 1505e9, 1792e9};
  h.l2_size_bytes = {128.0 * 1024 * 1024, "128 MB L2 (full GB202, NVIDIA datasheet)"};
  h.gemm_anchor_tflops = {
      1425.95,
      std::string(kGnKernels) + " 'Realistic SOL': cuBLASLt NVFP4 best square 4096..15360, 600 W"};
  h.sustained_clock_ghz = {
      2015.0 * 0.880 / (188 * 4096.0) * 1e3,
      "prior: the 5090's mmapeak/spec ratio on this card's spec (2.30 GHz); documented range "
      "2.12 (CuTe DSL's 1629 at 8192^3 with every tensor cycle used) .. 2.87 (GB202's "
      "unthrottled OMMA clock); the anchors are the Server Edition at 600 W [ASSUMED: the "
      "same board as the Workstation Edition otherwise]. Not explained by the edition: "
      "gn-kernels' cuBLASLt NVFP4 1426 on an RTX PRO 6000 (edition unstated), 12% below the "
      "CuTe DSL anchor's 1629, on a board that ran cuBLAS BF16 at 427.6 (Server Edition 417.3, "
      "Workstation Edition 350-368: bf16_mma_flop_per_clk_per_sm's sources), so not a slower "
      "board; left outside the fit as an unexplained contradiction (refit_report.cc)",
      true, 2.12, 2.87};
  return h;
}

Hardware Rtx5090() { return FittedHardware(Rtx5090Unfitted(), Board::kRtx5090); }
Hardware RtxPro6000() { return FittedHardware(RtxPro6000Unfitted(), Board::kRtxPro6000); }

namespace {

// The H200's constants, its epilogue as the model has it (ratio 1: measured there).
Hardware H200Constants() {
  Hardware h = Rtx5090Constants();
  h.name = "H200 (validation)";
  h.sms = {132, "cudaDeviceProp of the lent H200 (README sweep log: 132 SMs)"};
  h.boost_clock_ghz = {1.98, "nvidia-smi clocks.max.sm on the lent H200: 1980 MHz"};
  // The block-scaled MMA is emulated on sm_90a: only the clock matters here.
  h.mma_flop_per_clk_per_sm = {4096, "nominal (SM120's rate) so that ClockHz() = 1.98 GHz"};
  h.mma_tflops = {132 * 4096 * 1.98e9 * 1e-12, "nominal: 132 x 4096 x 1.98 GHz (not an H200 rate)"};
  h.bf16_mma_flop_per_clk_per_sm = {4096,
                                    "nominal: H200 dense BF16 989 TFLOPS = 132 x 4096 x 1.83 GHz "
                                    "(wgmma; mma.sync reaches less); the options model is not "
                                    "applied to the H200"};
  h.l2_bytes_per_s = {8.1e12,
                      "tma_latency probe on the lent H200 (harness/bench/results/"
                      "h200_2026-12-03_tma_latency.txt): every SM's TMA stage ring, 8.0 .. 8.2 "
                      "TB/s from L2 at 2 .. 8 stages in flight"};
  h.l2_latency_s = {146e-9, "tma_latency probe on the lent H200: ld.global.cg chase, 8 MiB"};
  h.tma_latency_s = {236e-9,
                     "tma_latency probe on the lent H200: 2-D tensor copies' fixed part (236 ns + "
                     "bytes / 68 B/clk)"};
  h.l2_queueing = {0.08,
                   "tma_latency probe on the lent H200: every SM's stage ring at rho 0.74 (one "
                   "point below the wall)"};
  h.dram_bytes_per_s = {4.19e12,
                        "harness/bench/results/h200_sm90_fast.csv: device copy 4193.86 GB/s "
                        "(read+write) at M=75856; spec 4.8 TB/s"};
  h.dram_latency_s = {700e-9, "ASSUMED: loaded HBM3e round trip; range 500 .. 1000 ns", true,
                      500e-9, 1000e-9};
  h.smem_per_block = {232448, "227 KiB per block on sm_90"};
  h.l2_size_bytes = {50.0 * 1024 * 1024, "50 MB L2 (GH100)"};
  h.quant_instr_per_block = {206,
                             "SASS count of QuantizeNvfp4Kernel's fast path per block, sm_90a "
                             "(software e2m1 as a minimum of lines, os table), nvcc 13.0 + "
                             "cuobjdump on the H200, 2026-11-30 (was 600)"};
  h.gemm_anchor_tflops = {0, "no SM120 anchor on Hopper"};
  h.sustained_clock_ghz = {0, "unused on the H200: ClockHz() is the nominal 1.98 GHz"};
  h.kernel_overhead_s = {0, "none: the H200 terms are compared as differences"};
  // The H200 is where the ratio and the hand kernel's efficiency are measured: the model's own.
  h.epilogue_ratio = {1.0, "the model's epilogue as is: the H200 is where the ratio is measured"};
  h.hand_kernel_efficiency = {1.0, "none: no SM120 calibration on Hopper"};
  return h;
}

}  // namespace

Hardware H200() { return H200Constants(); }

const Hardware* Sm120HardwareForSmCount(int sm_count) {
  static const Hardware* const k5090 = new Hardware(Rtx5090());
  static const Hardware* const kPro = new Hardware(RtxPro6000());
  if (sm_count == 170) return k5090;
  if (sm_count == 188) return kPro;
  return nullptr;
}

}  // namespace h3::perf_model
