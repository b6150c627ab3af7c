// The kernel designs the model compares: the current kernel, the one before it, the v2
// candidates and the ladder between them (model.h Design).

#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "harness/perf_model/model.h"
#include "kernels/device/work_units.h"

namespace h3::perf_model {

Design V1Design() {
  // The first kernel's pipeline, 2 stages of BK = 256 (OutProjConfig<2, 101376>, no longer built):
  // kBM = kBN = 128, kBK = 256, kStages = 2, kWarpsM x kWarpsN = 2 x 4 (64 x 32 warp tiles),
  // kLoadWarp + 3 kQuantWarps, 384 threads, __launch_bounds__(384, 1) -> 168 registers (ptxas: 168,
  // 0 spills), kQuantRows = 4; out_proj_kernel.cuh: QuantizerLoop kDepth = 4, m-tile-major static
  // persistent tiles, act-scale TMA box [128][16 B]; epilogue.cuh: StoreTile after the main loop.
  Design d;
  d.name = "v1_128x128_k256_s2";
  d.summary = "128x128x256 x2 stages, 8 warps of 64x32, 168 regs, serial epilogue from DRAM";
  d.bm = 128;
  d.bn = 128;
  d.bk = 256;
  d.stages = 2;
  d.warps_m = 2;
  d.warps_n = 4;
  d.load_warps = 1;
  d.quant_warps = 3;
  d.setmaxnreg = false;
  d.epilogue = Epilogue::kSerialDram;
  d.quant_order = QuantOrder::kRoundRobinRows;
  d.quant_rows_per_unit = 4;
  d.quant_depth = 4;
  d.schedule = Schedule::kStatic;
  d.sfa_load = SfaLoad::kTmaBox;
  d.epilogue_instr_per_pair = 36;
  return d;
}

Design Current128Design() {
  // kernels/device/config.cuh Sm120Config128x128Lockstep = OutProjConfig<4, 128, 128, kSm120SmemBytes>
  // (the tile OutProjTile::k128x128 picks): V1Design() with kBK = 128 x 4 stages, the
  // activation-scale TMA box [128][16 B] loaded every other stage into 3 slots, the first wave's
  // rows quantized k-chunk by k-chunk (work_units.h); ptxas sm_120f: 144 registers, 0 spills.
  Design d = V1Design();
  // Epilogue (kernels/device/epilogue.cuh): residual rows prefetched to L2 by the load warp during the
  // main loop, t = bf16(gate * o) computed first (gate read from global, not staged in shared
  // memory), then the residual read in batches of 32 words per thread before their stores;
  // cvt.rn.bf16x2.f32 packs (~16 instructions per pair, an estimate, not a SASS count).
  d.name = "current_128x128";
  d.summary = "128x128x128 x4 stages, 8 warps of 64x32, k-chunk quant, batched L2 epilogue";
  d.epilogue = Epilogue::kSerialL2Prefetch;
  d.gate_in_smem = false;
  d.epilogue_instr_per_pair = 16;
  d.epilogue_access_bytes = 16;  // StoreTile<..., 4>: 16-byte accesses (aligned gate / residual / out)
  d.bk = 128;
  d.stages = 4;
  d.sfa_load = SfaLoad::kTmaBoxPairStages;
  d.quant_order = QuantOrder::kFirstWaveKChunks;
  d.quant_chunk_elems = kernels::ChunkElems;
  return d;
}

Design CurrentStagedDesign() {
  // kernels/device/config.cuh Sm120Config128x128Staged = OutProjConfig<3, 128, 128,
  // kSm120SmemBytes, 3, StagedSchedule> (tiles.h's 128x128_staged): Current128Design() with 3
  // stages (the 32 KiB t tile takes the fourth's shared memory) and the staged epilogue
  // (kernels/device/staged_epilogue.cuh): the consumers load gate_index at the tile's start,
  // compute t = bf16(gate * o) after the main loop with the gate read from global (one L2 round
  // trip), write t into shared memory, arrive on an mbarrier and go on; the three quantizer
  // warps add the residual and store out under the next tile's main loop.
  Design d = Current128Design();
  d.name = "current_128x128_staged";
  d.summary = "128x128x128 x3 stages, 8 warps of 64x32, t staged in smem, quantizers drain";
  d.stages = 3;
  d.epilogue = Epilogue::kSmemStaged;
  d.gate_in_smem = false;
  d.gate_index_early = true;
  return d;
}

Design CurrentLockstepDesign() {
  // kernels/device/config.cuh Sm120Config128x256Lockstep = OutProjConfig<3, 128, 256, kSm120SmemBytes>
  // (tiles.h's 128x256_lockstep): 3 stages of BK = 128, 2 x 4 warps of 64 x 64,
  // setmaxnreg 56 / 224 (ptxas sm_120f: 0 spills), the first wave's rows quantized k-chunk by
  // k-chunk (work_units.h: at most 8 chunks, not one per stage). Epilogue as in
  // Current128Design.
  Design d = Current128Design();
  d.name = "current_lockstep";
  d.summary = "128x256x128 x3 stages, 8 warps of 64x64, setmaxnreg, k-chunk quant, L2 epilogue";
  d.bn = 256;
  d.stages = 3;
  d.setmaxnreg = true;
  d.regs_consumer = 224;
  d.regs_producer = 56;
  return d;
}

Design CurrentDesign() {
  // kernels/device/config.cuh Sm120Config128x256Skewed = OutProjConfig<3, 128, 256, kSm120SmemBytes, 4,
  // SkewedSchedule> (tiles.h's 128x256): CurrentLockstepDesign() with skewed groups, the two
  // warpgroups owning the tile's N halves (2 x 2 warps of 64 x 64 each) on a shared 4-stage A
  // ring and a 3-stage B ring each; the trailer starts each tile 3 stages behind
  // (out_proj_kernel.cuh SkewGate).
  Design d = CurrentLockstepDesign();
  d.name = "current";
  d.summary = "128x256x128, N halves skewed on a 4-deep A ring, 3-deep B rings, L2 epilogue";
  d.epilogue = Epilogue::kSkewedGroups;
  d.a_stages = 4;
  return d;
}

namespace {

// The v2 building blocks.
Design V2Base(const std::string& name, int bm, int bn, int stages, int warps_m, int warps_n) {
  Design d = V1Design();
  d.name = name;
  d.bm = bm;
  d.bn = bn;
  d.bk = 128;
  d.stages = stages;
  d.warps_m = warps_m;
  d.warps_n = warps_n;
  d.sfa_load = SfaLoad::kTmaBoxPairStages;
  if (d.WarpTileM() * d.WarpTileN() > 64 * 32) {
    // 64x64 warp tiles: 128 accumulators/thread; the producer warpgroup gives registers away.
    d.setmaxnreg = true;
    d.regs_consumer = 224;
    d.regs_producer = 56;
    d.quant_depth = 2;
  }
  return d;
}
void L2Prefetch(Design& d) {
  d.epilogue = Epilogue::kSerialL2Prefetch;
  d.epilogue_instr_per_pair = 14;
  d.epilogue_access_bytes = 16;
}
void FirstWaveFirst(Design& d) {
  d.quant_order = QuantOrder::kFirstWaveKChunks;
  d.quant_rows_per_unit = 4;
}
void Phased(Design& d, int phases) {
  d.schedule = Schedule::kPhased;
  d.phases = phases;
}
Design WithSummary(Design d, const std::string& summary) {
  d.summary = summary;
  return d;
}

}  // namespace

std::vector<Design> CandidateDesigns() {
  std::vector<Design> out;
  // (a) 128x128, BK = 128, 4 stages: the same tile, a deeper pipeline.
  {
    Design d = V2Base("v2_128x128_k128_s4", 128, 128, 4, 2, 4);
    out.push_back(WithSummary(d, "128x128x128 x4, 64x32 warps, serial epilogue from DRAM"));
    L2Prefetch(d);
    FirstWaveFirst(d);
    d.name = "v2_128x128_k128_s4_l2pre";
    out.push_back(WithSummary(d, "+ residual prefetched to L2, cvt epilogue, k-chunk quant"));
    Design pp = V2Base("v2_128x128_k128_s4_pingpong", 128, 128, 4, 2, 2);
    pp.consumer_groups = 2;
    pp.epilogue = Epilogue::kPingPong;
    pp.epilogue_instr_per_pair = 14;
    FirstWaveFirst(pp);
    out.push_back(WithSummary(pp, "overlapped: 2 groups x (2x2 warps of 64x64) ping-pong"));
    pp.name = "v2_128x128_k128_s4_pingpong_xpre";
    pp.frag_prefetch_across_stages = true;
    out.push_back(WithSummary(pp, "ping-pong + next stage's fragments before the last MMAs"));
    Design st = V2Base("v2_128x128_k128_s3_staged", 128, 128, 3, 2, 4);
    st.epilogue = Epilogue::kSmemStaged;
    st.epilogue_instr_per_pair = 14;
    FirstWaveFirst(st);
    out.push_back(WithSummary(st, "overlapped: t tile staged in smem, producers add residual"));
  }
  // (b) 128x256, BK = 128, 3 stages, 2x4 warps of 64x64, setmaxnreg 56/224.
  {
    Design d = V2Base("v2_128x256_k128_s3", 128, 256, 3, 2, 4);
    out.push_back(WithSummary(d, "128x256x128 x3, 64x64 warps, setmaxnreg 56/224, serial DRAM"));
    L2Prefetch(d);
    FirstWaveFirst(d);
    d.name = "v2_128x256_k128_s3_l2pre";
    out.push_back(WithSummary(d, "+ residual prefetched to L2, cvt epilogue, k-chunk quant"));
    Design ph = d;
    Phased(ph, 2);
    ph.name = "v2_128x256_k128_s3_l2pre_phased2";
    out.push_back(WithSummary(ph, "+ SMs in 2 phase groups (epilogue bursts desynchronized)"));
    Phased(ph, 8);
    ph.name = "v2_128x256_k128_s3_l2pre_phased8";
    out.push_back(WithSummary(ph, "+ SMs in 8 phase groups, 1/8 tile apart"));
    Phased(ph, 56);
    ph.name = "v2_128x256_k128_s3_l2pre_phasedk";
    out.push_back(WithSummary(ph, "+ phase offsets at k-block granularity (56 groups)"));
    Design sk = d;
    sk.schedule = Schedule::kStreamKTail;
    sk.name = "v2_128x256_k128_s3_l2pre_streamk";
    out.push_back(WithSummary(sk, "+ last partial wave split along k (stream-K tail)"));
    Design st = d;
    st.epilogue = Epilogue::kSmemStaged;
    st.name = "v2_128x256_k128_s3_staged";
    out.push_back(WithSummary(st, "overlapped: t tile (64 KiB) staged in smem"));
    // Skewed groups (`current`: the N halves as two warpgroups of 2x2 warps, sharing a 4-deep
    // A ring, 4 x 8 KiB + 3 scale slots of 2 KiB, each with a 3-deep B ring of 3 x 9 KiB: 93
    // KiB) with the phase offsets too.
    Design skp = CurrentDesign();
    Phased(skp, 56);
    skp.name = "v2_128x256_k128_s3_l2pre_skewed_phasedk";
    out.push_back(WithSummary(skp, "skewed groups + phase offsets at k-block granularity"));
    Design pp = V2Base("v2_128x256_k128_s3_pingpong", 128, 256, 3, 2, 4);
    pp.consumer_groups = 2;
    pp.epilogue = Epilogue::kPingPong;
    FirstWaveFirst(pp);
    out.push_back(WithSummary(pp, "overlapped: 2 groups each holding a 128x256 tile"));
  }
  // (c) 256x128, BK = 128, 3 stages, 4x2 warps of 64x64.
  {
    Design d = V2Base("v2_256x128_k128_s3", 256, 128, 3, 4, 2);
    out.push_back(WithSummary(d, "256x128x128 x3, 64x64 warps, setmaxnreg 56/224, serial DRAM"));
    L2Prefetch(d);
    FirstWaveFirst(d);
    d.name = "v2_256x128_k128_s3_l2pre";
    out.push_back(WithSummary(d, "+ residual prefetched to L2, cvt epilogue, k-chunk quant"));
    Design ph = d;
    Phased(ph, 2);
    ph.name = "v2_256x128_k128_s3_l2pre_phased2";
    out.push_back(WithSummary(ph, "+ SMs in 2 phase groups"));
    Design st = d;
    st.epilogue = Epilogue::kSmemStaged;
    st.name = "v2_256x128_k128_s3_staged";
    out.push_back(WithSummary(st, "overlapped: t tile (64 KiB) staged in smem"));
  }
  return out;
}

std::vector<Design> CuteScheduleDesigns() {
  // Issue 29: the CuTe DSL GeForce schedules (NVIDIA/cutlass PR #3272: 8 MMA warps in two warp
  // groups, registers 232 / 40, 128x128 tiles, k 128 or 256) carrying our fused work: the
  // producer warpgroup is the load warp + 3 quantizer warps, so at 232 / 40 the quantizer gets
  // 40 registers (launch allocation 384 x 168 = 64,512 = 256 x 232 + 128 x 40): depth 2 (24 + 2
  // x 8, feasibility.cc's estimate; depth 4 needs 56). Ready flags and k-chunk quantization as
  // today (kernels/device/work_units.h), act scales by the pair-stage box (k 128) or the box (k 256),
  // our gated epilogue (gate from global, 16-byte accesses, ~16 instructions per pair).
  std::vector<Design> out;
  for (int bk : {128, 256}) {
    Design d = Current128Design();
    d.bk = bk;
    d.stages = bk == 128 ? 4 : 2;  // what fits 99 KiB beside the pair-stage scale slots
    d.sfa_load = bk == 128 ? SfaLoad::kTmaBoxPairStages : SfaLoad::kTmaBox;
    d.setmaxnreg = true;
    d.regs_consumer = 232;
    d.regs_producer = 40;
    d.quant_depth = 2;
    Design pp = d;
    pp.name = absl::StrFormat("cute_pingpong_128x128_k%d_fused", bk);
    pp.summary = "2 warpgroups x (2x2 warps of 64x64) alternate tiles, gated epilogue overlapped";
    pp.warps_m = 2;
    pp.warps_n = 2;
    pp.consumer_groups = 2;
    pp.epilogue = Epilogue::kPingPong;
    out.push_back(pp);
    Design co = d;
    co.name = absl::StrFormat("cute_coop_128x128_k%d_fused", bk);
    co.summary = "8 MMA warps (4x2 of 32x64) on one tile, gated epilogue after the main loop";
    co.warps_m = 4;
    co.warps_n = 2;
    out.push_back(co);
  }
  return out;
}

Design GemmOnlyReference() {
  Design d = V2Base("ref_gemm_128x256_k128_s3", 128, 256, 3, 2, 4);
  d.summary = "cuBLASLt-like GEMM alone: 128x256x128 x3, cooperative, D stored, static";
  d.gemm_only = true;
  d.epilogue = Epilogue::kStoreOnly;
  d.quant_order = QuantOrder::kNone;
  d.quant_warps = 3;  // idle warps keep the warpgroup shape of setmaxnreg
  d.epilogue_instr_per_pair = 4;
  return d;
}

std::vector<Design> DesignLadder() {
  std::vector<Design> out;
  Design d = V1Design();
  d.name = "L0_v1";
  out.push_back(d);
  d = V2Base("L1_bk128_s4", 128, 128, 4, 2, 4);
  d.summary = "BK 256 -> 128 x 4 stages (pair-stage act-scale box)";
  out.push_back(d);
  d = V2Base("L2_tile128x256_s3", 128, 256, 3, 2, 4);
  d.summary = "tile 128x256, 64x64 warp tiles, setmaxnreg 56/224, quant depth 2";
  out.push_back(d);
  d.name = "L3_cvt_epilogue";
  d.summary = "epilogue: cvt.rn.bf16x2.f32 packs, acc_scale folded (36 -> 14 instr/pair)";
  d.epilogue_instr_per_pair = 14;
  out.push_back(d);
  d.name = "L4_residual_l2_prefetch";
  d.summary =
      "residual prefetched to L2 during the main loop, loads batched, gate in smem, 16-byte "
      "accesses";
  d.epilogue = Epilogue::kSerialL2Prefetch;
  d.epilogue_access_bytes = 16;
  out.push_back(d);
  d.name = "L5_kchunk_quant_order";
  d.summary = "first wave's rows quantized k-block by k-block (flags per m-tile x k-block)";
  FirstWaveFirst(d);
  out.push_back(d);
  d.name = "L6_skewed_groups";
  d.summary = "N halves as 2 warpgroups skewed on a 4-deep A ring: epilogue under the MMAs";
  d.epilogue = Epilogue::kSkewedGroups;
  d.a_stages = 4;
  out.push_back(d);
  d.name = "L7_phased_kblock";
  d.summary = "phase offsets at k-block granularity (56 groups): no wave quantization left";
  Phased(d, 56);
  out.push_back(d);
  d.name = "L8_xstage_frag_prefetch";
  d.summary = "next stage's first fragments loaded before this stage's last MMAs";
  d.frag_prefetch_across_stages = true;
  out.push_back(d);
  d.frag_prefetch_across_stages = false;
  d.name = "L9_sfb_once_per_stage";
  d.summary = "weight scales repacked: one LDS per fragment per stage";
  d.sfb_once_per_stage = true;
  out.push_back(d);
  return out;
}

const Design* FindDesign(const std::string& name) {
  static const std::vector<Design>* const all = [] {
    auto* v = new std::vector<Design>();
    v->push_back(CurrentDesign());
    v->push_back(CurrentLockstepDesign());
    v->push_back(Current128Design());
    v->push_back(CurrentStagedDesign());
    v->push_back(V1Design());
    for (const Design& d : CandidateDesigns()) v->push_back(d);
    for (const Design& d : CuteScheduleDesigns()) v->push_back(d);
    v->push_back(GemmOnlyReference());
    for (const Design& d : DesignLadder()) v->push_back(d);
    Design big = V1Design();
    big.name = "x_256x256_k256_s2";
    big.summary = "over budget on purpose: 256x256x256 x2 stages";
    big.bm = big.bn = 256;
    big.warps_m = 4;
    big.warps_n = 2;
    v->push_back(big);
    return v;
  }();
  for (const Design& d : *all) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

}  // namespace h3::perf_model
