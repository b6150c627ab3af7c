#include "emulator/quantize.h"

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "emulator/formats.h"

// This file is compiled with -ffp-contract=off; every f32 operation below is
// one IEEE binary32 operation rounded to nearest-even, as docs/contract.md section 3
// spells it out.

namespace h3 {

void QuantizeBlock16(const float x[16], float gs, uint8_t* sf, uint8_t packed[8]) {
  // Step 1: amax = max |x_i|, NaN-ignoring, so it is NaN only when all 16 are
  // NaN. Written out rather than with fmaxf: glibc's fmaxf returns NaN for a
  // signalling NaN operand (IEEE maxNum), and bf16 inputs can carry those.
  float amax = std::numeric_limits<float>::quiet_NaN();
  for (int i = 0; i < 16; ++i) {
    const float a = std::fabs(x[i]);
    if (std::isnan(a)) continue;
    if (std::isnan(amax) || a > amax) amax = a;
  }
  // Step 2: sfv = amax * (gs * RN(1/6)), two roundings.
  const float rcp6 = F32FromBits(kRcp6Bits);
  volatile float gs_rcp6 = gs * rcp6;   // rounding 1
  volatile float sfv = amax * gs_rcp6;  // rounding 2
  // Step 3: UE4M3 scale (satfinite, NaN -> 0x7F) and its exact value.
  const uint8_t sf_byte = F32ToE4M3(sfv);
  const float sfd = E4M3ToF32(sf_byte);
  // Step 4: os = 0 if amax == 0 else fminf(1 / (sfd * (1 / gs)), FLT_MAX).
  float os = 0.0f;
  if (!(amax == 0.0f)) {                  // a NaN amax takes this branch (NaN == 0 is false)
    volatile float rcp_gs = 1.0f / gs;    // rounding 3
    volatile float denom = sfd * rcp_gs;  // rounding 4
    volatile float inv = 1.0f / denom;    // rounding 5
    os = std::fmin(inv, FLT_MAX);         // fminf ignores a NaN inv
  }
  // Step 5 and 6: codes and nibble packing (even index -> low nibble).
  for (int j = 0; j < 8; ++j) {
    volatile float lo = x[2 * j] * os;      // rounding 6 (even element)
    volatile float hi = x[2 * j + 1] * os;  // rounding 6 (odd element)
    packed[j] = static_cast<uint8_t>(F32ToE2M1(lo) | (F32ToE2M1(hi) << 4));
  }
  *sf = sf_byte;
}

namespace {

inline void QuantizeOneRow(const uint16_t* xrow, int64_t cols, float gs, uint8_t* codes_row,
                           uint8_t* scales_row) {
  float block[16];
  for (int64_t b = 0; b < cols / 16; ++b) {
    // bf16 -> f32 is exact.
    for (int i = 0; i < 16; ++i) block[i] = Bf16ToF32(xrow[16 * b + i]);
    QuantizeBlock16(block, gs, &scales_row[b], &codes_row[8 * b]);
  }
}

}  // namespace

void QuantizeRows(absl::Span<const uint16_t> x, int64_t rows, int64_t cols, float gs,
                  absl::Span<uint8_t> codes, absl::Span<uint8_t> scales) {
  if (rows <= 0 || cols <= 0 || cols % 16 != 0 || static_cast<int64_t>(x.size()) < rows * cols ||
      static_cast<int64_t>(codes.size()) < rows * (cols / 2) ||
      static_cast<int64_t>(scales.size()) < rows * (cols / 16)) {
    if (rows == 0) return;
    std::abort();  // programming error: the op validates sizes before this
  }
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    QuantizeOneRow(x.data() + r * cols, cols, gs, codes.data() + r * (cols / 2),
                   scales.data() + r * (cols / 16));
  }
}

void QuantizeSelectedRows(absl::Span<const uint16_t> x, int64_t cols, float gs,
                          absl::Span<const int64_t> row_ids, absl::Span<uint8_t> codes,
                          absl::Span<uint8_t> scales) {
  const int64_t n = static_cast<int64_t>(row_ids.size());
  if (cols <= 0 || cols % 16 != 0 || static_cast<int64_t>(codes.size()) < n * (cols / 2) ||
      static_cast<int64_t>(scales.size()) < n * (cols / 16)) {
    if (n == 0) return;
    std::abort();
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = row_ids[i];
    if (r < 0 || (r + 1) * cols > static_cast<int64_t>(x.size())) std::abort();
  }
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    QuantizeOneRow(x.data() + row_ids[i] * cols, cols, gs, codes.data() + i * (cols / 2),
                   scales.data() + i * (cols / 16));
  }
}

}  // namespace h3
