#ifndef H3_CORE_SCALE_LAYOUT_H_
#define H3_CORE_SCALE_LAYOUT_H_

// The 128x4 swizzled layout of the weight's block scales (docs/contract.md section 4; FlashInfer
// get_sf_out_offset_128x4, the cuBLASLt/CUTLASS Sm1xxBlockScaledConfig tile). `cols` is always the
// number of scale columns, K/16. Host and device.

#include <cstdint>

#include "core/host_device.h"

namespace h3 {

H3_HD int64_t RoundUpTo(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// round_up(rows, 128) * round_up(cols, 4); padding bytes are 0x00.
H3_HD int64_t SwizzledScaleBytes(int64_t rows, int64_t cols) {
  return RoundUpTo(rows, 128) * RoundUpTo(cols, 4);
}

// Byte offset of (row, col). One 512-byte tile holds 128 rows x 4 columns: row r of the tile sits
// at (r%32)*16 + (r/32)*4 and its 4 columns are consecutive bytes, so a row's four scales of one
// 64-wide k step are one aligned 32-bit word.
H3_HD int64_t SwizzledScaleOffset(int64_t row, int64_t col, int64_t cols) {
  const int64_t col_tiles = RoundUpTo(cols, 4) / 4;
  return (row / 128) * col_tiles * 512 + (col / 4) * 512 + (row % 32) * 16 +
         ((row % 128) / 32) * 4 + (col % 4);
}

}  // namespace h3

#endif  // H3_CORE_SCALE_LAYOUT_H_
