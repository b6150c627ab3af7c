#ifndef EMULATOR_SWIZZLE_H_
#define EMULATOR_SWIZZLE_H_

// Whole scale matrices to and from the 128x4 swizzled layout of docs/contract.md section 4, whose
// offset formula is the bottom layer's (core/scale_layout.h). `cols` is always the number of
// scale columns (K/16).

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "core/scale_layout.h"

namespace h3 {

// linear: [rows, cols] row-major. Result: SwizzledScaleBytes(rows, cols)
// bytes, padding 0x00. Aborts when linear.size() != rows * cols.
std::vector<uint8_t> SwizzleScales(absl::Span<const uint8_t> linear, int64_t rows, int64_t cols);

// swizzled: SwizzledScaleBytes(rows, cols) bytes. Result: [rows, cols]
// (padding ignored). Aborts when the size is wrong.
std::vector<uint8_t> UnswizzleScales(absl::Span<const uint8_t> swizzled, int64_t rows,
                                     int64_t cols);

}  // namespace h3

#endif  // EMULATOR_SWIZZLE_H_
