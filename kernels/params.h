#ifndef H3_KERNELS_PARAMS_H_
#define H3_KERNELS_PARAMS_H_

// The fused kernel's parameters: filled once by the host API (out_proj.cc) from validated
// arguments and workspaces, passed unchanged through the launcher (which adds only the TMA
// descriptors, launch.cuh) to every warp role of the kernel. Plain C++: g++ and nvcc read it.

#include <cstdint>

#include "kernels/stall.h"

namespace h3::kernels {

struct OutProjParams {
  int64_t m = 0;
  int n = 0, k = 0, g = 0;
  const uint16_t* attn_out = nullptr;  // bf16 [m, k]
  const uint8_t* w_q = nullptr;        // [n, k/2] e2m1 codes (the launcher's TMA map reads it)
  const uint8_t* w_sf = nullptr;       // 128x4-swizzled ue4m3 (contract section 4)
  float w_gs = 0.f;                    // the weight's global scale when w_gs_dev is null
  const float* w_gs_dev = nullptr;
  const float* act_gs = nullptr;  // [1]
  const uint16_t* gate = nullptr;       // bf16 [g, n]
  const int32_t* gate_index = nullptr;  // [m]
  const uint16_t* residual = nullptr;   // bf16 [m, n]; may equal out (contract section 9)
  uint16_t* out = nullptr;              // bf16 [m, n]
  uint8_t* act_q = nullptr;             // [m, k/2], the caller's or the host API's workspace
  uint8_t* act_sf = nullptr;            // [m, k/16] linear
  uint32_t* ready_flags = nullptr;      // ready_flags.h: all zero at the start, left so
  // 16-byte aligned residual: the load warp prefetches each tile's rows to L2 (bulk prefetches
  // need 16-byte aligned rows; n % 8 == 0 always).
  bool prefetch_residual = false;
  // gate, residual and out 16-byte aligned: the epilogue moves 16 bytes per access (epilogue.cuh).
  bool vec16_epilogue = false;
  // Bounded waits (stall.h): a wait past wait_limit_ns (times its role's factor) writes *stall
  // (host-mapped; null: nothing is written) and traps.
  uint64_t wait_limit_ns = 0;
  StallReport* stall = nullptr;
};

}  // namespace h3::kernels

#endif  // H3_KERNELS_PARAMS_H_
