#ifndef H3_KERNELS_RINGS_CUH_
#define H3_KERNELS_RINGS_CUH_

// The shared-memory rings between the load warp (loader.cuh) and the consumer warps
// (out_proj_kernel.cuh): where each stage and mbarrier lives (config.cuh's layout) and a
// position in a ring.

#include <cstdint>

namespace h3::kernels {

// Where the next stage's activation scales live (config.cuh kSfaSlots): a slot of the scale
// ring and the stage's place in that slot's box. The load warp and every consumer advance one in
// the same order, one stage at a time.
template <class Cfg>
struct SfaPos {
  int slot = 0, sub = 0;
  __device__ __forceinline__ const uint8_t* Row0(const uint8_t* smem) const {
    return smem + Cfg::kSfaOffset + slot * Cfg::kSfaSlotBytes + sub * Cfg::kSfaRowBytes;
  }
  __device__ __forceinline__ void Advance() {
    if (++sub == Cfg::kSfaStagesPerBox) {
      sub = 0;
      if (++slot == Cfg::kSfaSlots) slot = 0;
    }
  }
};

// The rings in shared memory (config.cuh): A stage s; B / weight-scale stage s of ring g (the
// lockstep config has one ring, g = 0, whose stages are the A ring's).
template <class Cfg>
struct Rings {
  uint8_t* smem;
  // mbarriers (config.cuh kBarOffset), addressed from smem so that only one pointer stays live:
  //   Full(s) / Empty(s): A ring (lockstep: the ring), the loader's arrive.expect_tx / every
  //   consumer thread; FullB(i) / EmptyB(i), i = g * kStages + s: B ring g (skewed), the loader /
  //   group g's threads; Gate(i), i = 0, 1: the skew gates (SkewGate).
  __device__ __forceinline__ explicit Rings(uint8_t* base) : smem(base) {}
  __device__ __forceinline__ uint64_t* Bar(int i) const {
    return reinterpret_cast<uint64_t*>(smem + Cfg::kBarOffset) + i;
  }
  __device__ __forceinline__ uint64_t* Full(int s) const { return Bar(s); }
  __device__ __forceinline__ uint64_t* Empty(int s) const { return Bar(Cfg::kAStages + s); }
  __device__ __forceinline__ uint64_t* FullB(int i) const { return Bar(2 * Cfg::kAStages + i); }
  __device__ __forceinline__ uint64_t* EmptyB(int i) const {
    return Bar(2 * Cfg::kAStages + Cfg::kBRingBars + i);
  }
  __device__ __forceinline__ uint64_t* Gate(int i) const {
    return Bar(2 * Cfg::kAStages + 2 * Cfg::kBRingBars + i);
  }
  __device__ __forceinline__ uint8_t* A(int s) const {
    return smem + Cfg::kAOffset + s * Cfg::kATileBytes;
  }
  __device__ __forceinline__ uint8_t* B(int g, int s) const {
    return smem + Cfg::kBOffset + (g * Cfg::kStages + s) * Cfg::kBRingTileBytes;
  }
  __device__ __forceinline__ uint8_t* Sfb(int g, int s) const {
    return smem + Cfg::kSfbOffset + (g * Cfg::kStages + s) * Cfg::kSfbRingTileBytes;
  }
};

// The first weight row of ring g's part of n-tile nt (lockstep: g = 0, the tile's first row). A
// skewed group's ring has no part of a tile whose row0 is past N (half a tile at the end of N):
// the load warp and that group's consumers both skip it.
template <class Cfg>
__device__ __forceinline__ int RingRow0(int g, int nt) {
  return nt * Cfg::kBN + g * Cfg::kGroupBN;
}

// A position in a ring of kDepth stages: the stage and the parity of its current phase.
template <int kDepth>
struct RingPos {
  int stage = 0;
  uint32_t phase = 0;
  __device__ __forceinline__ void Advance() {
    if (++stage == kDepth) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

}  // namespace h3::kernels

#endif  // H3_KERNELS_RINGS_CUH_
