#ifndef H3_KERNELS_CONFIG_CUH_
#define H3_KERNELS_CONFIG_CUH_

// The one configuration of the fused out-projection kernel: tile shape, pipeline depth, warp
// roles, shared-memory layout and the quantizer's work units. Everything else derives from here.
// The Hopper validation build derives its own from this template (sm90/config.cuh).

#include <cstdint>

#include "kernels/work_units.h"

namespace h3::kernels {

// sm_120 (RTX 5090 / RTX PRO 6000): 99 KiB of dynamic shared memory per block
// (cutlass sm120_smem_capacity_bytes = 101376).
inline constexpr int kSm120SmemBytes = 101376;

template <int kStages_, int kBK_, int kBN_, int kSmemBudget_>
struct OutProjConfig {
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
  static constexpr int kRowBytes = kBK / 2;            // e2m1: 2 per byte; 64 or 128
  static constexpr int kATileBytes = kBM * kRowBytes;  // [kBM][kRowBytes], swizzled
  static constexpr int kBTileBytes = kBN * kRowBytes;  // [kBN][kRowBytes], swizzled
  // Activation scales: kSfaRowBytes per row and stage. A TMA tensor box's inner extent must be
  // a multiple of 16 bytes, so one box [kBM][16 B] carries the scales of kSfaStagesPerBox
  // consecutive stages (at kBK = 128: two), loaded with the first of them into one of kSfaSlots
  // slots. The later stages of a box read the slot their first stage filled. A slot is refilled
  // kSfaSlots boxes later; the load warp then waits for the ring stage kStages k-steps back,
  // which every consumer releases only after it finished every older k-step: with
  // kSfaSlots >= kStages / kSfaStagesPerBox + 1 the box being replaced is no longer read.
  static constexpr int kSfaRowBytes = kBK / kSfVec;  // 8 or 16
  static constexpr int kSfaBoxBytes = 16;
  static constexpr int kSfaStagesPerBox = kSfaBoxBytes / kSfaRowBytes;
  static constexpr int kSfaSlots = kSfaStagesPerBox == 1 ? kStages : kStages / kSfaStagesPerBox + 1;
  static constexpr int kSfaSlotBytes = kBM * kSfaBoxBytes;  // [kBM][16 B] linear
  // Weight scales in the 128x4 layout: a 128-row x 4-column group is 512 contiguous bytes and
  // one stage covers kBK/64 consecutive column groups of each of the tile's kSfbGroups 128-row
  // groups: one bulk copy per group (groups are K/64 * 512 bytes apart).
  static constexpr int kSfbGroups = kBN / 128;
  static constexpr int kSfbGroupBytes = (kBK / 64) * 512;
  static constexpr int kSfbTileBytes = kSfbGroups * kSfbGroupBytes;
  // Bytes a stage's full barrier expects: codes and weight scales always (of the 128-row weight
  // groups that exist: N may end in half a tile, whose missing B rows TMA fills with zeros and
  // counts), the activation-scale box only with the first stage of a box.
  static constexpr int kStageBytes = kATileBytes + kBTileBytes + kSfbTileBytes;
  static constexpr int kSfaBoxTxBytes = kSfaSlotBytes;
  // Swizzled TMA destinations need 1024-byte alignment (the 128B pattern repeats every 1 KiB).
  static constexpr int kAOffset = 0;
  static constexpr int kBOffset = kAOffset + kStages * kATileBytes;
  static constexpr int kSfaOffset = kBOffset + kStages * kBTileBytes;
  static constexpr int kSfbOffset = kSfaOffset + kSfaSlots * kSfaSlotBytes;
  static constexpr int kBarOffset = kSfbOffset + kStages * kSfbTileBytes;
  static constexpr int kBarBytes = 2 * kStages * 8;  // full[] + empty[] mbarriers
  static constexpr int kSmemUsed = kBarOffset + kBarBytes;
  static constexpr int kSmemAlign = 1024;
  // The dynamic shared-memory base is only guaranteed 16-byte aligned: pad for the realignment.
  static constexpr int kSmemBytes = kSmemUsed + kSmemAlign - 16;
  // The consumer loop: false = the SM120 fragment main loop (mainloop.cuh; on sm_90a with the
  // MMA emulated from its registers). Only the Hopper validation config (sm90/config.cuh) sets
  // true: its own staged wgmma loop.
  static constexpr bool kSm90Staged = false;

  // ---- Quantizer work units (work_units.h): row groups of kQuantRows rows, claimed dynamically.
  static constexpr int kQuantRows = 4;

  // ---- Supported problem granularity. ----
  static constexpr int kNMultiple = 128;                     // half an n-tile at most is missing
  static constexpr int kKMultiple = kBK * kSfaStagesPerBox;  // whole boxes per tile

  static_assert(kBK % kMmaK == 0, "stage k must be whole MMA k-steps");
  static_assert(kRowBytes == 64 || kRowBytes == 128, "a TMA swizzle mode of the row's width");
  static_assert(kSfaBoxBytes % kSfaRowBytes == 0, "a stage's scales never straddle two boxes");
  static_assert(kSfaSlots >= (kSfaStagesPerBox == 1 ? kStages : kStages / kSfaStagesPerBox + 1),
                "a refilled activation-scale slot is no longer read (see kSfaSlots)");
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
  static_assert(kBOffset % 1024 == 0 && kSfaOffset % 128 == 0 && kSfbOffset % 128 == 0 &&
                    kSfaSlotBytes % 128 == 0,
                "TMA destinations aligned");
  static_assert(kBarOffset % 8 == 0, "mbarriers are 8-byte objects");
  static_assert(kBM == kWorkTileM, "work units and ready flags count 128-row m-tiles");
  static_assert(kStages >= 2, "double buffering at least");
  static_assert(kSmemBytes <= kSmemBudget_, "shared memory over the per-block budget");
};

// The native SM120 build, default: 128 x 256 tiles, 3 stages of BK = 128 (26 KiB of codes and
// weight scales each, plus 2 activation-scale slots of 2 KiB): 83 KiB of the 99 KiB; 64 x 64
// warp tiles with setmaxnreg 56 / 224. Halves the L2 and shared-memory bytes per MMA of the
// 128 x 128 tile (NOTES.md, harness/perf_model: the v2 ladder's L2 rung, +7% predicted).
using Sm120Config = OutProjConfig<3, 128, 256, kSm120SmemBytes>;
// The alternative the bench can pick (OutProjTile::k128x128): 128 x 128 tiles, 4 stages of
// BK = 128, 64 x 32 warp tiles, no setmaxnreg (the ladder's L1 rung): 76 KiB.
using Sm120Config128 = OutProjConfig<4, 128, 128, kSm120SmemBytes>;
static_assert(Sm120Config::kSmemBytes <= kSm120SmemBytes, "sm_120: 99 KiB per block");
static_assert(Sm120Config128::kSmemBytes <= kSm120SmemBytes, "sm_120: 99 KiB per block");

}  // namespace h3::kernels

#endif  // H3_KERNELS_CONFIG_CUH_
