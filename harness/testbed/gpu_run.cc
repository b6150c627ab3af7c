#include "harness/testbed/gpu_run.h"

#include <cuda_runtime.h>

#include <utility>

#include "core/operands.h"
#include "core/scale_layout.h"
#include "harness/testbed/rows.h"
#include "kernels/out_proj.h"

namespace h3::testbed {

// The sampler's tile edges follow the kernel's tiling.
static_assert(kTileM == kOutProjTileM,
              "harness/testbed/rows.h kTileM must equal the kernel's tile M");

absl::StatusOr<DeviceProblem> UploadProblem(const OpInputs& in) {
  const OpShape& s = in.shape;
  DeviceProblem d;
  d.shape = s;
  d.o_weight_global_scale = in.o_weight_global_scale;
  const float act_gs[1] = {in.act_global_scale};
  const float w_gs[1] = {in.o_weight_global_scale};
  H3_RETURN_IF_ERROR(d.attn_out.Upload(in.attn_out));
  H3_RETURN_IF_ERROR(d.o_weight_q.Upload(in.o_weight_q));
  H3_RETURN_IF_ERROR(d.o_weight_sf.Upload(in.o_weight_sf));
  H3_RETURN_IF_ERROR(d.gate.Upload(in.gate));
  H3_RETURN_IF_ERROR(d.gate_index.Upload(in.gate_index));
  H3_RETURN_IF_ERROR(d.residual.Upload(in.residual));
  H3_RETURN_IF_ERROR(d.act_global_scale.Upload(act_gs));
  H3_RETURN_IF_ERROR(d.o_weight_global_scale_dev.Upload(w_gs));
  if (!in.act_smooth.empty()) H3_RETURN_IF_ERROR(d.act_smooth.Upload(in.act_smooth));
  if (!in.lora_down.empty()) H3_RETURN_IF_ERROR(d.lora_down.Upload(in.lora_down));
  if (!in.lora_up.empty()) H3_RETURN_IF_ERROR(d.lora_up.Upload(in.lora_up));
  H3_RETURN_IF_ERROR(d.out.Alloc(static_cast<size_t>(s.m * s.n)));
  H3_RETURN_IF_ERROR(d.act_q.Alloc(static_cast<size_t>(s.m * (s.k / 2))));
  H3_RETURN_IF_ERROR(d.act_sf.Alloc(static_cast<size_t>(s.m * (s.k / kScaleBlock))));
  H3_RETURN_IF_ERROR(Poison(d));
  return d;
}

absl::Status Poison(DeviceProblem& d) {
  H3_RETURN_IF_ERROR(d.out.Fill(kPoisonByte));
  H3_RETURN_IF_ERROR(d.act_q.Fill(kPoisonByte));
  H3_RETURN_IF_ERROR(d.act_sf.Fill(kPoisonByte));
  return CudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize (after poisoning)");
}

OutProjArgs ArgsFor(const DeviceProblem& d, const RunOptions& options) {
  const int64_t m = d.shape.m, n = d.shape.n, k = d.shape.k, g = d.shape.g;
  OutProjArgs a;
  a.attn_out = Operand::Of(d.attn_out.get(), {m, k});
  a.o_weight_q = Operand::Of(d.o_weight_q.get(), {n, k / 2});
  a.o_weight_sf = Operand::Of(d.o_weight_sf.get(), {SwizzledScaleBytes(n, k / 16)});
  a.o_weight_global_scale_value = d.o_weight_global_scale;
  if (options.weight_scale_on_device) {
    a.o_weight_global_scale = Operand::Of(d.o_weight_global_scale_dev.get(), {1});
  }
  a.act_global_scale = Operand::Of(d.act_global_scale.get(), {1});
  a.gate = Operand::Of(d.gate.get(), {g, n});
  a.gate_index = Operand::Of(d.gate_index.get(), {m});
  a.residual = Operand::Of(d.residual.get(), {m, n});
  a.out = Operand::Of(options.out_is_residual ? d.residual.get() : d.out.get(), {m, n});
  if (options.caller_workspace) {
    a.act_q = Operand::Of(d.act_q.get(), {m, k / 2});
    a.act_sf = Operand::Of(d.act_sf.get(), {m, k / 16});
  }
  if (d.act_smooth.get() != nullptr) a.act_smooth = Operand::Of(d.act_smooth.get(), {k});
  if (d.lora_down.get() != nullptr) {
    const int64_t r = static_cast<int64_t>(d.lora_down.count()) / k;
    a.lora_down = Operand::Of(d.lora_down.get(), {r, k});
    a.lora_up = Operand::Of(d.lora_up.get(), {n, r});
  }
  a.sm90_emulation = options.sm90_emulation;
  a.tile = options.tile;
  return a;
}

absl::StatusOr<RunResult> DownloadResult(const DeviceProblem& d, const RunOptions& options,
                                         absl::Span<const int64_t> rows) {
  const OpShape& s = d.shape;
  RunResult r;
  absl::StatusOr<std::vector<uint16_t>> out =
      DownloadRows(options.out_is_residual ? d.residual.get() : d.out.get(), s.n, rows);
  if (!out.ok()) return out.status();
  r.out = *std::move(out);
  if (!options.caller_workspace) return r;
  absl::StatusOr<std::vector<uint8_t>> act_q = DownloadRows(d.act_q.get(), s.k / 2, rows);
  if (!act_q.ok()) return act_q.status();
  absl::StatusOr<std::vector<uint8_t>> act_sf =
      DownloadRows(d.act_sf.get(), s.k / kScaleBlock, rows);
  if (!act_sf.ok()) return act_sf.status();
  r.act_q = *std::move(act_q);
  r.act_sf = *std::move(act_sf);
  return r;
}

absl::StatusOr<RunResult> RunOnGpu(const OpInputs& in, const RunOptions& options,
                                   absl::Span<const int64_t> rows) {
  absl::StatusOr<DeviceProblem> d = UploadProblem(in);
  if (!d.ok()) return d.status();
  H3_RETURN_IF_ERROR(
      MinimaxH3Nvfp4OutProj(ArgsFor(*d, options), /*stream=*/nullptr, options.check));
  H3_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  return DownloadResult(*d, options, rows);
}

}  // namespace h3::testbed
