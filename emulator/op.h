#ifndef EMULATOR_OP_H_
#define EMULATOR_OP_H_

// The whole op (docs/contract.md section 6) with the GPU op's arguments:
// quantize attn_out (section 3) -> block-scaled GEMM -> gated residual.

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/shape.h"

namespace h3 {

struct OpInputs {
  OpShape shape;
  absl::Span<const uint16_t> attn_out;    // [m, k] bf16
  absl::Span<const uint8_t> o_weight_q;   // [n, k/2]
  absl::Span<const uint8_t> o_weight_sf;  // SwizzledScaleBytes(n, k/16)
  float o_weight_global_scale;
  float act_global_scale;
  absl::Span<const uint16_t> gate;       // [g, n] bf16
  absl::Span<const int32_t> gate_index;  // [m]
  absl::Span<const uint16_t> residual;   // [m, n] bf16 (may alias out)
};

struct OpOutputs {
  absl::Span<uint16_t> out;    // [m, n]
  absl::Span<uint8_t> act_q;   // [m, k/2], or empty: not wanted
  absl::Span<uint8_t> act_sf;  // [m, k/16] linear, or empty
};

enum class GemmPath {
  kFastF32,  // Eigen f32 GEMM (summation order Eigen's; within the bound)
  kExact,    // exact accumulator rounded once to f32
};

// Validates everything first (InvalidArgument naming the argument, the
// expected and the given value; nothing is written on error): the shape, every
// span's size (act_q/act_sf may also be empty), and both global scales (finite
// and > 0). residual may be the same memory as out.
absl::Status RunOp(const OpInputs& in, const OpOutputs& out, GemmPath path = GemmPath::kFastF32);

// The validation part of RunOp, for other backends and tools.
absl::Status ValidateOpInputs(const OpInputs& in);
absl::Status ValidateOpOutputs(const OpShape& shape, const OpOutputs& out);

}  // namespace h3

#endif  // EMULATOR_OP_H_
