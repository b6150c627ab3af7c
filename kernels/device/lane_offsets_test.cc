// The main loop's lane offsets (fragment_math.h: LdmatrixAOffset/BOffset, the fragment and k-step
// strides, SfbFragOffset) against the per-fragment formulas they replace, for every lane, k-step,
// fragment and warp-tile origin of each config, and for both swizzle widths.

#include <gtest/gtest.h>

#include <cstdint>

#include "kernels/device/fragment_math.h"

namespace h3::kernels {
namespace {

// One warp-tile geometry: the stage's row width, k-steps, fragments and the origins a warp
// tile can have (m_base: multiples of 64 in a 128-row A tile; n_base: multiples of the warp tile
// width in the ring's B tile).
struct Geometry {
  int row_bytes, ksteps, m_frags, n_frags, n_base_step, b_rows;
};
constexpr Geometry kGeometries[] = {
    {64, 2, 4, 8, 64, 128},   // 128x256 skewed: BK 128, 64 x 64 warp tiles, 128-row B rings
    {64, 2, 4, 8, 64, 256},   // 128x256 lockstep: one 256-row B tile
    {64, 2, 4, 4, 32, 128},   // 128x128: 64 x 32 warp tiles
    {128, 4, 4, 8, 64, 256},  // BK 256 (SWIZZLE_128B): the other mode the formulas support
    {128, 4, 4, 4, 32, 128},
};

template <int kRowBytes>
void CheckCodes(const Geometry& g) {
  for (int lane = 0; lane < 32; ++lane) {
    for (int kk = 0; kk < g.ksteps; ++kk) {
      for (int m_base = 0; m_base < 128; m_base += 64) {
        const uint32_t base = LdmatrixAOffset<kRowBytes>(lane, m_base, kk);
        for (int i = 0; i < g.m_frags; ++i) {
          ASSERT_EQ(base + i * kLdmatrixFragStride<kRowBytes>,
                    SwizzleOffset<kRowBytes>(LdmatrixARow(lane, m_base + 16 * i),
                                             LdmatrixAChunk(lane, kk)))
              << lane << " " << kk << " " << m_base << " " << i;
        }
      }
      for (int n_base = 0; n_base < g.b_rows; n_base += g.n_base_step) {
        const uint32_t base = LdmatrixBOffset<kRowBytes>(lane, n_base, kk);
        for (int jp = 0; jp < g.n_frags / 2; ++jp) {
          ASSERT_EQ(base + jp * kLdmatrixFragStride<kRowBytes>,
                    SwizzleOffset<kRowBytes>(LdmatrixBRow(lane, n_base + 16 * jp),
                                             LdmatrixBChunk(lane, kk)))
              << lane << " " << kk << " " << n_base << " " << jp;
        }
      }
    }
  }
}

TEST(LaneOffsetsTest, FragmentStridesMatchPerFragmentSwizzle) {
  for (const Geometry& g : kGeometries) {
    if (g.row_bytes == 64) {
      CheckCodes<64>(g);
    } else {
      CheckCodes<128>(g);
    }
  }
}

TEST(LaneOffsetsTest, ScaleStridesMatchPerFragmentOffsets) {
  for (const Geometry& g : kGeometries) {
    const uint32_t group_bytes = g.ksteps * kSfbKStep;  // config.cuh kSfbGroupBytes
    for (int lane = 0; lane < 32; ++lane) {
      for (int kk = 0; kk < g.ksteps; ++kk) {
        for (int m_base = 0; m_base < 128; m_base += 64) {
          const uint32_t base = SfaOffset(SfaRow(lane, m_base), 0);
          for (int i = 0; i < g.m_frags; ++i) {
            ASSERT_EQ(base + i * kSfaFragStride + kk * kSfaKStep,
                      SfaOffset(SfaRow(lane, m_base + 16 * i), kk));
          }
        }
        for (int n_base = 0; n_base < g.b_rows; n_base += g.n_base_step) {
          // The kernel's formula (LaneOffsets::sfb): the warp tile's 128-row group, then its word.
          const uint32_t base =
              (n_base / 128) * group_bytes + SfbOffset(SfbCol(lane, n_base), 0);
          for (int j = 0; j < g.n_frags; ++j) {
            const int n = n_base + 8 * j;
            const uint32_t want = (n / 128) * group_bytes + SfbOffset(SfbCol(lane, n % 128), kk);
            ASSERT_EQ(base + kk * kSfbKStep + SfbFragOffset(j), want)
                << lane << " " << kk << " " << n_base << " " << j;
          }
          // 64-wide warp tiles: fragments j and j + 4 are adjacent words, the pair 8-aligned
          // (LoadStageScales' 8-byte loads).
          if (g.n_frags == 8) {
            ASSERT_EQ(base % 8, 0u) << n_base;
            for (int j = 0; j < 4; ++j) ASSERT_EQ(SfbFragOffset(j + 4), SfbFragOffset(j) + 4);
          }
        }
      }
    }
  }
}

// The activation-scale words of a stage (kKSteps words of one row) are adjacent and aligned to
// their total size (LoadStageScales' one load per fragment): a row of a [128][16 B] slot at the
// stage's place sub * kKSteps * 4 in the box.
TEST(LaneOffsetsTest, ActivationScaleWordsOfAStageAreOneAlignedVector) {
  for (const Geometry& g : kGeometries) {
    const uint32_t bytes = g.ksteps * kSfaKStep;
    for (uint32_t sub = 0; sub * bytes < 16; ++sub) {
      for (int lane = 0; lane < 32; ++lane) {
        const uint32_t off = sub * bytes + SfaOffset(SfaRow(lane, 64), 0);
        ASSERT_EQ(off % bytes, 0u);
        for (int kk = 0; kk < g.ksteps; ++kk)
          ASSERT_EQ(sub * bytes + SfaOffset(SfaRow(lane, 64), kk), off + kk * 4);
      }
    }
  }
}

}  // namespace
}  // namespace h3::kernels
