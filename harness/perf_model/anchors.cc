// The anchors of the refit (fit.h): published SM120 NVFP4 / MXFP4 GEMMs, each with its kernel's
// design as its source publishes it ([ASSUMED] where it does not), and the unfused pipeline a
// user would otherwise run. Design facts are read from the sources named; no code is copied.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/perf_model/fit.h"
#include "harness/perf_model/model.h"

namespace h3::perf_model {
namespace {

// A GEMM alone in the CUTLASS SM120 block-scaled style (NVIDIA/cutlass
// include/cutlass/gemm/collective/sm120_blockscaled_mma_tma.hpp and builders/
// sm120_blockscaled_mma_builder.inl): scales TMA'd per stage in
// 128x4 atoms, one producer warpgroup, setmaxnreg 40 / 232, persistent, D stored (bf16/fp16).
Design Gemm(const std::string& name, int bm, int bn, int bk, int stages, int warps_m, int warps_n) {
  Design d;
  d.name = name;
  d.bm = bm;
  d.bn = bn;
  d.bk = bk;
  d.stages = stages;
  d.warps_m = warps_m;
  d.warps_n = warps_n;
  d.gemm_only = true;
  d.quant_order = QuantOrder::kNone;
  d.load_warps = 1;
  d.quant_warps = 3;  // the rest of the producer warpgroup, idle
  d.setmaxnreg = true;
  d.regs_consumer = 232;
  d.regs_producer = 40;
  d.epilogue = Epilogue::kStoreOnly;
  d.epilogue_instr_per_pair = 4;
  d.epilogue_access_bytes = 16;
  d.sfa_load = SfaLoad::kScaleAtom128x4;
  return d;
}

// NVIDIA/cutlass PR #3271/#3272, examples/python/CuTeDSL/cute/blackwell_geforce/kernel/
// blockscaled_gemm/dense_blockscaled_gemm_persistent_pingpong.py: 8 MMA warps (num_mma_warps = 8)
// as two warp groups, each a 2x2 atom layout over its own 128x128 tile (64x64 warp tiles), that
// alternate tiles (one's epilogue under the other's main loop); 1 DMA warp (288 threads);
// load_register_requirement 40, mma_register_requirement 232; TMA-store epilogue (epi tile
// 64x32); stages computed to fill shared memory; cluster 1x1.
// [ASSUMED] 4 stages of 18 KiB (the count ex79's builder picks for the same stage: 88,064 B,
// sm120-anchors.md's SASS table) and the 128x128x128 tile (the file's default).
Design CuteDslPingPong(int sf_vec) {
  Design d = Gemm(sf_vec == 16 ? "anchor_cutedsl_pingpong_128x128x128_nvfp4"
                               : "anchor_cutedsl_pingpong_128x128x128_mxfp4",
                  128, 128, 128, 4, 2, 2);
  d.consumer_groups = 2;
  d.epilogue = Epilogue::kPingPong;
  d.quant_warps = 0;  // one lone DMA warp
  d.sf_vec = sf_vec;
  return d;
}

// CUTLASS example 79a style (gn-kernels gn_kernels/csrc/sm120a/cutlass_mm_fp4.cu): 128x128x128,
// KernelScheduleAuto -> cooperative, 8 MMA warps (4x2) and a producer warpgroup (384 threads),
// registers 40 / 232, 4 stages, 88,064 B of shared memory (sm120-anchors.md's SASS table).
Design CutlassCooperative128() {
  return Gemm("anchor_cutlass79_coop_128x128x128_s4", 128, 128, 128, 4, 4, 2);
}

}  // namespace

std::vector<Design> CublasLtDesigns() {
  // [ASSUMED] cuBLASLt's kernels are not published: the heuristic is taken to pick the best of
  // the tiles TRT-LLM / FlashInfer autotune over on SM120 (sm120-anchors.md: 128x{128,256}x128,
  // 256x128x128, cooperative) under a static or a stream-K-tail persistent schedule.
  std::vector<Design> out;
  for (Design d : {Gemm("cublaslt_128x256x128_s3", 128, 256, 128, 3, 2, 4),
                   Gemm("cublaslt_128x128x128_s4", 128, 128, 128, 4, 4, 2),
                   Gemm("cublaslt_256x128x128_s3", 256, 128, 128, 3, 4, 2)}) {
    out.push_back(d);
    d.schedule = Schedule::kStreamKTail;
    d.name += "_streamk";
    out.push_back(d);
  }
  return out;
}

std::vector<Anchor> Anchors() {
  std::vector<Anchor> out;
  auto square = [](int64_t s) {
    Problem p;
    p.m = p.n = p.k = s;
    return p;
  };
  const char kCuteDsl[] =
      "NVIDIA/cutlass PR #3271/#3272 (CuTe DSL GeForce persistent block-scaled GEMM), RTX PRO "
      "6000 Blackwell Server Edition";
  const char kPingPongNote[] =
      "ping-pong, 2 x (2x2 warps of 64x64) + 1 DMA warp, regs 232/40, TMA-store epilogue; "
      "[ASSUMED] 4 stages, tile 128x128x128";
  {
    Anchor a;
    a.name = "CuTe DSL 128x128 NVFP4, PRO 6000, 8192^3";
    a.source = kCuteDsl;
    a.design_note = kPingPongNote;
    a.board = Board::kRtxPro6000;
    a.problem = square(8192);
    a.designs = {CuteDslPingPong(16)};
    a.measured = 1629;
    out.push_back(a);
    a.name = "CuTe DSL 128x128 MXFP4, PRO 6000, 8192^3";
    a.designs = {CuteDslPingPong(32)};
    a.measured = 1615;
    out.push_back(a);
  }
  {
    Anchor a;
    a.name = "CUTLASS ex79-style 128x128x128 coop, 5090 400 W, 4096^3";
    a.source = "gau-nernst/gn-kernels README (commit a6fcce0), cutlass_mm_fp4.cu";
    a.design_note = "cooperative 4x2 MMA warps + producer warpgroup, regs 232/40, 4 stages";
    a.power_w = 400;
    a.problem = square(4096);
    a.designs = {CutlassCooperative128()};
    a.measured = 1100.43;
    out.push_back(a);
  }
  const double cublas[][2] = {{8192, 1343}, {4096, 1310}, {2048, 956}};
  for (const auto& c : cublas) {
    Anchor a;
    a.name = "cuBLASLt (torch._scaled_mm), 5090, " + std::to_string(static_cast<int>(c[0])) + "^3";
    a.source = "gau-nernst in Dao-AILab/quack#153";
    a.design_note = "[ASSUMED] best of 128x256x128 s3 / 128x128x128 s4 / 256x128x128 s3, "
                    "cooperative, static or stream-K tail";
    a.problem = square(static_cast<int64_t>(c[0]));
    a.designs = CublasLtDesigns();
    a.measured = c[1];
    out.push_back(a);
  }
  {
    Anchor a;
    a.name = "gau-nernst CuTe DSL, 5090, 8192^3";
    a.source = "gau-nernst in Dao-AILab/quack#153";
    a.design_note = "[ASSUMED] the CUTLASS cooperative 128x128x128 x4 design (not published)";
    a.problem = square(8192);
    a.designs = {CutlassCooperative128()};
    a.measured = 1341;
    out.push_back(a);
  }
  {
    Anchor a;
    a.name = "QuTLASS 256x128x128, 5090, M=512-2048 N=51200 K=5120";
    a.source = "QuTLASS assets/flops_nvfp4_sm120_cutlass.svg (chart, +-1%): ~1280-1307";
    a.design_note = "CUTLASS 256x128x128 cooperative 4x2 warps of 64x64, 3 stages, regs 240/24 "
                    "(sm120-anchors.md SASS table); mean of M = 512, 1024, 2048 vs the range's "
                    "middle; [ASSUMED] 600 W";
    a.problem.n = 51200;
    a.problem.k = 5120;
    a.ms = {512, 1024, 2048};
    Design d = Gemm("anchor_qutlass_256x128x128_s3", 256, 128, 128, 3, 4, 2);
    d.regs_consumer = 240;
    d.regs_producer = 24;
    a.designs = {d};
    a.measured = 0.5 * (1280 + 1307);
    out.push_back(a);
  }
  {
    Anchor a;
    a.name = "OMMA.SF saturated loop, 5090 at ~2.87 GHz";
    a.source = "Neroued/ninfer#160, kekzl/imp#606: ~2004-2020 TFLOP/s at 2.85-2.88 GHz";
    a.design_note = "registers only: 170 SM x 4096 FLOP/clk x the loop's measured clock";
    a.omma_loop = true;
    a.loop_clock_ghz = 2.87;
    a.measured = 0.5 * (2004 + 2020);
    out.push_back(a);
  }
  return out;
}

Unfused PredictUnfused(const Hardware& hw, const Problem& p) {
  Unfused u;
  const double M = static_cast<double>(p.m), N = static_cast<double>(p.n);
  // 1. The activation quantizer alone (kernels/launch/quantize_kernel.cu's model: full occupancy,
  //    DRAM- or issue-bound, its own launch floor).
  u.t_quant = PredictStandaloneQuantize(hw, p.m, p.k, 1.0).seconds;
  // 2. cuBLASLt NVFP4 GEMM, bf16 D (the anchors' design set; its best).
  u.t_gemm = 1e30;
  for (const Design& d : CublasLtDesigns()) {
    const Prediction pr = Predict(hw, d, p);
    if (pr.feasibility.ok) u.t_gemm = std::min(u.t_gemm, pr.t_total);
  }
  // 3. out = bf16(residual + bf16(gate[gate_index[m]] * D)): D, residual read, out written,
  //    gate_index and gate: DRAM-bound elementwise kernel plus one kernel's overhead.
  const double bytes = 3 * M * N * 2 + M * 4 + static_cast<double>(p.g) * N * 2;
  u.t_epilogue = bytes / hw.dram_bytes_per_s.value + hw.kernel_overhead_s.value;
  return u;
}

}  // namespace h3::perf_model
