// Whether a design fits the hardware and the problem: the layout rules of the TMA and the MMA
// fragments, shared memory and registers (model.h Feasibility).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_format.h"
#include "harness/perf_model/model.h"
#include "harness/perf_model/model_internal.h"

namespace h3::perf_model::internal {
namespace {

constexpr double kSmemAlignPad = 1024 - 16;  // config.cuh: kSmemAlign - 16
// Quantizer registers (estimate): pointers, loop state, qp, the 16 converted values, and the
// two uint4 loads of each block in flight.
// Calibrated to ptxas: the kernel's depth-4 quantizer loop compiles into the producers' 56
// registers (setmaxnreg 56 / 224, sm_120f) with 0 spills, so base + 4 x 8 <= 56.
constexpr int kQuantRegsBase = 24;
constexpr int kQuantRegsPerDepth = 8;
// Consumer registers beyond accumulators and fragments: addresses, indices, barriers, loop.
constexpr int kConsumerRegsOverhead = 24;
// nvcc interleaves the next k-step's fragment loads into the current k-step's MMAs (SASS):
// ~1.5 fragment sets live at once; a cross-stage prefetch makes it ~2.
constexpr double kFragSetsLive = 1.5;
constexpr double kFragSetsLiveCrossStage = 2.0;

// Activation-scale bytes the ring's stages occupy in shared memory.
double SfaSmemBytes(const Design& d) {
  switch (d.sfa_load) {
    case SfaLoad::kTmaBox:
    case SfaLoad::kBulkRepacked:
    case SfaLoad::kScaleAtom128x4:
      return AStages(d) * d.bm * (d.bk / static_cast<double>(d.sf_vec));
    case SfaLoad::kRedundant16B:
      return AStages(d) * d.bm * 16.0;
    case SfaLoad::kTmaBoxPairStages:
      // floor(S/2)+1 slots of two k-blocks each: stage s+S (pair (s+S)/2) is issued when stage s
      // is released, but pair slot (s+S)/2 - slots is free only after its odd stage.
      return (AStages(d) / 2 + 1) * d.bm * 16.0;
  }
  return 0;
}

}  // namespace

Feasibility CheckFeasibility(const Hardware& hw, const Design& d, const Problem& p) {
  Feasibility f;
  auto fail = [&f](const std::string& why) {
    f.ok = false;
    f.reasons.push_back(why);
  };
  if (d.bm % (16 * d.warps_m) != 0 || d.bn % (8 * d.warps_n) != 0) fail("warp grid does not tile");
  if (d.NFrags() % 2 != 0) fail("ldmatrix.x4 loads B fragments in pairs: warp tile n % 16");
  if (d.bk % 64 != 0) fail("BK must be whole m16n8k64 k-steps");
  if (d.bk / 2 != 32 && d.bk / 2 != 64 && d.bk / 2 != 128) {
    fail("code rows of BK/2 bytes must be a TMA swizzle span (32/64/128 B): BK in {64,128,256}");
  }
  if (d.bm > 256 || d.bn > 256) fail("TMA box rows <= 256");
  if (p.n % d.bn != 0) fail(absl::StrFormat("N=%d not a multiple of BN=%d", p.n, d.bn));
  if (p.k % d.bk != 0) fail(absl::StrFormat("K=%d not a multiple of BK=%d", p.k, d.bk));
  if (d.stages < 2) fail("at least 2 stages");
  const double sfa_row = d.bk / static_cast<double>(d.sf_vec);  // act_sf bytes per row, stage
  switch (d.sfa_load) {
    case SfaLoad::kTmaBox:
      if (std::fmod(sfa_row, 16.0) != 0) {
        fail(absl::StrFormat(
            "act-scale TMA box [%d][%g B]: inner box must be a multiple of 16 B (needs BK>=256)",
            d.bm, sfa_row));
      }
      break;
    case SfaLoad::kTmaBoxPairStages:
      if (sfa_row * 2 != 16) fail("pair-stage act-scale box needs BK = 128 (2 x 8 B = 16 B)");
      break;
    case SfaLoad::kBulkRepacked:
      if (std::fmod(d.bm * sfa_row, 16.0) != 0) fail("bulk copy size not a multiple of 16 B");
      break;
    case SfaLoad::kRedundant16B:
      if (sfa_row > 16) fail("redundant 16-byte act-scale box only for BK <= 256");
      break;
    case SfaLoad::kScaleAtom128x4:  // 512-byte atoms of 128 rows x 4 scales
      if (d.bm % 128 != 0 || d.bk % (4 * d.sf_vec) != 0) fail("scale atoms: BM % 128, BK % 4 sf");
      break;
  }
  if (d.Threads() > 1024) fail("more than 1024 threads");

  // Shared memory.
  f.stage_bytes = static_cast<int64_t>(StageBytes(d));
  double smem = AStages(d) * d.bm * d.bk / 2.0 + d.stages * (d.bn * d.bk / 2.0 + SfbStageBytes(d)) +
                SfaSmemBytes(d);
  // full/empty mbarriers: one ring, or the A ring and one B ring per group.
  smem += 2.0 * 8 * (Skewed(d) ? AStages(d) + 2 * d.stages : d.stages);
  if (d.sfa_load == SfaLoad::kTmaBoxPairStages) smem += 2.0 * (AStages(d) / 2 + 1) * 8;
  const bool stages_gate =
      d.gate_in_smem && (d.epilogue == Epilogue::kSerialL2Prefetch ||
                         d.epilogue == Epilogue::kPingPong || d.epilogue == Epilogue::kSmemStaged);
  if (stages_gate) {
    // gate_index[m-tile] and gate[:, n-tile] TMA'd per tile by the load warp (per group).
    smem += d.consumer_groups * (d.bm * 4.0 + p.g * d.bn * 2.0 + 16);
  }
  if (d.epilogue == Epilogue::kSmemStaged) smem += d.consumer_groups * d.bm * d.bn * 2.0;
  smem += kSmemAlignPad;
  f.smem_bytes = static_cast<int64_t>(smem);
  if (smem > hw.smem_per_block.value) {
    fail(absl::StrFormat("shared memory %d B > %d B per block", f.smem_bytes,
                         static_cast<int64_t>(hw.smem_per_block.value)));
  }

  // Registers.
  const int threads = d.Threads();
  f.launch_regs = std::min(255, static_cast<int>(hw.regs_per_sm.value / threads) / 8 * 8);
  const int acc = d.WarpTileM() * d.WarpTileN() / 32;
  const int sfa_regs = d.MFrags() * std::max(1, d.KSteps());  // one word per k-step per frag
  const int sfb_regs = d.NFrags() * (d.sfb_once_per_stage ? d.KSteps() : 1);
  const int frag = d.MFrags() * 4 + d.NFrags() * 2 + sfa_regs + sfb_regs;
  const double live = d.frag_prefetch_across_stages ? kFragSetsLiveCrossStage : kFragSetsLive;
  int need = acc + static_cast<int>(std::ceil(live * frag)) + kConsumerRegsOverhead;
  if (d.epilogue == Epilogue::kSerialL2Prefetch || d.epilogue == Epilogue::kPingPong) {
    // Residual words held before the stores (fragments are dead by then): never the binding
    // term below 32 words.
    need = std::max(need, acc + 32 + kConsumerRegsOverhead);
  }
  f.consumer_regs_needed = need;
  f.producer_regs_needed = d.gemm_only ? 24 : kQuantRegsBase + kQuantRegsPerDepth * d.quant_depth;
  int rc = f.launch_regs, rp = f.launch_regs;
  if (d.setmaxnreg) {
    const int producer_warps = d.load_warps + d.quant_warps;
    // One producer warpgroup; or, as the CuTe DSL GeForce GEMMs do (1 DMA warp beside 8 MMA
    // warps, registers 40 / 232), a lone DMA warp when nothing else produces.
    const bool lone_dma_warp = d.gemm_only && producer_warps == 1;
    if ((producer_warps != 4 && !lone_dma_warp) || d.ConsumerWarps() % 4 != 0) {
      fail("setmaxnreg acts per warpgroup: producers must be one warpgroup of 4 warps");
    }
    rc = d.regs_consumer;
    rp = d.regs_producer;
    for (int r : {rc, rp}) {
      if (r % 8 != 0 || r < 24 || r > 256)
        fail(absl::StrFormat("setmaxnreg %d not in 24..256/8", r));
    }
    f.regs_total = 32LL * producer_warps * rp + 32LL * d.ConsumerWarps() * rc;
    // CUTLASS keeps the sum within the launch allocation (e.g. 40 + 232 over 384 threads at 168).
    if (f.regs_total > static_cast<int64_t>(threads) * f.launch_regs) {
      fail(absl::StrFormat("setmaxnreg %d/%d: %d registers > launch allocation %d x %d", rp, rc,
                           f.regs_total, threads, f.launch_regs));
    }
  } else {
    f.regs_total = static_cast<int64_t>(threads) * f.launch_regs;
  }
  if (f.regs_total > hw.regs_per_sm.value) fail("more registers than the SM has");
  if (need > rc) {
    fail(absl::StrFormat("consumer needs ~%d registers/thread (estimate), has %d", need, rc));
  }
  if (f.producer_regs_needed > rp) {
    fail(absl::StrFormat("quantizer (depth %d) needs ~%d registers/thread (estimate), has %d",
                         d.quant_depth, f.producer_regs_needed, rp));
  }
  if (d.epilogue == Epilogue::kPingPong && d.consumer_groups != 2) {
    fail("ping-pong needs two consumer groups");
  }
  if (Skewed(d) && (d.consumer_groups != 1 || d.warps_n % 2 != 0 || d.bn % 256 != 0)) {
    fail("skewed groups split one tile's N into halves of whole 128-row weight-scale groups");
  }
  if (d.a_stages > 0 && d.a_stages < d.stages) fail("the A ring is at least as deep as B's");
  return f;
}

}  // namespace h3::perf_model::internal
