#ifndef EMULATOR_OP_OPERANDS_H_
#define EMULATOR_OP_OPERANDS_H_

// The emulator on the op's operands as the C ABI carries them (core/operands.h: host memory, each
// with its shape): the table's validation with the emulator's rules (the contract's shapes, any
// alignment; ready_flags ignored), then the op of op.h.

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/operands.h"
#include "emulator/op.h"

namespace h3 {

// The emulator's inputs from validated operands (residual null: out's memory, in place).
// with_outputs false: only the inputs are checked (out, act_q, act_sf are not read).
absl::StatusOr<OpInputs> OpInputsOf(const OperandSet& ops, bool with_outputs);

// The whole op (RunOp) on `ops`: out, and act_q / act_sf where given, written.
absl::Status RunOpOnOperands(const OperandSet& ops, GemmPath path);

}  // namespace h3

#endif  // EMULATOR_OP_OPERANDS_H_
