#include "emulator/op_operands.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/global_scale.h"
#include "core/scale_layout.h"
#include "core/shape.h"

namespace h3 {
namespace {

template <typename T>
absl::Span<const T> In(const Operand& a, int64_t n) {
  return absl::Span<const T>(static_cast<const T*>(a.data), static_cast<size_t>(n));
}

template <typename T>
absl::Span<T> Out(const Operand& a, int64_t n) {
  if (a.data == nullptr) return absl::Span<T>();  // not wanted
  return absl::Span<T>(static_cast<T*>(const_cast<void*>(a.data)), static_cast<size_t>(n));
}

absl::Status ContractShape(const OpDims& d) { return ValidateShape(OpShape{d.m, d.n, d.k, d.g}); }

}  // namespace

absl::StatusOr<OpInputs> OpInputsOf(const OperandSet& ops, bool with_outputs) {
  OperandRules rules{ContractShape, "host memory", /*check_alignment=*/false,
                     /*flag_bytes=*/nullptr};
  rules.inputs_only = !with_outputs;
  OpDims d;
  if (absl::Status s = ValidateOperands(ops, rules, &d); !s.ok()) return s;
  if (!with_outputs && ops.residual.data == nullptr && d.m > 0) {
    // In place, residual is out's memory, which an inputs-only call does not check.
    return absl::InvalidArgumentError(
        "minimax_h3_nvfp4_out_proj: residual must be host memory where out is not read (the "
        "envelope of out), got null");
  }
  if (ops.o_weight_global_scale.data == nullptr) {
    // A host value is checked at any M, as the GPU host API does.
    if (absl::Status s = CheckGlobalScale("o_weight_global_scale", ops.o_weight_global_scale_value);
        !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("minimax_h3_nvfp4_out_proj: ", s.message()));
    }
  }
  // Each IN row of the table, sized as validated: an array as a span (an IN_PLACE one not given
  // is out's memory; an OPTIONAL one not given, and any at M = 0 left null, an empty span), a
  // SCALAR as its value (the host value of an OR_VALUE one not given; at
  // M = 0 a required one may be null and is not read).
  OpInputs in;
  in.shape = OpShape{d.m, d.n, d.k, d.g};
#define H3_OP_SOURCE_REQUIRED(name) ops.name
#define H3_OP_SOURCE_OPTIONAL(name) ops.name
#define H3_OP_SOURCE_OR_VALUE(name) ops.name
#define H3_OP_SOURCE_IN_PLACE(name) (ops.name.data != nullptr ? ops.name : ops.out)
#define H3_OP_VALUE_REQUIRED(name) 0.f
#define H3_OP_VALUE_OPTIONAL(name) 0.f
#define H3_OP_VALUE_IN_PLACE(name) 0.f
#define H3_OP_VALUE_OR_VALUE(name) ops.name##_value
#define H3_OP_SPAN(t, name, presence)                                                            \
  {                                                                                              \
    const Operand& src = H3_OP_SOURCE_##presence(name);                                          \
    in.name =                                                                                    \
        In<t>(src, src.data != nullptr ? OperandTableBytes(OperandId::name, d) / sizeof(t) : 0); \
  }
#define H3_OP_FILL_DIMS2(t, name, presence) H3_OP_SPAN(t, name, presence)
#define H3_OP_FILL_DIMS1(t, name, presence) H3_OP_SPAN(t, name, presence)
#define H3_OP_FILL_SWIZZLED_SF(t, name, presence) H3_OP_SPAN(t, name, presence)
#define H3_OP_FILL_SCALAR(t, name, presence)                                     \
  in.name = ops.name.data != nullptr ? *static_cast<const float*>(ops.name.data) \
                                     : H3_OP_VALUE_##presence(name);
#define H3_OP_FILL_FLAG_BYTES(t, name, presence)
#define H3_OP_FILL_ROLE_IN(shape, dtype, name, presence) \
  H3_OP_FILL_##shape(H3_OP_CTYPE_##dtype, name, presence)
#define H3_OP_FILL_ROLE_OUT(shape, dtype, name, presence)
#define H3_OP_FILL_ROLE_WORKSPACE(shape, dtype, name, presence)
#define H3_OPERAND(name, dtype, shape, d0, d1, presence, role, ...) \
  H3_OP_FILL_ROLE_##role(shape, dtype, name, presence)
#include "core/operands.def"
#undef H3_OPERAND
  return in;
}

absl::Status RunOpOnOperands(const OperandSet& ops, GemmPath path) {
  absl::StatusOr<OpInputs> in = OpInputsOf(ops, /*with_outputs=*/true);
  if (!in.ok()) return in.status();
  if (in->shape.m == 0) return absl::OkStatus();  // nothing to read or write
  OpDims d{in->shape.m, in->shape.n, in->shape.k, in->shape.g};
  OpOutputs out;
#define H3_OP_WRITE_ROLE_IN(dtype, name)
#define H3_OP_WRITE_ROLE_WORKSPACE(dtype, name)
#define H3_OP_WRITE_ROLE_OUT(dtype, name)        \
  out.name = Out<H3_OP_CTYPE_##dtype>(           \
      ops.name, OperandBytes(ops, OperandId::name, d, nullptr) / sizeof(H3_OP_CTYPE_##dtype));
#define H3_OPERAND(name, dtype, shape, d0, d1, presence, role, ...) \
  H3_OP_WRITE_ROLE_##role(dtype, name)
#include "core/operands.def"
#undef H3_OPERAND
  return RunOp(*in, out, path);
}

}  // namespace h3
