#ifndef H3_KERNELS_CONFIG_CUH_
#define H3_KERNELS_CONFIG_CUH_

// The one configuration of the fused out-projection kernel: tile shape, pipeline depth, warp
// roles, shared-memory layout and the quantizer's work units. Everything else derives from here.
// The Hopper validation build derives its own from this template (sm90/config.cuh).

#include <cstdint>

namespace h3::kernels {

// sm_120 (RTX 5090 / RTX PRO 6000): 99 KiB of dynamic shared memory per block
// (cutlass sm120_smem_capacity_bytes = 101376).
inline constexpr int kSm120SmemBytes = 101376;

template <int kStages_, int kBK_, int kSmemBudget_>
struct OutProjConfig {
  // ---- CTA tile: kBM x kBN outputs, kBK k-elements per pipeline stage. ----
  static constexpr int kBM = 128;
  static constexpr int kBN = 128;
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
  // Consumers: 2 warpgroups = 8 warps in a 2 (M) x 4 (N) grid, each a 64 x 32 warp tile.
  static constexpr int kWarpsM = 2;
  static constexpr int kWarpsN = 4;
  static constexpr int kConsumerWarps = kWarpsM * kWarpsN;
  static constexpr int kWarps = kProducerWarps + kConsumerWarps;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kWarpTileM = kBM / kWarpsM;  // 64
  static constexpr int kWarpTileN = kBN / kWarpsN;  // 32
  static constexpr int kMFrags = kWarpTileM / 16;   // m16 fragments per warp
  static constexpr int kNFrags = kWarpTileN / 8;    // n8 fragments per warp

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
  // one stage covers kBK/64 consecutive column groups of one 128-row group: one bulk copy.
  static constexpr int kSfbTileBytes = (kBN / 128) * (kBK / 64) * 512;
  // Bytes a stage's full barrier expects: codes and weight scales always, the activation-scale
  // box only with the first stage of a box.
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

  // ---- Quantizer work units: kQuantRows rows of attn_out, claimed dynamically. ----
  static constexpr int kQuantRows = 4;
  static constexpr int kUnitsPerMTile = kBM / kQuantRows;
  static constexpr int kQuantBlocksPerIter = 32;  // one 16-element block per lane

  // ---- Supported problem granularity. ----
  static constexpr int kNMultiple = kBN;
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
  static_assert(kATileBytes % 1024 == 0 && kBTileBytes % 1024 == 0, "swizzle atoms stay aligned");
  static_assert(kBOffset % 1024 == 0 && kSfaOffset % 128 == 0 && kSfbOffset % 128 == 0 &&
                    kSfaSlotBytes % 128 == 0,
                "TMA destinations aligned");
  static_assert(kBarOffset % 8 == 0, "mbarriers are 8-byte objects");
  static_assert(kBM % kQuantRows == 0, "quant units never straddle an m-tile");
  static_assert(kStages >= 2, "double buffering at least");
  static_assert(kSmemBytes <= kSmemBudget_, "shared memory over the per-block budget");
};

// The native SM120 build: 4 stages of BK = 128 (17 KiB of codes and weight scales each, plus 3
// activation-scale slots of 2 KiB): 76 KiB of the 99 KiB. Four stages cover the TMA round trip
// that two stages of BK = 256 could not (NOTES.md, harness/perf_model: +20% predicted).
using Sm120Config = OutProjConfig<4, 128, kSm120SmemBytes>;
static_assert(Sm120Config::kSmemBytes <= kSm120SmemBytes, "sm_120: 99 KiB per block");

}  // namespace h3::kernels

#endif  // H3_KERNELS_CONFIG_CUH_
