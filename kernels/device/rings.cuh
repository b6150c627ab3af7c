#ifndef H3_KERNELS_RINGS_CUH_
#define H3_KERNELS_RINGS_CUH_

// The shared-memory rings between the load warp (loader.cuh) and the consumer warps
// (out_proj_kernel.cuh): the kernel's shared memory as one struct, and a position in a ring.

#include <cstdint>
#include <type_traits>

namespace h3::kernels {

// The fused kernel's dynamic shared memory (config.cuh sizes every member). One A ring (lockstep:
// the ring, whose stages also carry B) and, with the schedule's kOwnBRings (skewed), one B ring
// per consumer group: ring g's stage s at index g * kStages + s of b[] and sfb[]. Swizzled TMA
// destinations need 1024-byte alignment (the 128B pattern repeats every 1 KiB), bulk copies 128
// bytes (16 would do).
template <class Cfg>
struct SharedStorage {
  static constexpr int kBRingSlots = Cfg::kGroups * Cfg::kStages;
  static constexpr int kBRingBars = Cfg::Schedule::kOwnBRings ? kBRingSlots : 1;  // no [0] arrays

  alignas(1024) uint8_t a[Cfg::kAStages][Cfg::kATileBytes];       // activation codes, swizzled
  alignas(1024) uint8_t b[kBRingSlots][Cfg::kBRingTileBytes];     // weight codes, swizzled
  alignas(128) uint8_t sfa[Cfg::kSfaSlots][Cfg::kSfaSlotBytes];   // activation-scale boxes
  alignas(128) uint8_t sfb[kBRingSlots][Cfg::kSfbRingTileBytes];  // weight scales, 128x4 layout
  // mbarriers. full / empty: the A ring (lockstep: the ring), the loader's arrive.expect_tx /
  // every consumer thread. full_b / empty_b (kOwnBRings): B ring slot g * kStages + s, the
  // loader / group g's threads. gate: the two skew gates (kSkewGate; out_proj_kernel.cuh SkewGate).
  uint64_t full[Cfg::kAStages];
  uint64_t empty[Cfg::kAStages];
  uint64_t full_b[kBRingBars];
  uint64_t empty_b[kBRingBars];
  uint64_t gate[2];

  __device__ __forceinline__ uint8_t* B(int g, int s) { return b[g * Cfg::kStages + s]; }
  __device__ __forceinline__ uint8_t* Sfb(int g, int s) { return sfb[g * Cfg::kStages + s]; }
};

// A staged config's shared memory (config.cuh StagedSchedule; staged_epilogue.cuh): the rings,
// then the t tile, kBM rows of kBN bf16 (16-byte chunks swizzled by row, StagedChunk), and its two
// mbarriers: t_full (every consumer thread, after writing its words of tile j) and t_empty (every
// quantizer-warp thread, after reading its rows of tile j). Derived, so that the other configs'
// storage stays exactly SharedStorage.
template <class Cfg>
struct StagedStorage : SharedStorage<Cfg> {
  static constexpr int kTRowBytes = Cfg::kBN * 2;
  alignas(128) uint8_t t[Cfg::kBM * kTRowBytes];
  uint64_t t_full;
  uint64_t t_empty;
};

// The shared memory of config Cfg's kernels.
template <class Cfg>
using StorageOf = std::conditional_t<Cfg::Schedule::kStagedEpilogue, StagedStorage<Cfg>,
                                     SharedStorage<Cfg>>;

// Bytes of dynamic shared memory a kernel whose shared memory is `Storage` asks for: the base
// is only guaranteed 16-byte aligned, so it is padded for the realignment (AlignedSmem).
template <class Storage>
constexpr int DynamicSmemBytes() {
  return static_cast<int>(sizeof(Storage) + alignof(Storage) - 16);
}

// The kernel's view of its dynamic shared memory, realigned to the storage's alignment by an
// offset from the shared array itself, so the compiler keeps knowing these are shared-memory
// addresses (LDS, not generic LD).
template <class Storage>
__device__ __forceinline__ Storage& AlignedSmem(uint8_t* smem_raw) {
  constexpr uint32_t kAlign = alignof(Storage);
  const uint32_t misalign =
      static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw)) & (kAlign - 1);
  return *reinterpret_cast<Storage*>(smem_raw + ((kAlign - misalign) & (kAlign - 1)));
}

// Where the next stage's activation scales live (config.cuh kSfaSlots): a slot of the scale
// ring and the stage's place in that slot's box. The load warp and every consumer advance one in
// the same order, one stage at a time.
template <class Cfg>
struct SfaPos {
  int slot = 0, sub = 0;
  __device__ __forceinline__ void Advance() {
    if (++sub == Cfg::kSfaStagesPerBox) {
      sub = 0;
      if (++slot == Cfg::kSfaSlots) slot = 0;
    }
  }
  // kSfaStagesPerBox Advance()s from the first stage of a box (sub == 0, which it stays).
  __device__ __forceinline__ void AdvanceBox() {
    if (++slot == Cfg::kSfaSlots) slot = 0;
  }
};

// The first weight row of ring g's part of n-tile nt (lockstep: g = 0, the tile's first row). A
// skewed group's ring has no part of a tile whose row0 is past N (half a tile at the end of N):
// the load warp and that group's consumers both skip it.
template <class Cfg>
__device__ __forceinline__ int RingRow0(int g, int nt) {
  return nt * Cfg::kBN + g * Cfg::kGroupBN;
}

// A position in a ring of kRingStages stages: the stage and the parity of its current phase.
template <int kRingStages>
struct RingPos {
  int stage = 0;
  uint32_t phase = 0;
  __device__ __forceinline__ void Advance() {
    if (++stage == kRingStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
  // kN Advance()s from a stage that is a multiple of kN (kRingStages is one too).
  template <int kN>
  __device__ __forceinline__ void AdvanceBy() {
    static_assert(kRingStages % kN == 0, "whole groups of kN stages");
    stage += kN;
    if (stage == kRingStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

}  // namespace h3::kernels

#endif  // H3_KERNELS_RINGS_CUH_
