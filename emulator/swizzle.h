#ifndef EMULATOR_SWIZZLE_H_
#define EMULATOR_SWIZZLE_H_

// The 128x4 swizzled scale layout of contract section 4 (FlashInfer
// get_sf_out_offset_128x4; cuBLASLt/CUTLASS Sm1xxBlkScaledConfig tiles).
// `cols` is always the number of scale columns (K/16).

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace h3 {

// round_up(rows, 128) * round_up(cols, 4).
int64_t SwizzledScaleBytes(int64_t rows, int64_t cols);

// Byte offset of (row, col): (row/128)*(round_up(cols,4)/4)*512 + (col/4)*512
// + (row%32)*16 + ((row%128)/32)*4 + col%4.
int64_t SwizzledScaleOffset(int64_t row, int64_t col, int64_t cols);

// linear: [rows, cols] row-major. Result: SwizzledScaleBytes(rows, cols)
// bytes, padding 0x00. Aborts when linear.size() != rows * cols.
std::vector<uint8_t> SwizzleScales(absl::Span<const uint8_t> linear, int64_t rows, int64_t cols);

// swizzled: SwizzledScaleBytes(rows, cols) bytes. Result: [rows, cols]
// (padding ignored). Aborts when the size is wrong.
std::vector<uint8_t> UnswizzleScales(absl::Span<const uint8_t> swizzled, int64_t rows,
                                     int64_t cols);

}  // namespace h3

#endif  // EMULATOR_SWIZZLE_H_
