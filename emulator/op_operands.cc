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
  if (ops.o_weight_global_scale.data == nullptr) {
    // A host value is checked at any M, as the GPU host API does.
    if (absl::Status s = CheckGlobalScale("o_weight_global_scale", ops.o_weight_global_scale_value);
        !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("minimax_h3_nvfp4_out_proj: ", s.message()));
    }
  }
  const Operand& residual = ops.residual.data != nullptr ? ops.residual : ops.out;
  OpInputs in;
  in.shape = OpShape{d.m, d.n, d.k, d.g};
  in.attn_out = In<uint16_t>(ops.attn_out, d.m * d.k);
  in.o_weight_q = In<uint8_t>(ops.o_weight_q, d.n * (d.k / 2));
  in.o_weight_sf = In<uint8_t>(ops.o_weight_sf, SwizzledScaleBytes(d.n, d.k / 16));
  in.o_weight_global_scale = ops.o_weight_global_scale.data != nullptr
                                 ? *static_cast<const float*>(ops.o_weight_global_scale.data)
                                 : ops.o_weight_global_scale_value;
  // M = 0 reads no operand (required ones may be null there): the scale is then not read.
  in.act_global_scale =
      ops.act_global_scale.data != nullptr ? *static_cast<const float*>(ops.act_global_scale.data)
                                           : 1.f;
  in.gate = In<uint16_t>(ops.gate, d.g * d.n);
  in.gate_index = In<int32_t>(ops.gate_index, d.m);
  in.residual = In<uint16_t>(residual, d.m * d.n);
  return in;
}

absl::Status RunOpOnOperands(const OperandSet& ops, GemmPath path) {
  absl::StatusOr<OpInputs> in = OpInputsOf(ops, /*with_outputs=*/true);
  if (!in.ok()) return in.status();
  const OpShape& s = in->shape;
  if (s.m == 0) return absl::OkStatus();  // nothing to read or write
  OpOutputs out;
  out.out = Out<uint16_t>(ops.out, s.m * s.n);
  out.act_q = Out<uint8_t>(ops.act_q, s.m * (s.k / 2));
  out.act_sf = Out<uint8_t>(ops.act_sf, s.m * (s.k / 16));
  return RunOp(*in, out, path);
}

}  // namespace h3
