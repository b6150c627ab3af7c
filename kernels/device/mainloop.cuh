#ifndef H3_KERNELS_MAINLOOP_CUH_
#define H3_KERNELS_MAINLOOP_CUH_

// The SM120 consumer main loop body: one pipeline stage (kKSteps MMA k-steps) of a warp's
// kWarpTileM x kWarpTileN tile (64 x 64, or 64 x 32 in the 128 x 128 config). Fragments come
// straight from the swizzled stage by ldmatrix (a K-major 32-byte row slice is exactly the MMA
// register; the swizzle is the TMA mode of the row's width, SWIZZLE_64B at BK = 128), scales by
// LDS, then kMFrags x kNFrags block-scaled MMAs (Arch::WarpTileMma).
//
// Addressing: every lane-derived offset is computed once per kernel (LaneOffsets, before the
// tile loop); a stage adds its base address and compile-time strides (fragment_math.h), so a
// k-block holds loads and MMAs, not index math.

#include <cstdint>

#include "kernels/device/fragment_math.h"
#include "kernels/device/ptx.cuh"
#include "kernels/device/warp_acc.cuh"

namespace h3::kernels {

// A consumer lane's offsets of fragment 0 / scale word 0 of each k-step, from the start of a
// ring stage (a: the A tile, b / sfb: the warp's ring tile of B codes / weight scales, sfa: the
// stage's first scale byte of row 0). m_base / n_base: the warp tile's origin in the A tile and
// in the ring's B tile.
template <class Cfg>
struct LaneOffsets {
  uint32_t a[Cfg::kKSteps];
  uint32_t b[Cfg::kKSteps];
  uint32_t sfa;
  uint32_t sfb;

  __device__ __forceinline__ LaneOffsets(int lane, int m_base, int n_base) {
#pragma unroll
    for (int kk = 0; kk < Cfg::kKSteps; ++kk) {
      a[kk] = LdmatrixAOffset<Cfg::kRowBytes>(lane, m_base, kk);
      b[kk] = LdmatrixBOffset<Cfg::kRowBytes>(lane, n_base, kk);
    }
    sfa = SfaOffset(SfaRow(lane, m_base), 0);
    // The warp tile's 128-row weight-scale group (a warp tile never straddles two).
    sfb = (n_base / 128) * Cfg::kSfbGroupBytes + SfbOffset(SfbCol(lane, n_base), 0);
  }
  // Keeps the offsets in registers for the whole kernel (ptx::Opaque) where registers allow it
  // (the native build; the sm_90 emulation needs them for its dequantization).
  __device__ __forceinline__ void Pin() {
#pragma unroll
    for (int kk = 0; kk < Cfg::kKSteps; ++kk) {
      ptx::Opaque(a[kk]);
      ptx::Opaque(b[kk]);
    }
    ptx::Opaque(sfa);
    ptx::Opaque(sfb);
  }
};

// Shared-memory loads for the scale words: volatile like ldmatrix (ptx.cuh), so they stay after
// the stage's mbarrier wait, itself volatile asm (the compiler does not move volatile asm across
// volatile asm; the SASS shows every load after its wait). Do not drop the volatile.
__device__ __forceinline__ uint32_t LdShared32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr));
  return v;
}
__device__ __forceinline__ void LdShared64(uint32_t (&v)[2], uint32_t addr) {
  asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(v[0]), "=r"(v[1]) : "r"(addr));
}
__device__ __forceinline__ void LdShared128(uint32_t (&v)[4], uint32_t addr) {
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
               : "r"(addr));
}
// kN consecutive words at addr (kN * 4-byte aligned): one load.
template <int kN>
__device__ __forceinline__ void LdSharedWords(uint32_t (&v)[kN], uint32_t addr) {
  static_assert(kN == 1 || kN == 2 || kN == 4, "a 4, 8 or 16-byte load");
  if constexpr (kN == 1) {
    v[0] = LdShared32(addr);
  } else if constexpr (kN == 2) {
    LdShared64(v, addr);
  } else {
    LdShared128(v, addr);
  }
}

// The stage's scale words: sfa[i][kk] (fragment i's row word of k-step kk; a row's kKSteps
// words are adjacent, one load), sfb[kk][j] (n8 fragment j; at 64-wide warp tiles j and j + 4
// are adjacent words, one 8-byte load). a_tile etc.: shared-memory addresses of the stage.
template <class Cfg>
__device__ __forceinline__ void LoadStageScales(uint32_t sfa_row0, uint32_t sfb_tile,
                                                const LaneOffsets<Cfg>& lo,
                                                uint32_t (&sfa)[Cfg::kMFrags][Cfg::kKSteps],
                                                uint32_t (&sfb)[Cfg::kKSteps][Cfg::kNFrags]) {
  static_assert(Cfg::kKSteps * kSfaKStep == Cfg::kSfaRowBytes, "a stage's row words adjacent");
#pragma unroll
  for (int i = 0; i < Cfg::kMFrags; ++i) {
    LdSharedWords<Cfg::kKSteps>(sfa[i], sfa_row0 + lo.sfa + i * kSfaFragStride);
  }
  // Pairs (j, j + 4) when the warp tile is a 64-aligned 64 columns (n_base % 64 == 0:
  // ConsumerLoop), else one word per fragment.
  constexpr bool kPairs = Cfg::kNFrags == 8;
  static_assert(!kPairs || SfbFragOffset(4) == SfbFragOffset(0) + 4, "j, j + 4 adjacent");
#pragma unroll
  for (int kk = 0; kk < Cfg::kKSteps; ++kk) {
#pragma unroll
    for (int j = 0; j < (kPairs ? 4 : Cfg::kNFrags); ++j) {
      const uint32_t addr = sfb_tile + lo.sfb + kk * kSfbKStep + SfbFragOffset(j);
      if constexpr (kPairs) {
        uint32_t w[2];
        LdShared64(w, addr);
        sfb[kk][j] = w[0];
        sfb[kk][j + 4] = w[1];
      } else {
        sfb[kk][j] = LdShared32(addr);
      }
    }
  }
}

// a_tile / b_tile: the stage's [kBM][kRowBytes] / ring [kGroupBN][kRowBytes] swizzled code
// tiles, sfa_row0: its first activation-scale byte of row 0 in a [kBM][16 B] slot, sfb_tile: the
// ring's (kBK/64) x 512 B of the 128x4 layout per 128-row group (shared-memory addresses). Per
// k-step the warp loads all of its A and B fragments (24 registers of B at 64 x 64, which fit
// the consumers' 224 beside 128 accumulators), then issues its MMAs.
template <class Cfg, class Arch>
__device__ __forceinline__ void ConsumeStage(uint32_t a_tile, uint32_t b_tile, uint32_t sfa_row0,
                                             uint32_t sfb_tile, const LaneOffsets<Cfg>& lo,
                                             WarpAcc<Cfg>& acc) {
  static_assert(Cfg::kNFrags % 2 == 0, "whole ldmatrix.x4 pairs");
  static_assert(128 % Cfg::kWarpTileN == 0, "a warp tile inside one weight-scale group");
  constexpr uint32_t kFragStride = kLdmatrixFragStride<Cfg::kRowBytes>;
  // Native: the stage's scale words first, as vectors. The sm_90 emulation's dequantization
  // needs the registers: its scale words one k-step at a time.
  constexpr bool kStageScales = Arch::kNativeMma;
  uint32_t sfa_all[Cfg::kMFrags][Cfg::kKSteps];
  uint32_t sfb_all[Cfg::kKSteps][Cfg::kNFrags];
  if constexpr (kStageScales) LoadStageScales<Cfg>(sfa_row0, sfb_tile, lo, sfa_all, sfb_all);
#pragma unroll
  for (int kk = 0; kk < Cfg::kKSteps; ++kk) {
    if constexpr (!kStageScales) {
#pragma unroll
      for (int i = 0; i < Cfg::kMFrags; ++i) {
        sfa_all[i][kk] = LdShared32(sfa_row0 + lo.sfa + i * kSfaFragStride + kk * kSfaKStep);
      }
#pragma unroll
      for (int j = 0; j < Cfg::kNFrags; ++j) {
        sfb_all[kk][j] = LdShared32(sfb_tile + lo.sfb + kk * kSfbKStep + SfbFragOffset(j));
      }
    }
    uint32_t a[Cfg::kMFrags][4];  // 16 x 64 e2m1 per fragment
    uint32_t sfa[Cfg::kMFrags];
#pragma unroll
    for (int i = 0; i < Cfg::kMFrags; ++i) {
      ptx::LdMatrixX4(a[i], a_tile + lo.a[kk] + i * kFragStride);
      sfa[i] = sfa_all[i][kk];
    }
    uint32_t b[Cfg::kNFrags][2];  // 64 x 8 e2m1 per fragment
#pragma unroll
    for (int jp = 0; jp < Cfg::kNFrags / 2; ++jp) {
      uint32_t r[4];
      ptx::LdMatrixX4(r, b_tile + lo.b[kk] + jp * kFragStride);
      b[2 * jp][0] = r[0];
      b[2 * jp][1] = r[1];
      b[2 * jp + 1][0] = r[2];
      b[2 * jp + 1][1] = r[3];
    }
    Arch::template WarpTileMma<Cfg, Cfg::kNFrags>(acc, 0, a, b, sfa, sfb_all[kk]);
  }
}

}  // namespace h3::kernels

#endif  // H3_KERNELS_MAINLOOP_CUH_
