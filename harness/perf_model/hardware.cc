// The GPUs the model knows, each constant with its source (model.h Hardware).

#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "harness/perf_model/model.h"
#include "harness/perf_model/model_internal.h"

namespace h3::perf_model {

namespace {
const char kGnKernels[] = "gau-nernst/gn-kernels README";
const char kChipsAndCheese[] = "Chips and Cheese, 'Blackwell: Nvidia's Massive GPU' (RTX PRO 6000)";
const char kSassQuant120[] =
    "SASS count of QuantizeNvfp4Kernel's hot path (LDG..STG) when os was computed per block, "
    "as the fused kernel's quantizer still does, sm_120a, nvcc 13.0 + cuobjdump on the H200, "
    "2026-11-30 (the standalone kernel's os table path: 206, sm_120f, session 10)";
constexpr double kOmmaFlop = 2.0 * 16 * 8 * 64;  // one mma.m16n8k64
}  // namespace

double Hardware::ClockHz() const {
  return mma_tflops.value * 1e12 / (sms.value * mma_flop_per_clk_per_sm.value);
}
double Hardware::OmmaSeconds() const {
  return kOmmaFlop / (mma_flop_per_clk_per_sm.value / internal::kSubPartitions) / ClockHz();
}

Hardware Rtx5090() {
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
  h.l2_bytes_per_s = {8.7e12 * 96.0 / 128.0,
                      "ASSUMED: 8.7 TB/s measured on the RTX PRO 6000 (Chips and Cheese: 64 L2 "
                      "slices, 128 MB) x 96/128 for the 5090's 96 MB of enabled L2; no 5090 "
                      "measurement exists",
                      true};
  h.l2_latency_s = {130e-9, std::string(kChipsAndCheese) + ", taken as the 5090's", true};
  h.l2_port_bytes_per_clk = {64, "ASSUMED: per-SM L2->SM return as on Ampere/Hopper", true};
  h.dram_bytes_per_s = {1509e9, std::string(kGnKernels) + ": memcpy-measured (spec 1792 GB/s)"};
  h.dram_latency_s = {600e-9, "ASSUMED: loaded GDDR7 round trip; unmeasured", true};
  h.smem_bytes_per_clk = {128, std::string(kChipsAndCheese) + ": 128 B/clk L1/shared per SM"};
  h.smem_per_block = {101376, "CUTLASS sm120_smem_capacity_bytes (99 KiB)"};
  h.regs_per_sm = {65536, "64K 32-bit registers per SM (CUDA guide, compute capability 12.x)"};
  h.l2_size_bytes = {96.0 * 1024 * 1024, "96 MB L2 (RTX 5090 datasheet)"};
  h.tma_latency_s = {1.0e-6,
                     "ASSUMED (NOTES.md's ~1 us): TMA issue -> complete_tx of a stage from L2, "
                     "incl. the 130 ns L2 latency; unmeasured",
                     true};
  h.ldsm_latency_clk = {33, "ASSUMED: ldmatrix load-to-use as measured on Ampere/Hopper", true};
  h.single_warp_mma = {1.0,
                       "ASSUMED: one warp per sub-partition keeps the tensor pipe busy (a 64x64 "
                       "warp tile has 32 independent m16n8k64 per k-step, 512 clk between "
                       "dependent ones; CUTLASS's SM120 NVF4 ping-pong schedule relies on the "
                       "same); unmeasured",
                       true};
  h.quant_instr_per_block = {230, kSassQuant120};
  h.quant_warp_ipc = {0.5,
                      "ASSUMED: one quantizer warp per sub-partition beside two consumer warps, "
                      "dependent ALU chains",
                      true};
  h.gemm_anchor_tflops = {
      1306.48,
      std::string(kGnKernels) + " 'Realistic SOL': cuBLASLt NVFP4 best square 4096..15360, 600 W"};
  return h;
}

Hardware RtxPro6000() {
  Hardware h = Rtx5090();
  h.name = "RTX PRO 6000 (600 W)";
  h.sms = {188, std::string(kChipsAndCheese) + "; NVIDIA datasheet"};
  h.boost_clock_ghz = {2.617, "NVIDIA RTX PRO 6000 Blackwell datasheet boost clock"};
  h.mma_tflops = {188 * 4096 * 2.617e9 * (1474.2 / 1676.0) * 1e-12,
                  "ASSUMED: 188 SM x 4096 FLOP/clk x 2.617 GHz = 2015 TFLOP/s x the 5090's "
                  "mmapeak/spec ratio 0.880; no mmapeak on this card",
                  true};
  h.l2_bytes_per_s = {8.7e12, std::string(kChipsAndCheese) + ": ~8.7 TB/s measured"};
  h.l2_latency_s = {130e-9, std::string(kChipsAndCheese) + ": ~130 ns measured"};
  h.dram_bytes_per_s = {1792e9,
                        "ASSUMED: datasheet 1792 GB/s, not measured (the 5090's memcpy reaches "
                        "0.84 of the same spec)",
                        true};
  h.l2_size_bytes = {128.0 * 1024 * 1024, "128 MB L2 (full GB202, NVIDIA datasheet)"};
  h.gemm_anchor_tflops = {
      1425.95,
      std::string(kGnKernels) + " 'Realistic SOL': cuBLASLt NVFP4 best square 4096..15360, 600 W"};
  return h;
}

Hardware H200() {
  Hardware h = Rtx5090();
  h.name = "H200 (validation)";
  h.sms = {132, "cudaDeviceProp of the lent H200 (README sweep log: 132 SMs)"};
  h.boost_clock_ghz = {1.98, "nvidia-smi clocks.max.sm on the lent H200: 1980 MHz"};
  // The block-scaled MMA is emulated on sm_90a: only the clock matters here.
  h.mma_flop_per_clk_per_sm = {4096, "nominal (SM120's rate) so that ClockHz() = 1.98 GHz"};
  h.mma_tflops = {132 * 4096 * 1.98e9 * 1e-12, "nominal: 132 x 4096 x 1.98 GHz (not an H200 rate)"};
  h.l2_bytes_per_s = {7.0e12, "ASSUMED: H200 L2 bandwidth not measured here", true};
  h.l2_latency_s = {200e-9, "ASSUMED: H200 L2 hit latency", true};
  h.dram_bytes_per_s = {4.19e12,
                        "harness/bench/results/h200_sm90_fast.csv: device copy 4193.86 GB/s "
                        "(read+write) at M=75856; spec 4.8 TB/s"};
  h.dram_latency_s = {700e-9, "ASSUMED: loaded HBM3e round trip", true};
  h.smem_per_block = {232448, "227 KiB per block on sm_90"};
  h.l2_size_bytes = {50.0 * 1024 * 1024, "50 MB L2 (GH100)"};
  h.quant_instr_per_block = {206,
                             "SASS count of QuantizeNvfp4Kernel's fast path per block, sm_90a "
                             "(software e2m1 as a minimum of lines, os table), nvcc 13.0 + "
                             "cuobjdump on the H200, 2026-11-30 session 10 (was 600)"};
  h.gemm_anchor_tflops = {0, "no SM120 anchor on Hopper"};
  return h;
}

const Hardware* Sm120HardwareForSmCount(int sm_count) {
  static const Hardware* const k5090 = new Hardware(Rtx5090());
  static const Hardware* const kPro = new Hardware(RtxPro6000());
  if (sm_count == 170) return k5090;
  if (sm_count == 188) return kPro;
  return nullptr;
}

}  // namespace h3::perf_model
