#ifndef H3_KERNELS_OUT_PROJ_INTERNAL_H_
#define H3_KERNELS_OUT_PROJ_INTERNAL_H_

// The host API with its kernels as a parameter: MinimaxH3Nvfp4OutProj runs the product's
// (kernels::ProductKernels()); the bench's testonly timing variants (harness/bench) run theirs
// through the same validation, workspaces and launch. Not part of the public API.

#include <cuda_runtime.h>

#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/device/kernel_set.h"
#include "kernels/out_proj.h"
#include "kernels/device/stall.h"

namespace h3::internal {

absl::Status RunOutProj(const OutProjArgs& args, cudaStream_t stream, CheckMode mode,
                        const kernels::KernelSet& kernels);

// The current context's stall report (kernels/device/stall.h) as the kernel wrote it, if one was written:
// the stall test checks its fields (OutProjStallStatus gives the same as a message).
std::optional<kernels::StallReport> OutProjStallReport();

// The config a call with `args` (of `dims`, validated) runs on the current device: args.tile, or for kAuto the tuning
// cache's choice (kernels/tuning/tune_cache.h; the file is read at the process's first kAuto call).
// The host API's own choice (out_proj_tile.cc): after the first call of a (device, shape), a
// lock and a map lookup; nothing enqueued, nothing synchronized (capturable). Tests read it too:
// which config kAuto picked is not observable in the output.
absl::StatusOr<OutProjTile> ResolvedOutProjTile(const OutProjArgs& args, const OpDims& dims);

// "minimax_h3_nvfp4_out_proj: <what> failed: <CUDA error name> (<its text>)".
absl::Status OutProjCudaError(cudaError_t e, const char* what);

}  // namespace h3::internal

#endif  // H3_KERNELS_OUT_PROJ_INTERNAL_H_
