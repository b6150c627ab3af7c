#ifndef H3_HARNESS_PERF_MODEL_MODEL_H_
#define H3_HARNESS_PERF_MODEL_MODEL_H_

// The performance model of the fused NVFP4 out-projection on SM120 (RTX 5090, RTX PRO 6000), in
// code: cited hardware constants, a kernel design (tile, pipeline, warp roles, epilogue and
// scheduling choices) and Predict(), which returns each component's time and the predicted
// TFLOP/s. A model, NOT a measurement: every input that nobody measured on the device is marked
// `assumed`, and the H200 calibration mode (h200_calibration.cc) names what to measure.
//
// Units: seconds, bytes, FLOP unless a name says otherwise. "Per SM" times are the critical SM's.

#include <cstdint>
#include <string>
#include <vector>

namespace h3::perf_model {

// A number with where it comes from. `assumed`: not measured or published for this device; an
// assumed input also states the range [low, high] it may lie in (the uncertainty reading samples
// it, reading.h); low = high = 0 for the measured or published ones.
struct Cited {
  double value = 0;
  std::string source;
  bool assumed = false;
  double low = 0, high = 0;
  bool HasRange() const { return low < high; }
};

struct Hardware {
  std::string name;
  Cited sms;                      // streaming multiprocessors
  Cited boost_clock_ghz;          // datasheet boost clock (information; see ClockGhz())
  Cited mma_tflops;               // dense NVFP4 mma.sync m16n8k64 rate, all SMs, sustained
  Cited mma_flop_per_clk_per_sm;  // per-clock tensor rate of one SM (4 sub-partitions)
  Cited l2_bytes_per_s;           // aggregate SM-side L2 bandwidth
  Cited l2_latency_s;             // load-to-use latency of an L2 hit
  Cited l2_port_bytes_per_clk;    // one SM's L2 -> SM return bandwidth when it bursts alone
  Cited dram_bytes_per_s;
  Cited dram_latency_s;      // loaded DRAM round trip seen by a load
  Cited smem_bytes_per_clk;  // per SM (L1 / shared data path)
  Cited smem_per_block;      // dynamic shared memory one CTA may use
  Cited regs_per_sm;         // 32-bit registers
  Cited l2_size_bytes;
  Cited tma_latency_s;          // issue -> complete_tx of one stage's TMA loads, unloaded L2
                                // (grows with the L2's utilisation: StageTimes::tma_latency)
  // The queueing form of that growth: latency = base x (1 + q rho / (1 - rho)); q = 1 is
  // base / (1 - rho) (M/M/1), q = 1/2 deterministic transfers (M/D/1).
  Cited l2_queueing;
  Cited ldsm_latency_clk;       // ldmatrix / LDS load-to-use
  Cited single_warp_mma;        // tensor rate one MMA warp per sub-partition sustains / full
  Cited quant_instr_per_block;  // SASS instructions per 16-element quantization block
  Cited quant_warp_ipc;         // issue rate one quantizer warp sustains beside the consumers
  Cited gemm_anchor_tflops;     // measured cuBLASLt NVFP4 GEMM alone (calibration anchor)
  // A fused epilogue's real duration / the model's (the H200 measured it for the lockstep tile;
  // 1 on the H200 itself, where it is the quantity being measured). Not applied to the
  // GEMM-only reference: its store-only epilogue is inside the cuBLASLt calibration.
  Cited epilogue_ratio;
  // Our hand-written kernel's efficiency relative to what the model x the cuBLASLt calibration
  // gives a tuned library GEMM (<= 1): scales the fused designs' calibrated figures only.
  Cited hand_kernel_efficiency;
  // The refit (issue 29, fit.h): the clock a tensor-bound GEMM sustains at the board's power
  // limit replaces the old per-GPU calibration factor. ClockHz() = min(max_clock_ghz,
  // sustained_clock_ghz x (power_w / 600)^(1 / clock_power_exponent)) when sustained_clock_ghz
  // is set (SM120 boards), else the mma_tflops-derived clock below (the H200).
  Cited sustained_clock_ghz;   // at 600 W, fitted to the anchors
  Cited max_clock_ghz;         // the clock with no power limit in reach (OMMA.SF loop)
  Cited power_w;               // the power limit of the run
  Cited clock_power_exponent;  // P ~ f^beta along the board's DVFS curve
  Cited kernel_overhead_s;     // launch + ramp + drain a timed kernel pays once
  // bf16 mma.sync m16n8k16 with f32 accumulate, per SM per clock: the rate of issue 30's low-rank
  // branch (options.h), on the same tensor pipes (hardware.cc: the RTX PRO 6000's derived from
  // published cuBLAS BF16 GEMMs; the RTX 5090's [ASSUMED] half rate, full rate its low reading).
  // Not in the Monte Carlo.
  Cited bf16_mma_flop_per_clk_per_sm;

  // The clock every per-clock resource (tensor pipe, issue, shared memory, L2 port) runs at:
  // mma_tflops / (sms * mma_flop_per_clk_per_sm). For the RTX 5090 this is the clock mmapeak's
  // 1474.2 TFLOP/s implies at the datasheet's 4096 FLOP/clk/SM (~2.12 GHz, below the 2.41 GHz
  // boost: mmapeak shows the same 0.88 of spec for every MMA kind, int8 and tf32 included, so
  // the gap is the clock, not the FP4 instruction).
  double ClockHz() const;
  double ClockGhz() const { return ClockHz() * 1e-9; }
  // Seconds of one block-scaled m16n8k64 on one sub-partition's tensor pipe.
  double OmmaSeconds() const;
};

// The H200's measured exposed epilogue of the lockstep 128x256 tile (per tile wave, 16-byte
// epilogue) over the model's epilogue of that tile on the H200: Hardware::epilogue_ratio's
// default (typical) and range.
struct H200EpilogueRatio {
  double model_us = 0;
  double low = 0, typical = 0, high = 0;
};
H200EpilogueRatio MeasuredH200EpilogueRatio();

Hardware Rtx5090();     // 600 W (the power limit of gn-kernels' 1306 TFLOP/s cuBLASLt figure)
Hardware RtxPro6000();  // 600 W
Hardware H200();        // the validation machine: only the terms measurable there are meaningful
// The SM120 hardware for a device's SM count (170 -> RTX 5090, 188 -> RTX PRO 6000); nullptr if
// neither (the bench prints no prediction then).
const Hardware* Sm120HardwareForSmCount(int sm_count);

// ---- The kernel design. ----

enum class Epilogue {
  kSerialDram,        // today: consumers after the main loop, residual loaded from DRAM one
                      // (i, h) fragment row at a time (residual may alias out: no hoisting)
  kSerialL2Prefetch,  // consumers after the main loop; the load warp prefetched the tile's
                      // residual into L2 during the main loop; loads batched before stores
  kPingPong,          // two consumer groups alternate tiles: one's epilogue under the other's
                      // main loop (each group holds a whole tile's accumulators)
  kSmemStaged,        // consumers write t = bf16(gate * o) to smem; the producer warps (idle
                      // once quantization is done) add the residual and store out
  kSkewedGroups,      // the CTA tile's two N halves are two consumer warpgroups that share the
                      // activation (A) ring, each with its own weight (B) ring, run a few
                      // stages apart: one half's epilogue under the other half's MMAs (the lead
                      // is bounded by the A ring; no extra accumulators, no staging tile)
  kStoreOnly,         // GEMM-only reference (cuBLASLt-like): D (bf16) written, nothing read
  kNone,              // nothing (tests: the MMA-bound limit)
};

enum class QuantOrder {
  kRoundRobinRows,    // today: 4-row units claimed from one counter by every quantizer warp
  kFirstWaveRows,     // 1-row units in m-tile order: the first wave's m-tiles finish first
  kFirstWaveKChunks,  // the first wave's rows quantized k-block by k-block, ready flags per
                      // (m-tile, k-block): the first MMA waits for one k-block only
  kNone,              // GEMM-only reference: activations come quantized
};

enum class Schedule {
  kStatic,       // today: persistent, tile = blockIdx + i * gridDim, m-tile-major
  kStreamKTail,  // static full waves + the last partial wave split along k over all SMs
  kPhased,       // static, but SMs in `phases` groups start 1/phases tile apart (half of
                 // them begin with a k-slice of a tail tile): epilogue bursts desynchronized
};

// How the activation scales (act_sf [M, K/16] linear, public layout) reach shared memory.
enum class SfaLoad {
  kTmaBox,            // [BM][BK/16 B] TMA box per stage: legal only for BK >= 256 (16-byte box)
  kTmaBoxPairStages,  // [BM][16 B] box every other stage (two k-blocks' scales, BK = 128)
  kBulkRepacked,      // quantizer also writes a kernel-private [m-tile][k-block][BM][BK/16] copy;
                      // one 1-D bulk copy per stage (extra M*K/16 bytes written)
  kRedundant16B,      // [BM][16 B] box every stage, half of it unused (2x SFA traffic)
  kScaleAtom128x4,    // CUTLASS / CuTe DSL: scales pre-swizzled into 128x4 atoms (512 B per 128
                      // rows x 64 k), TMA'd per stage: any BK multiple of 64, nothing unused
};

struct Design {
  std::string name;
  std::string summary;
  int bm = 128, bn = 128, bk = 256, stages = 2;
  // kSkewedGroups: depth of the shared A ring (codes + its scale slots); `stages` is then the
  // depth of each group's B ring. 0 = one ring of `stages` for everything.
  int a_stages = 0;
  int warps_m = 2, warps_n = 4;  // consumer warp grid of one consumer group (covers bm x bn)
  int consumer_groups = 1;       // 2: ping-pong (two groups, each its own bm x bn tile)
  int load_warps = 1, quant_warps = 3;
  // Registers per thread. setmaxnreg: producer warpgroup regs_producer, consumers regs_consumer
  // (both multiples of 8 in [24, 256]); otherwise every thread gets the launch bound's share.
  bool setmaxnreg = false;
  int regs_consumer = 168, regs_producer = 168;
  Epilogue epilogue = Epilogue::kSerialDram;
  bool frag_prefetch_across_stages = false;  // next stage's first fragments before this stage's
                                             // last MMAs (within a stage nvcc already does it)
  bool sfb_once_per_stage = false;  // weight scales repacked so one LDS per fragment per stage
  QuantOrder quant_order = QuantOrder::kRoundRobinRows;
  int quant_rows_per_unit = 4;
  int quant_depth = 4;  // 16-element blocks in flight per quantizer lane
  // kFirstWaveKChunks: k-elements per ready chunk as a function of K (kernels/device/work_units.h:
  // at most 8 chunks); nullptr = one pipeline stage (bk).
  int (*quant_chunk_elems)(int k) = nullptr;
  Schedule schedule = Schedule::kStatic;
  int phases = 1;
  SfaLoad sfa_load = SfaLoad::kTmaBox;
  // SASS-level instructions per bf16 output pair in the epilogue: 36 = today's source (f32 ->
  // bf16 by integer arithmetic, acc_scale multiply; an estimate, not a SASS count); 14 with
  // cvt.rn.bf16x2.f32 (RNE, NaN -> 0x7FFF as the contract wants) and acc_scale folded into alpha.
  double epilogue_instr_per_pair = 36;
  // kSerialL2Prefetch / kPingPong / kSmemStaged: gate_index and the tile's gate columns TMA'd to
  // shared memory per tile by the load warp; false: read from global by the consumers (one more
  // L2 round trip per tile, no shared memory), as kernels/device/epilogue.cuh does.
  bool gate_in_smem = true;
  // With the gate read from global (gate_in_smem false), kSmemStaged only: the consumers load
  // gate_index at the tile's start, under the main loop, so the epilogue waits one L2 round trip
  // (the gate) instead of two (kernels/device/epilogue.cuh GatedResidual::Early).
  bool gate_index_early = false;
  // Bytes per lane of the epilogue's global accesses from the MMA C layout: 4 (one bf16 pair,
  // StoreTile<..., 1>) or 16 (four pairs after a quad transpose, StoreTile<..., 4>). Each warp access
  // touches 8 rows (8 L1 wavefronts) either way, so 16-byte accesses need a quarter of them.
  int epilogue_access_bytes = 4;
  bool gemm_only = false;  // cuBLASLt-like GEMM: no quantizer, no residual / gate
  int sf_vec = 16;         // elements per scale: 16 NVFP4 (UE4M3), 32 MXFP4 (UE8M0)
  // What-if: an epilogue's own duration x this, before any overlap hides part of it (the cap
  // table's "epi xR" column: R = the H200's measured / modelled epilogue).
  double epilogue_time_scale = 1.0;

  int WarpTileM() const { return bm / warps_m; }
  int WarpTileN() const { return bn / warps_n; }
  int MFrags() const { return WarpTileM() / 16; }
  int NFrags() const { return WarpTileN() / 8; }
  int KSteps() const { return bk / 64; }
  int ConsumerWarps() const { return consumer_groups * warps_m * warps_n; }
  int Warps() const { return load_warps + quant_warps + ConsumerWarps(); }
  int Threads() const { return 32 * Warps(); }
};

// The kernel's built configs, numbers copied from kernels/device/config.cuh, kernels/device/out_proj_kernel.cuh
// and kernels/device/epilogue.cuh (not included from there: current_design_test checks them field by
// field). The skewed 128x256 config (Sm120Config128x256Skewed, tile "128x256"): the registry's
// default until the staged 128x128 (CurrentStagedDesign(), BuiltDesigns()[0]) replaced it.
Design CurrentDesign();
// The same tile with both consumer warpgroups in step (Sm120Config128x256Lockstep, tile
// "128x256_lockstep"): the default before the refit, and what the H200 epilogue measurements of
// 2026-11-30 timed.
Design CurrentLockstepDesign();
// The alternative tile of today's kernel (kernels/device/config.cuh Sm120Config128x128Lockstep).
Design Current128Design();
// The 128x128 tile with the staged epilogue (kernels/device/config.cuh Sm120Config128x128Staged,
// tile "128x128_staged"): the gate read from global by the consumers (gate_in_smem false), its
// gate_index at the tile's start (gate_index_early).
Design CurrentStagedDesign();
// The kernel before the BK = 128 x 4 stages change (128x128x256 x 2 stages): the model's
// calibration against NOTES.md's hand arithmetic, and the ladder's first step.
Design V1Design();
// The v2 candidates compared by the tool (names are the --design values).
std::vector<Design> CandidateDesigns();
// Issue 29: the CuTe DSL GeForce ping-pong and cooperative 128x128 schedules (k 128, 256) with
// our quantizer warps, ready flags and gated epilogue (designs.cc says what fits the registers).
std::vector<Design> CuteScheduleDesigns();
// The cuBLASLt-like GEMM-only reference used to calibrate against the measured anchor.
Design GemmOnlyReference();
// Cumulative design choices, one per step, from V1Design() to the recommended v2.
std::vector<Design> DesignLadder();
// Every design above by name; nullptr if none.
const Design* FindDesign(const std::string& name);

// ---- The problem. ----
struct Problem {
  int64_t m = 4096;
  int64_t n = 5376;
  int64_t k = 7168;
  int64_t g = 9;
  double Flop() const { return 2.0 * static_cast<double>(m) * n * k; }
};

// The MiniMax-H3 problem at m rows.
inline Problem AtM(int64_t m) {
  Problem p;
  p.m = m;
  return p;
}

// ---- What Predict returns. ----

struct Feasibility {
  bool ok = true;
  std::vector<std::string> reasons;  // why not, when !ok
  int64_t smem_bytes = 0;            // dynamic shared memory incl. barriers and alignment pad
  int64_t stage_bytes = 0;
  int launch_regs = 0;           // per thread at launch (65536 / threads, multiple of 8)
  int64_t regs_total = 0;        // after setmaxnreg
  int consumer_regs_needed = 0;  // estimate: accumulators + fragments + overhead
  int producer_regs_needed = 0;
};

// Bytes of one bm x bn tile's operands over the whole K, as the TMA loads them.
struct TileBytes {
  double a_codes = 0, b_codes = 0, sfa = 0, sfb = 0;
  double Total() const { return a_codes + b_codes + sfa + sfb; }
};

// One pipeline stage on one SM (seconds).
struct StageTimes {
  double tensor = 0;      // OMMAs / 4 sub-partitions x OmmaSeconds
  double frag_stall = 0;  // tensor pipe idle at the stage boundary (1 MMA warp per sub-partition)
  double issue = 0;       // instruction issue slots of the busiest sub-partition
  double mma = 0;         // max(tensor + frag_stall, issue)
  double smem = 0;        // ldmatrix + LDS + TMA-write wavefronts at 128 B/clk
  double l2 = 0;          // this stage's L2 bytes (+ its share of other traffic) / per-SM share
  double latency = 0;     // (loaded TMA latency + stage bytes / port) / (stages - 1)
  double l2_utilisation = 0;  // rho: the SMs' L2 demand at this period / the L2 bandwidth
  double tma_latency = 0;     // hw.tma_latency_s (1 + q rho / (1 - rho)), rho capped: loaded
  double period = 0;      // max(mma, smem, l2, latency)
  std::string limiter;
  // Inputs, for the tables and tests.
  double omma_per_stage = 0;
  double issue_slots_per_smsp = 0;
  double lds_per_warp = 0;  // scale LDS instructions of one consumer warp
  double smem_wavefronts = 0;
  double ldmatrix_bytes = 0;
  double l2_bytes = 0;
};

struct DramBytes {
  double attn_out = 0, act_write = 0, act_read = 0, residual = 0, out = 0, weight = 0;
  double gate_index = 0, gate = 0, gemm_a = 0;
  double Total() const {
    return attn_out + act_write + act_read + residual + out + weight + gate_index + gate + gemm_a;
  }
};

struct Prediction {
  Feasibility feasibility;
  // Shape.
  int64_t m_tiles = 0, n_tiles = 0, tiles = 0, k_blocks = 0;
  double tiles_per_sm = 0;     // what the critical SM runs (static: ceil(tiles / SMs))
  double wave_efficiency = 0;  // useful MMA work / (SMs x critical SM's MMA work)
  TileBytes tile_bytes;
  StageTimes stage;
  double bytes_per_kflop = 0;  // L2 operand bytes per 1000 FLOP of the tile
  // Per tile.
  double tile_main = 0;      // k_blocks x stage period
  double epilogue_tile = 0;  // an epilogue's own duration (overlapped or not)
  double epilogue_exposed_tile = 0;
  // kSkewedGroups: A stages the leading group can run ahead, and the time that buys.
  double skew_lead_stages = 0, skew_lead_time = 0;
  // Quantizer.
  double quant_bytes_per_s = 0;   // attn_out read rate the quantizer warps sustain (aggregate)
  double startup_quant = 0;       // first MMA waits for quantized rows
  double startup_fill = 0;        // first stage's TMA round trip
  double quant_keepup_stall = 0;  // quantizer behind the GEMM after the first MMA
  // DRAM / L2 totals.
  DramBytes dram;
  double l2_bytes_total = 0;
  // Whole-kernel components on the critical SM (seconds).
  double t_mma = 0, t_l2 = 0, t_smem = 0, t_latency = 0;  // stages x each stage term
  double t_main = 0;  // stages x period (+ stream-K / phase fix-ups)
  double t_fixup = 0;
  double t_epilogue = 0;  // exposed epilogue, all tiles
  double t_startup = 0;
  double t_waves = 0;    // idle time of the critical SM's last partial wave
  double t_dram = 0;     // DRAM bytes / DRAM bandwidth
  double t_compute = 0;  // startup + main + exposed epilogue
  double t_total = 0;    // max(t_compute, t_dram)
  double tflops = 0;
  std::string limiter;
};

// The combining rule (model.cc, Predict): per stage, period = max(mma, smem, l2, latency)
// (concurrent resources of one asynchronous pipeline); per SM, t_compute = startup +
// tiles x (k_blocks x period + exposed epilogue) + fix-ups; t_total = max(t_compute, t_dram)
// (DRAM traffic is asynchronous to the SM's critical path unless it is the bottleneck).
Prediction Predict(const Hardware& hw, const Design& d, const Problem& p);

// Measured anchor / model for the GEMM-only reference at its best square size (4096..15360, the
// anchor's sweep): folds what the model leaves out (power-limited clock, scheduling) into one
// factor per GPU. Calibrated TFLOP/s = model TFLOP/s x factor.
struct Calibration {
  double model_best_tflops = 0;
  int64_t best_square = 0;
  double anchor_tflops = 0;
  double factor = 1;
};
Calibration CalibrateToGemmAnchor(const Hardware& hw);

// The quantizer on its own (the standalone kernel of kernels/launch/quantize_kernel.cu: one 16-element
// block per thread, 256-thread blocks, full occupancy): predicted seconds and the bench's GB/s
// ((2 + 1/2 + 1/16) bytes per element / time), for the H200 calibration.
struct QuantizeStandalone {
  double seconds = 0;
  double bench_gbps = 0;
  double issue_bound_gbps = 0, dram_bound_gbps = 0;
};
QuantizeStandalone PredictStandaloneQuantize(const Hardware& hw, int64_t m, int64_t k,
                                             double issue_efficiency);

}  // namespace h3::perf_model

#endif  // H3_HARNESS_PERF_MODEL_MODEL_H_
