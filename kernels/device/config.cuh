#ifndef H3_KERNELS_CONFIG_CUH_
#define H3_KERNELS_CONFIG_CUH_

// The configuration of the fused out-projection kernel: tile shape, pipeline depth, warp roles,
// the sizes of its shared-memory rings and the quantizer's work units. Everything else derives
// from here; rings.cuh lays the shared memory out as a struct of these sizes. The configs the
// product runs are listed in tiles.h; the Hopper-only fast build derives its own
// (sm90/config.cuh).

#include <cstdint>

#include "kernels/device/target_facts.h"
#include "kernels/device/work_units.h"

namespace h3::kernels {

// The product's shared-memory budget per block (target_facts.h: 99 KiB on SM12x).
inline constexpr int kSm120SmemBytes = kSm120Facts.smem_bytes;

// How the two consumer warpgroups share the rings and the tensor pipes, as a type (as CUTLASS's
// cooperative and ping-pong kernel schedules are): OutProjConfig derives its rings from it, and
// the kernel asks it the fact each branch needs, never which schedule it is.
//   kGroups        consumer groups; each owns an equal share of the tile's N columns
//   kOwnBRings     each group waits on and releases a weight ring of its own (false: the weights
//                  travel in the A ring's stages, which every consumer thread waits on and
//                  releases)
//   kSkewGate      the trailing group starts each tile only when the leader is SkewStages stages
//                  into it (out_proj_kernel.cuh SkewGate)
//   SkewStages(a)  that lead, for an A ring of `a` stages
//   kStagedEpilogue  the consumers leave t = bf16(gate (x) o) in a shared-memory tile and the
//                  quantizer warps finish it (residual add, out store) under the next tile's
//                  MMAs (staged_epilogue.cuh), for an epilogue policy that has the staged hooks

// Lockstep: one ring carries A and B; both warpgroups consume every stage (warpgroup w = warp
// row w) and finish their tiles together, so the tensor pipes idle during the epilogue.
struct LockstepSchedule {
  static constexpr int kGroups = 1;
  static constexpr bool kOwnBRings = false;
  static constexpr bool kSkewGate = false;
  static constexpr bool kStagedEpilogue = false;
  static constexpr int SkewStages(int /*a_stages*/) { return 0; }
};

// Skewed: warpgroup g owns the tile's N half g (2 x 2 warps of 64 x 64), reads A from the shared
// ring and B from a ring of its own, and the trailer runs SkewStages stages behind the leader at
// every tile start, so each group's epilogue runs under the other group's MMAs (perf_model: the
// skewed groups' epilogue). The lead is bounded by the A ring: the leader can use only stages
// the trailer has not released, so the lead is the A ring's depth less one at most (deadlock-
// free: the trailer waits for a lead the leader can always reach), and it is that much.
struct SkewedSchedule {
  static constexpr int kGroups = 2;  // the leader (group 0) and the trailer
  static constexpr bool kOwnBRings = true;
  static constexpr bool kSkewGate = true;
  static constexpr bool kStagedEpilogue = false;
  static constexpr int SkewStages(int a_stages) { return a_stages - 1; }
};

// Staged: lockstep on one ring, and the epilogue split at t: each consumer thread writes its t
// words into one 128 x kBN bf16 tile in shared memory and goes on to the next tile's stages; the
// three quantizer warps, idle once the activation is quantized, add the residual and store out
// (perf_model: Epilogue::kSmemStaged). One t buffer: the consumers wait for the previous tile's
// drain only when it has not finished after a whole main loop.
struct StagedSchedule {
  static constexpr int kGroups = 1;
  static constexpr bool kOwnBRings = false;
  static constexpr bool kSkewGate = false;
  static constexpr bool kStagedEpilogue = true;
  static constexpr int SkewStages(int /*a_stages*/) { return 0; }
};

// kStages_: depth of the weight ring(s); kAStages_: depth of the activation ring (the same ring
// unless Schedule_ gives each group a weight ring of its own); Schedule_: LockstepSchedule or
// SkewedSchedule or StagedSchedule.
template <int kStages_, int kBK_, int kBN_, int kSmemBudget_, int kAStages_ = kStages_,
          class Schedule_ = LockstepSchedule>
struct OutProjConfig {
  static constexpr int kSmemBudget = kSmemBudget_;  // bytes of dynamic shared memory per block
  // ---- CTA tile: kBM x kBN outputs, kBK k-elements per pipeline stage. ----
  static constexpr int kBM = 128;
  static constexpr int kBN = kBN_;
  static constexpr int kBK = kBK_;
  static constexpr int kStages = kStages_;
  static constexpr int kMmaK = 64;                      // k of one mma.m16n8k64
  static constexpr int kKSteps = kBK / kMmaK;           // MMA k-steps per stage
  static constexpr int kSfVec = 16;                     // elements per block scale
  static constexpr int kScalesPerMma = kMmaK / kSfVec;  // 4 = one 32-bit scale word

  // ---- Warp roles. ----
  // Producer warpgroup: warp 0 = TMA/bulk loads, warps 1..3 = activation quantizers.
  static constexpr int kProducerWarps = 4;
  static constexpr int kLoadWarp = 0;
  static constexpr int kQuantWarps = 3;
  // Consumers: 2 warpgroups = 8 warps in a 2 (M) x 4 (N) grid, each a 64 x (kBN / 4) warp tile.
  static constexpr int kWarpsM = 2;
  static constexpr int kWarpsN = 4;
  // Consumer groups (the schedule above): an A ring of kAStages stages; with kOwnBRings, a
  // weight ring of kStages stages of kGroupBN rows per group.
  using Schedule = Schedule_;
  static constexpr int kGroups = Schedule::kGroups;
  static constexpr int kGroupBN = kBN / kGroups;  // weight rows per ring stage
  static constexpr int kAStages = kAStages_;
  static constexpr int kSkewStages = Schedule::SkewStages(kAStages);
  static constexpr int kConsumerWarps = kWarpsM * kWarpsN;
  static constexpr int kWarps = kProducerWarps + kConsumerWarps;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kWarpTileM = kBM / kWarpsM;  // 64
  static constexpr int kWarpTileN = kBN / kWarpsN;  // 32 or 64
  static constexpr int kMFrags = kWarpTileM / 16;   // m16 fragments per warp
  static constexpr int kNFrags = kWarpTileN / 8;    // n8 fragments per warp
  // Registers: __launch_bounds__(384, 1) gives every thread 168. A 64 x 64 warp tile holds 128
  // f32 accumulators, so the producer warpgroup gives registers to the consumers with setmaxnreg
  // (PTX ISA: setmaxnreg, sm_90a / sm_120f): 128 x 56 + 256 x 224 = 64512 <= 65536 per SM.
  static constexpr bool kSetMaxNReg = kWarpTileN == 64;
  static constexpr int kProducerRegs = 56;
  static constexpr int kConsumerRegs = 224;

  // ---- Shared memory, per stage (bytes). ----
  // Code tiles: one row of kBK e2m1 codes is kRowBytes; TMA writes it with the swizzle mode of
  // the same width (CU_TENSOR_MAP_SWIZZLE_64B / _128B), which fragment_math.h's SwizzleOffset
  // undoes.
  static constexpr int kRowBytes = kBK / 2;                     // e2m1: 2 per byte; 64 or 128
  static constexpr int kATileBytes = kBM * kRowBytes;           // [kBM][kRowBytes], swizzled
  static constexpr int kBTileBytes = kBN * kRowBytes;           // [kBN][kRowBytes], swizzled
  static constexpr int kBRingTileBytes = kGroupBN * kRowBytes;  // one ring's [kGroupBN][kRowBytes]
  // Activation scales: kSfaRowBytes per row and stage. A TMA tensor box's inner extent must be
  // a multiple of 16 bytes, so one box [kBM][16 B] carries the scales of kSfaStagesPerBox
  // consecutive stages (at kBK = 128: two), loaded with the first of them into one of kSfaSlots
  // slots. The later stages of a box read the slot their first stage filled. A slot is refilled
  // kSfaSlots boxes later; the load warp then waits for the A ring stage kAStages k-steps back,
  // which every consumer releases only after it finished every older k-step: with
  // kSfaSlots >= kAStages / kSfaStagesPerBox + 1 the box being replaced is no longer read.
  static constexpr int kSfaRowBytes = kBK / kSfVec;  // 8 or 16
  static constexpr int kSfaBoxBytes = 16;
  static constexpr int kSfaStagesPerBox = kSfaBoxBytes / kSfaRowBytes;
  static constexpr int kSfaSlots =
      kSfaStagesPerBox == 1 ? kAStages : kAStages / kSfaStagesPerBox + 1;
  static constexpr int kSfaSlotBytes = kBM * kSfaBoxBytes;  // [kBM][16 B] linear
  // Weight scales in the 128x4 layout: a 128-row x 4-column group is 512 contiguous bytes and
  // one stage covers kBK/64 consecutive column groups of each of the tile's kSfbGroups 128-row
  // groups: one bulk copy per group (groups are K/64 * 512 bytes apart).
  static constexpr int kSfbGroups = kBN / 128;
  static constexpr int kSfbGroupBytes = (kBK / 64) * 512;
  static constexpr int kSfbTileBytes = kSfbGroups * kSfbGroupBytes;
  static constexpr int kSfbRingTileBytes = kSfbTileBytes / kGroups;  // one ring's groups
  // Bytes a stage's full barrier expects: codes and weight scales always (of the 128-row weight
  // groups that exist: N may end in half a tile, whose missing B rows TMA fills with zeros and
  // counts), the activation-scale box only with the first stage of a box.
  // Weight rings of their own: an A stage's bytes and a B ring stage's bytes separately.
  static constexpr int kStageBytes = kATileBytes + kBTileBytes + kSfbTileBytes;
  static constexpr int kAStageBytes = Schedule::kOwnBRings ? kATileBytes : kStageBytes;
  static constexpr int kBStageBytes = kBRingTileBytes + kSfbRingTileBytes;
  static constexpr int kSfaBoxTxBytes = kSfaSlotBytes;

  // ---- Quantizer work units (work_units.h): row groups of kQuantRows rows, claimed dynamically.
  static constexpr int kQuantRows = 4;

  // ---- Supported problem granularity. ----
  static constexpr int kNMultiple = 128;                     // half an n-tile at most is missing
  static constexpr int kKMultiple = kBK * kSfaStagesPerBox;  // whole boxes per tile

  static_assert(kBK % kMmaK == 0, "stage k must be whole MMA k-steps");
  static_assert(kRowBytes == 64 || kRowBytes == 128, "a TMA swizzle mode of the row's width");
  static_assert(kSfaBoxBytes % kSfaRowBytes == 0, "a stage's scales never straddle two boxes");
  // The load warp refills a slot at the first stage s of a box, after the A ring freed stage
  // s - kAStages (every stage up to it is consumed); the slot's previous box was last read at
  // stage s - kSfaSlots * kSfaStagesPerBox + kSfaStagesPerBox - 1, which must be one of those.
  static_assert(kSfaSlots * kSfaStagesPerBox >= kAStages + kSfaStagesPerBox - 1,
                "a refilled activation-scale slot is no longer read");
  static_assert(Schedule::kOwnBRings ? kAStages >= kStages : kAStages == kStages,
                "one ring, or an A ring at least as deep as the B rings");
  static_assert(kGroups == 1 || (Schedule::kOwnBRings && kWarpsN % kGroups == 0 &&
                                 kGroupBN % 128 == 0 && kConsumerWarps / kGroups == 4),
                "groups: each a warpgroup of whole warp columns and weight-scale groups, with "
                "a weight ring of its own");
  static_assert(Schedule::kSkewGate ? kGroups == 2 : kSkewStages == 0,
                "a skew gate between a leader and a trailer; no lead without one");
  static_assert(!Schedule::kSkewGate || (kSkewStages >= 1 && kSkewStages < kAStages),
                "the trailer waits for a lead the A ring lets the leader reach");
  // The gate of tile t is mbarrier t % 2, phase t / 2: the leader completes the phase of tile
  // t + 2 at least one stage into tile t + 2, i.e. 2 * (kKMultiple / kBK) + 1 stages ahead of a
  // trailer still before tile t: more than the A ring lets it run ahead (kAStages).
  static_assert(!Schedule::kSkewGate || 2 * kSfaStagesPerBox + 1 > kAStages,
                "a skew gate's phase cannot be lapped (K is a multiple of kKMultiple)");
  static_assert(kBRingTileBytes % 1024 == 0, "swizzle atoms stay aligned");
  static_assert(kBN % 128 == 0, "weight scale tile = whole 128-row swizzle groups");
  static_assert(kSfbTileBytes == kBN * kBK / kSfVec, "weight scale bytes per stage");
  static_assert(kSfbTileBytes % 16 == 0, "bulk copies move multiples of 16 bytes");
  static_assert(kWarpTileM % 16 == 0 && kWarpTileN % 16 == 0, "ldmatrix.x4 covers 16 rows / 2 n8");
  static_assert(kMFrags * 16 * kWarpsM == kBM && kNFrags * 8 * kWarpsN == kBN, "warp grid");
  static_assert(kThreads == 384, "3 warpgroups");
  static_assert(kBN == 128 || kBN == 256, "64 x 32 or 64 x 64 warp tiles");
  static_assert(kWarpTileN % 64 == 0 || kBN == 128, "a half tile leaves whole warp tiles idle");
  static_assert(!kSetMaxNReg ||
                    kProducerWarps * 32 * kProducerRegs + kConsumerWarps * 32 * kConsumerRegs <=
                        65536,
                "setmaxnreg: the SM's 64K registers");
  static_assert(kKMultiple <= kChunkQuantum && kChunkQuantum % kKMultiple == 0,
                "a k-chunk of the ready flags is whole stages (work_units.h)");
  static_assert(kATileBytes % 1024 == 0 && kBTileBytes % 1024 == 0, "swizzle atoms stay aligned");
  static_assert(kSfaSlotBytes % 128 == 0 && kSfbRingTileBytes % 128 == 0,
                "bulk-copy destinations stay aligned");
  static_assert(kBM == kWorkTileM, "work units and ready flags count 128-row m-tiles");
  static_assert(kStages >= 2, "double buffering at least");
  static_assert(kSfbRingTileBytes * kGroups == kSfbTileBytes, "whole weight-scale groups per ring");
  // A staged tile (staged_epilogue.cuh): every consumer warp has columns in every tile (the
  // t_full count is every consumer thread), consumers keep the launch bound's registers (no
  // setmaxnreg: the quantizer warps that drain need theirs), three warps drain.
  static_assert(!Schedule::kStagedEpilogue ||
                    (kGroups == 1 && kNMultiple == kBN && !kSetMaxNReg && kQuantWarps == 3),
                "a staged epilogue: one group, whole n-tiles, no register split");
};

// OutProjTile::k128x256Lockstep: 128 x 256, BK = 128, both
// warpgroups in lockstep on one ring of 3 stages of 26 KiB (+ 2 activation-scale slots): 83 KiB
// of the 99 KiB; 64 x 64 warp tiles with setmaxnreg 56 / 224. The 128 x 256 tile halves the L2
// and shared-memory bytes per MMA of the 128 x 128 one (the v2 ladder's L2 rung).
using Sm120Config128x256Lockstep = OutProjConfig<3, 128, 256, kSm120SmemBytes>;
// The same tile skewed (OutProjTile::k128x256): an A ring of 4 stages (8 KiB of codes each, 3
// activation-scale slots of 2 KiB) and two B rings of 3 stages (8 KiB of codes + 1 KiB of weight
// scales each): 93 KiB. The skew hides most of the epilogue (perf_model: `current`); its alone
// phases rest on one MMA warp per sub-partition keeping the tensor pipes fed (perf_model's eta).
using Sm120Config128x256Skewed = OutProjConfig<3, 128, 256, kSm120SmemBytes, 4, SkewedSchedule>;
// The plain 128 x 128 (OutProjTile::k128x128): 128 x 128 tiles in lockstep, 4 stages of
// BK = 128, 64 x 32 warp tiles, no setmaxnreg (the ladder's L1 rung): 76 KiB.
using Sm120Config128x128Lockstep = OutProjConfig<4, 128, 128, kSm120SmemBytes>;
// OutProjTile::k128x128Staged: the 128 x 128 tile with the staged epilogue (perf_model's
// v2_128x128_k128_s3_staged, the refit model's pick at M = 4096 on an RTX 5090): 3 stages of
// 18 KiB (+ 2 activation-scale slots) and the 32 KiB t tile: 90 KiB of the 99 KiB.
using Sm120Config128x128Staged =
    OutProjConfig<3, 128, 128, kSm120SmemBytes, 3, StagedSchedule>;
}  // namespace h3::kernels

#endif  // H3_KERNELS_CONFIG_CUH_
