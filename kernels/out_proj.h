#ifndef H3_KERNELS_OUT_PROJ_H_
#define H3_KERNELS_OUT_PROJ_H_

// minimax_h3_nvfp4_out_proj on the GPU (contract: docs/contract.md). One launch of a
// persistent kernel: NVFP4 quantization of attn_out overlapped with the block-scaled GEMM and the
// fused gated-residual epilogue.
//
// sm_120 (RTX 5090 / RTX PRO 6000) runs the native build (mma.sync kind::mxf4nvf4); sm_90
// (H100/H200) runs the validation build of the same kernel source with the block-scaled MMA and
// the e2m1 conversion emulated exactly. Other devices: Unimplemented.
//
// Concurrency and CUDA graphs: each call has its own ready-flag workspace (the words through which
// the quantizer warps tell the load warps that an m-tile of act_q/act_sf is complete; see
// kernels/device/ready_flags.h). The caller passes it (OutProjArgs::ready_flags) or the op allocates it
// stream-ordered (cudaMallocAsync / cudaFreeAsync on `stream`); either way the op zeroes it with
// cudaMemsetAsync on `stream` before the launch (unless the caller says it is zero already:
// OutProjArgs::ready_flags_zeroed), and the kernel leaves it zero. Nothing is shared between
// calls, so calls on
// different streams may run concurrently, and every call - the first in a process included - may
// be captured into a CUDA graph: nothing in kAsync mode synchronizes, and the one synchronous
// allocation (a context's stall report, kernels/stall_host.h) is never made while `stream` is
// captured and runs in relaxed capture mode, invisible to captures on other threads.
// A caller-provided workspace must not be used by two calls that may run at the same time.

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/operands.h"
#include "core/shape.h"
#include "kernels/device/granularity.h"  // kOutProjNMultiple, kOutProjKMultiple, kOutProjTileM
#include "kernels/device/tiles.h"        // OutProjTile, the tile-config registry

namespace h3 {

// sm_90 only (ignored on sm_120): which exact emulation of the block-scaled MMA runs.
//  kFaithful: the sm_120f kernel itself - its tile config, pipeline depth, ldmatrix fragments,
//    scale words and scale lanes - with each block-scaled mma.sync emulated from its own
//    registers (bf16 mma.sync). This is what validates the SM120 code path; the default.
//  kFast: the same producers, TMA pipeline and epilogue, with each k-step's tiles dequantized
//    once per CTA into shared memory and multiplied by wgmma (4 stages): a faster Hopper path
//    whose consumer loop is NOT the SM120 one.
enum class Sm90Emulation { kFaithful, kFast };

// The operands (core/operands.def: OperandSet's fields, each a device pointer with its shape,
// e.g. args.attn_out = Operand::Of(ptr, {m, k})) and the options. M, K come from attn_out, N from
// o_weight_q, G from gate; every other operand is checked against them. Optional operands:
// o_weight_global_scale (null: o_weight_global_scale_value, a host float), residual (null: out
// holds the residual, in place), act_q with act_sf (workspaces the op fills with the
// activation's codes and linear scales; else the op allocates them), ready_flags (a workspace of
// at least OutProjReadyFlagBytes(m) bytes, 16-byte aligned; its contents on entry do not matter
// - the op zeroes it on the stream - unless ready_flags_zeroed says they are zero already),
// act_smooth (contract section 12), lora_down with lora_up (section 13; r = lora_down's rows in
// {16, 32, 48, 64}; the op allocates the branch's partial sums, NumChunks(k) * m * r floats, and
// l, m * r bf16, in the same stream-ordered workspace as the ready flags).
struct OutProjArgs : OperandSet {
  // True: ready_flags is all zero where this call's kernel starts, and the op skips its
  // cudaMemsetAsync (one stream operation fewer; 1.4 us of host time on the H200's host). Every
  // kernel leaves the buffer all zero when it completes (its last CTA zeroes what the grid
  // wrote, ready_flags.h), so a buffer zeroed by a successful call with m > 0 and then used only
  // by this op's calls on one stream qualifies (a call with m == 0 touches nothing: it zeroes
  // nothing either). Needs ready_flags. A buffer that is not zero makes the kernel wrong or
  // stall (bounded: it traps, kernels/device/stall.h); after any failed call, zero it again.
  bool ready_flags_zeroed = false;
  Sm90Emulation sm90_emulation = Sm90Emulation::kFaithful;  // sm_90 only, see above
  // The SM120 kernel's tile config (sm_120f, and the faithful sm_90 emulation of it; the fast
  // sm_90 build ignores it): kAuto or an entry of the registry, kernels/tiles.h. All are exact to
  // the same contract; they differ in speed only. kAuto resolves per call on the host, without
  // synchronizing: the tuning cache's winner for this device, N, K and M's bucket (the file
  // Python's tune and the bench's --write_tune_cache write: $MINIMAX_H3_NVFP4_TUNE_CACHE, else
  // ~/.cache/minimax_h3_nvfp4/tune.json, read once per process), else a heuristic
  // (kernels/tuning/tune_cache.h). A cache that is corrupt or of another version is ignored with one
  // warning on stderr.
  OutProjTile tile = OutProjTile::kAuto;
};

// kChecked synchronizes the stream, rejects non-finite or <= 0 global scales and non-finite
// act_smooth factors before launching, and synchronizes again after the launch to report
// execution errors. kAsync reads neither: such values are invalid input (contract sections 9, 12).
enum class CheckMode { kAsync, kChecked };

// Supported shapes: 0 <= m <= kOutProjMaxM (0 is a no-op: no operand is read, written or
// required), n a positive multiple of 128, k a positive multiple of 256, g >= 1. Every check of
// the operands is here (core/operands.h ValidateOperands with this backend's rules: shapes,
// presence, alignment - 16 bytes where TMA or 16-byte vectors read, else 4 - and aliasing),
// before anything is enqueued. Errors name the argument, the expected and the given value; on
// error nothing is written.
absl::Status MinimaxH3Nvfp4OutProj(const OutProjArgs& args, cudaStream_t stream,
                                   CheckMode mode = CheckMode::kAsync);

// Bytes of the per-call ready-flag workspace for m rows (a multiple of 16).
int64_t OutProjReadyFlagBytes(int64_t m);

// Every wait in the kernel is bounded (kernels/device/stall.h): past MINIMAX_H3_NVFP4_WAIT_LIMIT_MS
// (default 60 s in release builds, 10 s with assertions on) the kernel records which CTA, warp
// role, tile, barrier or ready flag it waited on, and traps: a hang becomes an error. In
// CheckMode::kChecked the error message carries that record; in kAsync mode the fault shows at
// the caller's next synchronization, and OutProjStallStatus() then returns the record (OK when
// the current context has none).
absl::Status OutProjStallStatus();

// Which build runs on the current device ("sm_120f native" / "sm_90a validation (emulated
// block-scaled MMA)"), or an error naming an unsupported device.
absl::StatusOr<std::string> OutProjBackendName(
    Sm90Emulation sm90_emulation = Sm90Emulation::kFaithful);

}  // namespace h3

#endif  // H3_KERNELS_OUT_PROJ_H_
