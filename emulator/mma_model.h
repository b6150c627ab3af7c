#ifndef EMULATOR_MMA_MODEL_H_
#define EMULATOR_MMA_MODEL_H_

// A model of ONE warp-level SM120 instruction (docs/contract.md section 7):
//   mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X
//       .f32.e2m1.e2m1.f32.ue4m3 d, a, b, c, sfa, {0, 0}, sfb, {0, 0}
// from the 32 lanes' registers to d, plus packers that build the registers
// from row-major codes/scales, so a GPU kernel's own fragment handling can be
// compared with these on the CPU. Lane l: g = l / 4, t = l % 4.

#include <cstdint>

#include "absl/types/span.h"

namespace h3 {

// Selectors fixed at byte-id 0, thread-id 0 (the only form the kernel uses).
// Fragments (register i of lane l, nibble j = bits 4j..4j+3):
//   a[32][4]: A 16x64, row g + 8*(i&1), k = 8t + j + 32*(i>>1)
//   b[32][2]: B 64x8, column g, k = 8t + j + 32*i
//   c/d[32][4]: C/D 16x8 f32, row g + 8*(i>>1), column 2t + (i&1)
//   sfa[32]: lane 4g -> row g, lane 4g+1 -> row g+8; byte b = scale of
//            k in [16b, 16b+16); other lanes ignored
//   sfb[32]: lane 4g -> column g; other lanes ignored
// D[m,n] = C[m,n] + sum_b SFA(m,b) SFB(n,b) sum_{k in block b} A[m,k] B[k,n].
// The model computes the sum exactly and rounds C + sum once to f32
// (nearest-even): one of the results docs/contract.md section 6 allows, and THE
// result whenever the data is exact (the hardware's internal order and
// precision are not specified). A NaN scale (0x7F) on a row or column makes
// that whole row/column of D NaN.
void MmaM16N8K64BlockScaled(const uint32_t a[32][4], const uint32_t b[32][2], const float c[32][4],
                            const uint32_t sfa[32], const uint32_t sfb[32], float d[32][4]);

// Packers. codes: row-major packed E2M1 (byte j of a row = code(2j) |
// code(2j+1) << 4), row_bytes = K/2. k0 is a multiple of 64.
// A tile: rows row0..row0+15, k0..k0+63 of an [M, K] activation.
void PackAFragment(absl::Span<const uint8_t> codes, int64_t row_bytes, int64_t row0, int64_t k0,
                   uint32_t a[32][4]);
// B tile: columns col0..col0+7 (rows of an [N, K] weight), k0..k0+63.
void PackBFragment(absl::Span<const uint8_t> codes, int64_t row_bytes, int64_t col0, int64_t k0,
                   uint32_t b[32][2]);
// Scales from a linear [rows, K/16] layout (scale_cols = K/16).
void PackSfa(absl::Span<const uint8_t> scales, int64_t scale_cols, int64_t row0, int64_t k0,
             uint32_t sfa[32]);
void PackSfb(absl::Span<const uint8_t> scales, int64_t scale_cols, int64_t col0, int64_t k0,
             uint32_t sfb[32]);
// Scales from the 128x4 swizzled layout (docs/contract.md section 4): for one row and
// one 64-wide k step the four scales are one aligned little-endian word.
void PackSfbSwizzled(absl::Span<const uint8_t> swizzled, int64_t scale_cols, int64_t col0,
                     int64_t k0, uint32_t sfb[32]);
// Unused lanes of sfa/sfb are set to 0.

// C/D fragment <-> row-major 16x8 f32 tile (ld = row stride in floats).
void PackCFragment(const float* tile, int64_t ld, float c[32][4]);
void UnpackDFragment(const float d[32][4], float* tile, int64_t ld);

}  // namespace h3

#endif  // EMULATOR_MMA_MODEL_H_
