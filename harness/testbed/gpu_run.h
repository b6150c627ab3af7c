#ifndef H3_HARNESS_TESTBED_GPU_RUN_H_
#define H3_HARNESS_TESTBED_GPU_RUN_H_

// The op on the GPU (kernels/out_proj.h) for the tests, the sweep, the tools and the benchmarks:
// a problem on the device with poisoned outputs, the op's arguments under the options a caller
// picks, the run, and the download of the compared rows.

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/shape.h"
#include "emulator/op.h"
#include "harness/testbed/compare.h"
#include "harness/testbed/cuda.h"
#include "kernels/out_proj.h"

namespace h3::testbed {

// Outputs are poisoned before a run: every byte 0xFF. For out that is bf16 0xFFFF, a NaN the
// epilogue never writes (it writes the canonical 0x7FFF); for act_sf 0xFF is not a scale the
// quantizer writes.
inline constexpr uint8_t kPoisonByte = 0xFF;
inline constexpr uint16_t kOutPoison = 0xFFFF;

// How the op is called.
struct RunOptions {
  bool out_is_residual = false;         // out and residual are one buffer (in-place update)
  bool caller_workspace = true;         // act_q/act_sf given (else null: the op allocates its own)
  bool weight_scale_on_device = false;  // o_weight_global_scale_dev instead of the host value
  Sm90Emulation sm90_emulation = Sm90Emulation::kFaithful;
  OutProjTile tile = OutProjTile::kAuto;
  CheckMode check = CheckMode::kChecked;
};

// The op's inputs on the device, with its outputs (out, and the act_q/act_sf workspaces).
struct DeviceProblem {
  OpShape shape;
  float o_weight_global_scale = 0.f;  // the host value
  DeviceBuffer<uint16_t> attn_out, gate, residual, out;
  DeviceBuffer<uint8_t> o_weight_q, o_weight_sf, act_q, act_sf;
  DeviceBuffer<int32_t> gate_index;
  DeviceBuffer<float> act_global_scale, o_weight_global_scale_dev;  // one value each
  DeviceBuffer<float> act_smooth;  // [k], null when the inputs have none
  DeviceBuffer<uint16_t> lora_down, lora_up;  // [r, k], [n, r]; null when the inputs have none
};

// Copies the inputs to the device and allocates out [m, n], act_q [m, k/2] and act_sf [m, k/16],
// poisoned. Every buffer is non-null, M = 0 included.
absl::StatusOr<DeviceProblem> UploadProblem(const OpInputs& in);

// Poisons out, act_q and act_sf again (kPoisonByte) and waits for it.
absl::Status Poison(DeviceProblem& d);

// The op's arguments for `d` under `options`: out = residual when in place, null workspaces
// without caller_workspace, and with the weight scale on the device the host value is -1 (the op
// must not read it). sm90_emulation from `options`.
OutProjArgs ArgsFor(const DeviceProblem& d, const RunOptions& options = {});

// Rows `rows` (ascending) of a finished run: out (read from residual when in place) and, with
// caller_workspace, act_q/act_sf.
absl::StatusOr<RunResult> DownloadResult(const DeviceProblem& d, const RunOptions& options,
                                         absl::Span<const int64_t> rows);

// UploadProblem, the op on the current device (default stream, synchronized before and after),
// DownloadResult. The op's own errors (unsupported device or shape) pass through unchanged.
absl::StatusOr<RunResult> RunOnGpu(const OpInputs& in, const RunOptions& options,
                                   absl::Span<const int64_t> rows);

}  // namespace h3::testbed

#endif  // H3_HARNESS_TESTBED_GPU_RUN_H_
