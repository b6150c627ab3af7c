#ifndef EMULATOR_OP_H_
#define EMULATOR_OP_H_

// The whole op (docs/contract.md section 6) with the GPU op's arguments:
// quantize attn_out (section 3) -> block-scaled GEMM -> gated residual.

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/shape.h"

namespace h3 {

// One field per operand of core/operands.def, of its name, in its order: OpInputs the IN rows
// (an array as a span of its elements, empty for an optional one not given; a SCALAR as its
// float), OpOutputs the OUT rows (an empty span: not wanted, for an optional one). residual may
// alias out (contract section 9).
#define H3_OP_CTYPE_BF16 uint16_t  // bf16 bit patterns
#define H3_OP_CTYPE_U8 uint8_t
#define H3_OP_CTYPE_SF8 uint8_t  // ue4m3 bytes
#define H3_OP_CTYPE_I32 int32_t
#define H3_OP_CTYPE_F32 float
#define H3_OP_CTYPE_FLAGS uint8_t
#define H3_OP_INPUT_DIMS2(t, name) absl::Span<const t> name;
#define H3_OP_INPUT_DIMS1(t, name) absl::Span<const t> name;
#define H3_OP_INPUT_SWIZZLED_SF(t, name) absl::Span<const t> name;
#define H3_OP_INPUT_SCALAR(t, name) float name = 0.f;
#define H3_OP_INPUT_FLAG_BYTES(t, name)
#define H3_OP_IN_ROLE_IN(shape, dtype, name) H3_OP_INPUT_##shape(H3_OP_CTYPE_##dtype, name)
#define H3_OP_IN_ROLE_OUT(shape, dtype, name)
#define H3_OP_IN_ROLE_WORKSPACE(shape, dtype, name)
#define H3_OP_OUT_ROLE_IN(shape, dtype, name)
#define H3_OP_OUT_ROLE_OUT(shape, dtype, name) absl::Span<H3_OP_CTYPE_##dtype> name;
#define H3_OP_OUT_ROLE_WORKSPACE(shape, dtype, name)

struct OpInputs {
  OpShape shape;
#define H3_OPERAND(name, dtype, shape, d0, d1, presence, role, ...) \
  H3_OP_IN_ROLE_##role(shape, dtype, name)
#include "core/operands.def"
#undef H3_OPERAND
};

struct OpOutputs {
#define H3_OPERAND(name, dtype, shape, d0, d1, presence, role, ...) \
  H3_OP_OUT_ROLE_##role(shape, dtype, name)
#include "core/operands.def"
#undef H3_OPERAND
};

enum class GemmPath {
  kFastF32,  // Eigen f32 GEMM (summation order Eigen's; within the bound)
  kExact,    // exact accumulator rounded once to f32
};

// Validates everything first (InvalidArgument naming the argument, the
// expected and the given value; nothing is written on error): the shape, every
// span's size (act_q/act_sf may also be empty), and both global scales (finite
// and > 0). residual may be the same memory as out.
// The optional quality rows of OpInputs (act_smooth, lora_down, lora_up; contract sections
// 12, 13) are computed where given (quality.h RunOpQuality); empty: the seed's op, bit for bit.
absl::Status RunOp(const OpInputs& in, const OpOutputs& out, GemmPath path = GemmPath::kFastF32);

// The validation part of RunOp, for other backends and tools.
absl::Status ValidateOpInputs(const OpInputs& in);
absl::Status ValidateOpOutputs(const OpShape& shape, const OpOutputs& out);

}  // namespace h3

#endif  // EMULATOR_OP_H_
