#ifndef H3_KERNELS_MAINLOOP_CUH_
#define H3_KERNELS_MAINLOOP_CUH_

// The SM120 consumer main loop body: one pipeline stage (kKSteps MMA k-steps) of a warp's
// kWarpTileM x kWarpTileN tile (64 x 64, or 64 x 32 in the 128 x 128 config). Fragments come
// straight from the swizzled stage by ldmatrix (a K-major 32-byte row slice is exactly the MMA
// register; the swizzle is the TMA mode of the row's width, SWIZZLE_64B at BK = 128), scales by
// one 32-bit LDS per fragment, then kMFrags x kNFrags block-scaled MMAs (Arch::WarpTileMma).

#include <cstdint>

#include "kernels/fragment_math.h"
#include "kernels/ptx.cuh"
#include "kernels/warp_acc.cuh"

namespace h3::kernels {

// a_tile: [kBM][kRowBytes] swizzled, b_tile: [kBN][kRowBytes] swizzled, sfa_tile: this stage's
// first scale byte of row 0 in a [kBM][16 B] slot, sfb_tile: (kBK/64) x 512 B of the 128x4 layout
// per 128-row group of B. m_base/n_base: the warp tile's origin. Per k-step the warp loads all of
// its A and B fragments and scales (24 registers of B at 64 x 64, which fit the consumers' 224
// beside 128 accumulators), then issues its MMAs.
template <class Cfg, class Arch>
__device__ __forceinline__ void ConsumeStage(const uint8_t* a_tile, const uint8_t* b_tile,
                                             const uint8_t* sfa_tile, const uint8_t* sfb_tile,
                                             int m_base, int n_base, WarpAcc<Cfg>& acc) {
  static_assert(Cfg::kNFrags % 2 == 0, "whole ldmatrix.x4 pairs");
  const int lane = threadIdx.x & 31;
  const uint32_t a_addr = ptx::SmemAddr(a_tile), b_addr = ptx::SmemAddr(b_tile);
  // The warp tile's 128-row weight-scale group (a 64-wide warp tile never straddles two).
  const uint8_t* sfb_group = sfb_tile + (n_base / 128) * Cfg::kSfbGroupBytes;
  static_assert(128 % Cfg::kWarpTileN == 0, "a warp tile inside one weight-scale group");
#pragma unroll
  for (int kk = 0; kk < Cfg::kKSteps; ++kk) {
    uint32_t a[Cfg::kMFrags][4];  // 16 x 64 e2m1 per fragment
    uint32_t sfa[Cfg::kMFrags];
#pragma unroll
    for (int i = 0; i < Cfg::kMFrags; ++i) {
      const int m0 = m_base + 16 * i;
      ptx::LdMatrixX4(a[i], a_addr + SwizzleOffset<Cfg::kRowBytes>(LdmatrixARow(lane, m0),
                                                                   LdmatrixAChunk(lane, kk)));
      sfa[i] = *reinterpret_cast<const uint32_t*>(sfa_tile + SfaOffset(SfaRow(lane, m0), kk));
    }
    uint32_t b[Cfg::kNFrags][2];  // 64 x 8 e2m1 per fragment
    uint32_t sfb[Cfg::kNFrags];
#pragma unroll
    for (int jp = 0; jp < Cfg::kNFrags / 2; ++jp) {
      uint32_t r[4];
      ptx::LdMatrixX4(r, b_addr + SwizzleOffset<Cfg::kRowBytes>(LdmatrixBRow(lane, n_base + 16 * jp),
                                                                LdmatrixBChunk(lane, kk)));
      b[2 * jp][0] = r[0];
      b[2 * jp][1] = r[1];
      b[2 * jp + 1][0] = r[2];
      b[2 * jp + 1][1] = r[3];
    }
#pragma unroll
    for (int j = 0; j < Cfg::kNFrags; ++j) {
      sfb[j] =
          *reinterpret_cast<const uint32_t*>(sfb_group + SfbOffset(SfbCol(lane, n_base + 8 * j), kk));
    }
    Arch::template WarpTileMma<Cfg, Cfg::kNFrags>(acc, 0, a, b, sfa, sfb);
  }
}

}  // namespace h3::kernels

#endif  // H3_KERNELS_MAINLOOP_CUH_
