#ifndef H3_CORE_OPERANDS_H_
#define H3_CORE_OPERANDS_H_

// The op's operands as data (core/operands.def, one row each) and the one validation every
// backend runs on them, CUTLASS's can_implement idea: the GPU host API (kernels/out_proj.cc) and
// the emulator's array entry point (emulator/op_operands.h) call ValidateOperands with their own
// OperandRules; the C ABI and Python only carry the operands to them.
//
// What the table derives, so that a new row needs no other edit to be carried and checked:
// OperandSet (the host-side operands with their shapes), the C ABI's H3OutProjArgs fields
// (python/native/capi.h), the kernel's parameters (kernels/device/params.h) and their copy, the
// Python mirror (python/gen_operands.py), and every check below with its words.

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

namespace h3 {

enum class DType : uint8_t { BF16, U8, SF8, I32, F32, FLAGS };
enum class OperandShape : uint8_t { DIMS2, DIMS1, SCALAR, SWIZZLED_SF, FLAG_BYTES };
enum class Extent : uint8_t { X, M, N, K, G, R, K_2, K_16 };
enum class Presence : uint8_t { REQUIRED, OPTIONAL, OR_VALUE, IN_PLACE };
enum class Role : uint8_t { IN, OUT, WORKSPACE };

struct OperandSpec {
  const char* name;
  DType dtype;
  OperandShape shape;
  Extent dims[2];
  Presence presence;
  Role role;
  int gpu_align;
  const char* what;
};

inline constexpr OperandSpec kOperands[] = {
#define H3_OPERAND(name, dtype, shape, d0, d1, presence, role, align, what)                 \
  {#name,           DType::dtype,       OperandShape::shape, {Extent::d0, Extent::d1}, \
   Presence::presence, Role::role, align, what},
#include "core/operands.def"
#undef H3_OPERAND
};

enum class OperandId : int {
#define H3_OPERAND(name, ...) name,
#include "core/operands.def"
#undef H3_OPERAND
};
inline constexpr int kOperandCount = static_cast<int>(sizeof(kOperands) / sizeof(kOperands[0]));

// One dense row-major array: its address (host or device memory) and its dimensions, as the C
// ABI's H3Array carries it. data == nullptr: not given (for an optional operand).
struct Operand {
  const void* data = nullptr;
  int64_t ndim = 0;
  int64_t shape[4] = {0, 0, 0, 0};

  static Operand Of(const void* data, std::initializer_list<int64_t> shape);
  int64_t numel() const;
};

// Generated field decorations per presence: an OR_VALUE operand carries its host value too.
#define H3_OPERAND_VALUE_REQUIRED(name)
#define H3_OPERAND_VALUE_OPTIONAL(name)
#define H3_OPERAND_VALUE_IN_PLACE(name)
#define H3_OPERAND_VALUE_OR_VALUE(name) float name##_value = 0.f;

// Every operand of one call, by name (set.attn_out) or by id (set[OperandId::attn_out]).
struct OperandSet {
#define H3_OPERAND(name, dtype, shape, d0, d1, presence, ...) \
  Operand name;                                               \
  H3_OPERAND_VALUE_##presence(name)
#include "core/operands.def"
#undef H3_OPERAND

  const Operand& operator[](OperandId id) const;
  Operand& operator[](OperandId id);
};

// M, N, K, G, R as the operands fix them (the table's defining rows). r: the low-rank branch's
// rank, lora_down's first extent; 0 where lora_down is not given (contract section 13).
struct OpDims {
  int64_t m = 0, n = 0, k = 0, g = 0, r = 0;
};

// Contract section 13: r is a multiple of 16 in 16..64 where the branch is given.
inline constexpr int64_t kLoraRankMin = 16, kLoraRankMax = 64, kLoraRankStep = 16;

// What a backend adds to the table's checks.
struct OperandRules {
  // The backend's shape rule on (m, n, k, g), called once they are read from the defining rows
  // and before any extent derived from them (K/2, K/16) is checked; its errors stand as given.
  absl::FunctionRef<absl::Status(const OpDims&)> shape_rule;
  // "a device pointer" / "host memory": how a null operand is refused.
  const char* memory;
  // Whether each given operand's address must meet its row's gpu_align.
  bool check_alignment;
  // Bytes of the FLAG_BYTES workspace for m rows; null: the backend ignores such operands.
  int64_t (*flag_bytes)(int64_t m);
  // Only the IN rows are checked (the contract's envelope of out reads inputs alone).
  bool inputs_only = false;
};

// The problem's dims from the defining rows, then: every operand of 0 to 4 dimensions, the
// backend's shape rule, the contract's rule on R (a multiple of 16 in 16..64) and rows sharing
// an optional row's symbol given together (lora_down, lora_up), each given operand's shape
// against M, N, K, G, R (in table order); and
// where M > 0 (M = 0 reads and writes nothing): required operands given, alignment, and the
// contract's aliasing rule (section 9). Errors: "minimax_h3_nvfp4_out_proj: <operand> must be
// <expected>, got <given>", shapes with where each symbol came from.
absl::Status ValidateOperands(const OperandSet& ops, const OperandRules& rules, OpDims* dims);

// "M = 37, K = 7104 from attn_out [M, K], N = 128 from o_weight_q [N, K/2]": where the symbols
// in `symbols` (any of "MNKGR") came from, for messages.
std::string DimensionSources(const OpDims& dims, const char* symbols);

// Bytes of operand `id` for `dims` (null data: 0), as the aliasing check sizes it.
int64_t OperandBytes(const OperandSet& ops, OperandId id, const OpDims& dims,
                     int64_t (*flag_bytes)(int64_t m));

// Bytes of a DIMS, SCALAR or SWIZZLED_SF operand `id` as the table sizes it for `dims`, given
// or not (a FLAG_BYTES one: 0, its size is the backend's).
int64_t OperandTableBytes(OperandId id, const OpDims& dims);

}  // namespace h3

#endif  // H3_CORE_OPERANDS_H_
