#ifndef H3_KERNELS_FRAGMENT_MATH_H_
#define H3_KERNELS_FRAGMENT_MATH_H_

// Index math of the SM120 main loop, shared by the kernel (device) and its CPU tests (host):
// where each lane's ldmatrix row and scale word live in a pipeline stage. Fragment layouts are
// those of contract section 7 (docs/contract.md; lane l: g = l / 4, t = l % 4).

#include <cstdint>

#include "core/host_device.h"

namespace h3::kernels {

// Byte offset of 16-byte chunk `chunk` of row `row` in a [rows][128 B] tile written by TMA with
// CU_TENSOR_MAP_SWIZZLE_128B: chunk index XOR (row % 8) (the 128B swizzle pattern; tile base
// 1024-byte aligned).
H3_HD uint32_t Swizzle128Offset(uint32_t row, uint32_t chunk) {
  return row * 128u + ((chunk ^ (row & 7u)) << 4);
}
// The same for a [rows][64 B] tile written with CU_TENSOR_MAP_SWIZZLE_64B: address bits 7..8
// XOR into bits 4..5 (CuTe Swizzle<2,4,3>), i.e. chunk index XOR ((row / 2) % 4). An ldmatrix
// phase (8 rows, one chunk) then covers all 32 banks: rows 2j and 2j+1 share a chunk slot 64
// bytes apart, and the four pairs use four different slots.
H3_HD uint32_t Swizzle64Offset(uint32_t row, uint32_t chunk) {
  return row * 64u + ((chunk ^ ((row >> 1) & 3u)) << 4);
}
// The stage's code-tile offset for rows of kRowBytes (config.cuh: 64 or 128).
template <int kRowBytes>
H3_HD uint32_t SwizzleOffset(uint32_t row, uint32_t chunk) {
  static_assert(kRowBytes == 64 || kRowBytes == 128, "the two TMA swizzle modes in use");
  return kRowBytes == 128 ? Swizzle128Offset(row, chunk) : Swizzle64Offset(row, chunk);
}

// A (16 x 64 e2m1, one MMA k-step kk of a stage) by ldmatrix.x4: matrix q = lane/8 is
// q0 rows 0-7 bytes 0-15, q1 rows 8-15 bytes 0-15, q2 rows 0-7 bytes 16-31, q3 rows 8-15
// bytes 16-31, giving registers a0..a3 exactly as the MMA wants them (docs/contract.md section 7:
// register i holds row g + 8*(i&1), k = 8t + j + 32*(i>>1)).
H3_HD uint32_t LdmatrixARow(int lane, int m_base) {
  return m_base + (lane & 7) + ((lane >> 3) & 1) * 8;
}
H3_HD uint32_t LdmatrixAChunk(int lane, int kk) { return 2 * kk + (lane >> 4); }
// B (two n8 fragments j, j+1 of 64 k) by ldmatrix.x4: q0 = n 0-7 bytes 0-15 (b[j][0]),
// q1 = n 0-7 bytes 16-31 (b[j][1]), q2/q3 the same for n 8-15 (b[j+1]).
H3_HD uint32_t LdmatrixBRow(int lane, int n_base) { return n_base + (lane & 7) + (lane >> 4) * 8; }
H3_HD uint32_t LdmatrixBChunk(int lane, int kk) { return 2 * kk + ((lane >> 3) & 1); }

// Scale operands (scale_vec::4X, byte-id 0, thread-id 0): lane 4g supplies row g, lane 4g+1
// row g+8 (other lanes are ignored; they load row g). Activation scales sit in [kBM][16 B]
// linear slots (config.cuh kSfaSlots); from a stage's first scale byte of row 0, the MMA k-step
// kk word of a row is bytes 4kk..4kk+3 of that row.
H3_HD uint32_t SfaRow(int lane, int m_base) {
  return m_base + (lane >> 2) + ((lane & 3) == 1 ? 8 : 0);
}
H3_HD uint32_t SfaOffset(uint32_t row, int kk) { return row * 16u + kk * 4u; }
// Weight scales of a stage: kBK/64 column groups of the 128x4 layout, 512 bytes each;
// (n, 4kk..4kk+3) is the word at kk*512 + (n%32)*16 + (n/32)*4 (docs/contract.md section 4).
H3_HD uint32_t SfbCol(int lane, int n_base) { return n_base + (lane >> 2); }
H3_HD uint32_t SfbOffset(uint32_t n, int kk) {
  return kk * 512u + (n % 32u) * 16u + ((n / 32u) % 4u) * 4u;
}

// ---- A warp's lane offsets, computed once (mainloop.cuh LaneOffsets). Every fragment and
// scale word a lane reads in a stage is its fragment-0, k-step-0 offset plus a compile-time
// stride, because the warp tile's origin (m_base, n_base) and the fragment steps keep the row
// bits the swizzle reads (row % 8) and the scale layouts' word positions fixed:
//  - ldmatrix rows: fragment i / pair jp adds 16 rows, a multiple of 8 (for m_base, n_base
//    multiples of 16): SwizzleOffset(row + 16i, c) = SwizzleOffset(row, c) + 16i * kRowBytes.
//    The k-step changes the chunk, which the swizzle XORs with lane bits, so each k-step keeps
//    its own per-lane offset (LdmatrixAOffset / LdmatrixBOffset).
//  - activation scales: row + 16i, k-step kk: + 16i * 16 + 4kk (kSfaFragStride, kSfaKStep).
//  - weight scales (a warp tile inside one 128-row group, n_base % 32 == 0): n8 fragment j adds
//    8j columns = (j % 4) * 8 rows of the 32-row block and j / 4 words (SfbFragOffset); k-step
//    kk adds one 512-byte column group (kSfbKStep). Fragments j and j + 4 are then adjacent words
//    (one 8-byte load when n_base % 64 == 0).
// lane_offsets_test compares each with the per-fragment formulas over all lanes.
template <int kRowBytes>
H3_HD uint32_t LdmatrixAOffset(int lane, int m_base, int kk) {
  return SwizzleOffset<kRowBytes>(LdmatrixARow(lane, m_base), LdmatrixAChunk(lane, kk));
}
template <int kRowBytes>
H3_HD uint32_t LdmatrixBOffset(int lane, int n_base, int kk) {
  return SwizzleOffset<kRowBytes>(LdmatrixBRow(lane, n_base), LdmatrixBChunk(lane, kk));
}
template <int kRowBytes>
inline constexpr uint32_t kLdmatrixFragStride = 16u * kRowBytes;  // 16 rows
inline constexpr uint32_t kSfaFragStride = 16u * 16u;               // 16 rows of 16 bytes
inline constexpr uint32_t kSfaKStep = 4u;
inline constexpr uint32_t kSfbKStep = 512u;
H3_HD constexpr uint32_t SfbFragOffset(int j) { return (j % 4) * 8u * 16u + (j / 4) * 4u; }

}  // namespace h3::kernels

#endif  // H3_KERNELS_FRAGMENT_MATH_H_
