#include "harness/op_gpu.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "harness/testbed/cuda.h"
#include "harness/testbed/gpu_run.h"
#include "harness/testbed/rows.h"
#include "kernels/out_proj.h"

namespace h3 {

absl::StatusOr<OpResults> RunOpGpu(const OpFiles& in, std::string* backend_name) {
  if (absl::Status st = testbed::CheckCudaDevice(); !st.ok()) {
    return absl::Status(st.code(), absl::StrCat("--backend=gpu: ", st.message()));
  }
  absl::StatusOr<std::string> name = OutProjBackendName();
  if (!name.ok()) return name.status();
  // Checked mode, caller workspaces for act_q/act_sf, every row back.
  absl::StatusOr<testbed::RunResult> run =
      testbed::RunOnGpu(in.Inputs(), testbed::RunOptions(), testbed::AllRows(in.shape.m));
  if (!run.ok()) {
    return absl::Status(run.status().code(),
                        absl::StrCat("--backend=gpu (", *name, "): ", run.status().message()));
  }
  if (backend_name != nullptr) *backend_name = *name;
  return OpResults{std::move(run->out), std::move(run->act_q), std::move(run->act_sf)};
}

}  // namespace h3
