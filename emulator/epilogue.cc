#include "emulator/epilogue.h"

#include "emulator/formats.h"

// Compiled with -ffp-contract=off: gate * o and residual + t are separate
// roundings (no FMA).

namespace h3 {

float EpilogueAlpha(float act_global_scale, float w_global_scale) {
  volatile float prod = act_global_scale * w_global_scale;  // rounding 1
  volatile float alpha = 1.0f / prod;                       // rounding 2
  return alpha;
}

uint16_t EpilogueElement(float acc, float alpha, uint16_t gate, uint16_t residual) {
  volatile float o = acc * alpha;  // f32 rounding
  return EpilogueFromO(o, gate, residual);
}

uint16_t EpilogueFromO(float o, uint16_t gate, uint16_t residual) {
  volatile float go = Bf16ToF32(gate) * o;                  // f32 rounding
  const uint16_t t = F32ToBf16(go);                         // bf16 rounding
  volatile float sum = Bf16ToF32(residual) + Bf16ToF32(t);  // f32 rounding
  return F32ToBf16(sum);                                    // bf16 rounding
}

void EpilogueRow(const float* acc, float alpha, absl::Span<const uint16_t> gate, int64_t g,
                 int64_t n, int32_t gate_index, const uint16_t* residual, uint16_t* out) {
  if (!GateIndexInRange(gate_index, g)) {
    // Bit-for-bit copy; element-wise so out == residual is fine.
    for (int64_t j = 0; j < n; ++j) out[j] = residual[j];
    return;
  }
  const uint16_t* gate_row = gate.data() + static_cast<int64_t>(gate_index) * n;
  for (int64_t j = 0; j < n; ++j) {
    const uint16_t r = residual[j];  // read before the (possibly aliased) write
    out[j] = EpilogueElement(acc[j], alpha, gate_row[j], r);
  }
}

void EpilogueRowFromO(const float* o, absl::Span<const uint16_t> gate, int64_t g, int64_t n,
                      int32_t gate_index, const uint16_t* residual, uint16_t* out) {
  if (!GateIndexInRange(gate_index, g)) {
    for (int64_t j = 0; j < n; ++j) out[j] = residual[j];
    return;
  }
  const uint16_t* gate_row = gate.data() + static_cast<int64_t>(gate_index) * n;
  for (int64_t j = 0; j < n; ++j) {
    const uint16_t r = residual[j];  // read before the (possibly aliased) write
    out[j] = EpilogueFromO(o[j], gate_row[j], r);
  }
}

}  // namespace h3
