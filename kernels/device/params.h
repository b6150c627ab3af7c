#ifndef H3_KERNELS_PARAMS_H_
#define H3_KERNELS_PARAMS_H_

// The fused kernel's parameters: filled once by the host API (out_proj.cc) from validated
// operands and workspaces, passed unchanged through the launcher (which adds only the TMA
// descriptors, launch.cuh) to every warp role of the kernel. Plain C++: g++ and nvcc read it.
// One pointer per operand of core/operands.def, of its name and element type (const where the
// kernel only reads it), in the table's order.

#include <cstdint>

#include "kernels/device/stall.h"

namespace h3::kernels {

#define H3_PARAM_CTYPE_BF16 uint16_t  // bf16 bit patterns
#define H3_PARAM_CTYPE_U8 uint8_t
#define H3_PARAM_CTYPE_SF8 uint8_t  // ue4m3 bytes
#define H3_PARAM_CTYPE_I32 int32_t
#define H3_PARAM_CTYPE_F32 float
#define H3_PARAM_CTYPE_FLAGS uint32_t  // ready_flags.h's words
#define H3_PARAM_PTR_IN(t) const t*
#define H3_PARAM_PTR_OUT(t) t*
#define H3_PARAM_PTR_WORKSPACE(t) t*
#define H3_PARAM_VALUE_REQUIRED(name)
#define H3_PARAM_VALUE_OPTIONAL(name)
#define H3_PARAM_VALUE_IN_PLACE(name)
#define H3_PARAM_VALUE_OR_VALUE(name) float name##_value = 0.f;  // used where `name` is null

struct OutProjParams {
  int64_t m = 0;
  int n = 0, k = 0, g = 0;
  // residual: never null here (the host API points it at out for an in-place call, contract
  // section 9); act_q, act_sf, ready_flags: the caller's or the host API's workspace.
#define H3_OPERAND(name, dtype, shape, d0, d1, presence, role, ...) \
  H3_PARAM_VALUE_##presence(name) H3_PARAM_PTR_##role(H3_PARAM_CTYPE_##dtype) name = nullptr;
#include "core/operands.def"
#undef H3_OPERAND
  // 16-byte aligned residual: the load warp prefetches each tile's rows to L2 (bulk prefetches
  // need 16-byte aligned rows; n % 8 == 0 always).
  bool prefetch_residual = false;
  // gate, residual and out 16-byte aligned: the epilogue moves 16 bytes per access (epilogue.cuh).
  bool vec16_epilogue = false;
  // Bounded waits (stall.h): a wait past wait_limit_ns (times its role's factor) writes *stall
  // (host-mapped; null: nothing is written) and traps.
  uint64_t wait_limit_ns = 0;
  StallReport* stall = nullptr;
  // The low-rank branch (contract section 13; lowrank.cuh): r, lora_down's rows (0 without the
  // branch), its down-projection's partial sums, [NumChunks(k)][m][r] f32, and l = bf16(lambda),
  // [m][r] (both the host API's workspace). Last: the fields above keep their offsets in every
  // instance.
  int lora_rank = 0;
  float* lora_partial = nullptr;
  uint16_t* lora_act = nullptr;
};

}  // namespace h3::kernels

#endif  // H3_KERNELS_PARAMS_H_
