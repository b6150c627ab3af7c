#ifndef EMULATOR_EPILOGUE_H_
#define EMULATOR_EPILOGUE_H_

// The gated-residual epilogue of docs/contract.md section 6.

#include <cstdint>

#include "absl/types/span.h"

namespace h3 {

// alpha = 1 / (act_gs * w_gs): two f32 roundings.
float EpilogueAlpha(float act_global_scale, float w_global_scale);

// One element of a row whose gate index is in range:
//   o = acc * alpha (f32, not rounded to bf16), t = bf16(f32(gate) * o),
//   out = bf16(f32(residual) + f32(t)).
uint16_t EpilogueElement(float acc, float alpha, uint16_t gate, uint16_t residual);

// The same from o (the low-rank branch's v of section 13 in its place): t = bf16(f32(gate) * o),
// out = bf16(f32(residual) + f32(t)). EpilogueElement is o = acc * alpha, then this.
uint16_t EpilogueFromO(float o, uint16_t gate, uint16_t residual);

inline bool GateIndexInRange(int32_t gi, int64_t g) { return gi >= 0 && gi < g; }

// One output row: for gate_index in [0, g) the formula above, otherwise out =
// residual bit for bit (even where acc is NaN or Inf). acc: [n]; gate: [g, n];
// residual and out: [n] and may be the same memory (each element is read
// before it is written).
void EpilogueRow(const float* acc, float alpha, absl::Span<const uint16_t> gate, int64_t g,
                 int64_t n, int32_t gate_index, const uint16_t* residual, uint16_t* out);

// EpilogueRow from o (or v) instead of acc: o: [n].
void EpilogueRowFromO(const float* o, absl::Span<const uint16_t> gate, int64_t g, int64_t n,
                      int32_t gate_index, const uint16_t* residual, uint16_t* out);

}  // namespace h3

#endif  // EMULATOR_EPILOGUE_H_
