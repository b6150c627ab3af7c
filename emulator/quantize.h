#ifndef EMULATOR_QUANTIZE_H_
#define EMULATOR_QUANTIZE_H_

// Block-16 NVFP4 quantization, docs/contract.md section 3 (FlashInfer's exact variant).

#include <cstdint>

#include "absl/types/span.h"
#include "core/formats.h"  // kRcp6Bits

namespace h3 {

// One block of 16 values (x are f32, normally exact bf16 values) with global
// scale gs: writes the UE4M3 scale byte *sf and 8 packed bytes (low nibble =
// even index).
void QuantizeBlock16(const float x[16], float gs, uint8_t* sf, uint8_t packed[8]);

// x: bf16 [rows, cols] row-major, cols % 16 == 0. codes: [rows, cols/2];
// scales: linear [rows, cols/16]. Spans too small for the shape are a
// programming error and abort (RunOp validates sizes before calling this).
void QuantizeRows(absl::Span<const uint16_t> x, int64_t rows, int64_t cols, float gs,
                  absl::Span<uint8_t> codes, absl::Span<uint8_t> scales);

// Same as QuantizeRows for a subset of rows: row_ids[i] of x is written to
// row i of codes/scales.
void QuantizeSelectedRows(absl::Span<const uint16_t> x, int64_t cols, float gs,
                          absl::Span<const int64_t> row_ids, absl::Span<uint8_t> codes,
                          absl::Span<uint8_t> scales);

}  // namespace h3

#endif  // EMULATOR_QUANTIZE_H_
