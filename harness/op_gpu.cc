#include "harness/op_gpu.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernels/out_proj.h"

namespace h3 {
namespace {

absl::Status CudaError(cudaError_t e, absl::string_view what) {
  return absl::InternalError(absl::StrCat("--backend=gpu: ", what, ": ", cudaGetErrorString(e)));
}

// Device buffers freed on every return path.
class DeviceBuffers {
 public:
  ~DeviceBuffers() {
    for (void* p : ptrs_) cudaFree(p);
  }
  // At least one byte, so that M = 0 still passes non-null pointers.
  absl::StatusOr<void*> Alloc(size_t bytes) {
    void* p = nullptr;
    if (cudaError_t e = cudaMalloc(&p, std::max<size_t>(bytes, 1)); e != cudaSuccess) {
      return CudaError(e, absl::StrCat("cudaMalloc(", bytes, ")"));
    }
    ptrs_.push_back(p);
    return p;
  }

 private:
  std::vector<void*> ptrs_;
};

template <typename T>
absl::StatusOr<T*> Upload(DeviceBuffers& bufs, const std::vector<T>& host) {
  absl::StatusOr<void*> p = bufs.Alloc(host.size() * sizeof(T));
  if (!p.ok()) return p.status();
  if (!host.empty()) {
    if (cudaError_t e =
            cudaMemcpy(*p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
        e != cudaSuccess) {
      return CudaError(e, "cudaMemcpy to the device");
    }
  }
  return static_cast<T*>(*p);
}

template <typename T>
absl::Status Download(std::vector<T>& host, const T* dev) {
  if (host.empty()) return absl::OkStatus();
  if (cudaError_t e = cudaMemcpy(host.data(), dev, host.size() * sizeof(T), cudaMemcpyDeviceToHost);
      e != cudaSuccess) {
    return CudaError(e, "cudaMemcpy from the device");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<OpResults> RunOpGpu(const OpFiles& in, std::string* backend_name) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
    return absl::UnavailableError(
        absl::StrCat("--backend=gpu: no CUDA device on this machine (cudaGetDeviceCount: ",
                     e == cudaSuccess ? "0 devices" : cudaGetErrorString(e), ")"));
  }
  absl::StatusOr<std::string> name = OutProjBackendName();
  if (!name.ok()) return name.status();
  const OpShape& s = in.shape;
  DeviceBuffers bufs;
  OpResults r;
  r.out.resize(s.m * s.n);
  r.act_q.resize(s.m * s.k / 2);
  r.act_sf.resize(s.m * s.k / 16);
  const std::vector<float> act_gs = {in.act_global_scale};
  absl::StatusOr<uint16_t*> attn = Upload(bufs, in.attn_out);
  absl::StatusOr<uint8_t*> wq = Upload(bufs, in.o_weight_q);
  absl::StatusOr<uint8_t*> wsf = Upload(bufs, in.o_weight_sf);
  absl::StatusOr<float*> ags = Upload(bufs, act_gs);
  absl::StatusOr<uint16_t*> gate = Upload(bufs, in.gate);
  absl::StatusOr<int32_t*> gi = Upload(bufs, in.gate_index);
  absl::StatusOr<uint16_t*> res = Upload(bufs, in.residual);
  absl::StatusOr<uint16_t*> out = Upload(bufs, r.out);
  absl::StatusOr<uint8_t*> aq = Upload(bufs, r.act_q);
  absl::StatusOr<uint8_t*> asf = Upload(bufs, r.act_sf);
  for (const absl::Status& st :
       {attn.status(), wq.status(), wsf.status(), ags.status(), gate.status(), gi.status(),
        res.status(), out.status(), aq.status(), asf.status()}) {
    if (!st.ok()) return st;
  }
  OutProjArgs args;
  args.m = s.m;
  args.n = s.n;
  args.k = s.k;
  args.g = s.g;
  args.attn_out = *attn;
  args.o_weight_q = *wq;
  args.o_weight_sf = *wsf;
  args.o_weight_global_scale = in.o_weight_global_scale;
  args.act_global_scale = *ags;
  args.gate = *gate;
  args.gate_index = *gi;
  args.residual = *res;
  args.out = *out;
  args.act_q = *aq;
  args.act_sf = *asf;
  if (absl::Status st = MinimaxH3Nvfp4OutProj(args, /*stream=*/nullptr, CheckMode::kChecked);
      !st.ok()) {
    return absl::Status(st.code(), absl::StrCat("--backend=gpu (", *name, "): ", st.message()));
  }
  for (const absl::Status& st :
       {Download(r.out, *out), Download(r.act_q, *aq), Download(r.act_sf, *asf)}) {
    if (!st.ok()) return st;
  }
  if (backend_name != nullptr) *backend_name = *name;
  return r;
}

}  // namespace h3
