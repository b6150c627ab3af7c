#include "harness/sweep/gpu_backend.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/config.cuh"
#include "kernels/out_proj.h"

namespace h3::sweep {
namespace {

// The case table's tile edges and small shapes follow the kernel's tiling (kernels/config.cuh).
static_assert(kTileM == kernels::Sm120Config::kBM && kTileM == kernels::Sm90Config::kBM,
              "harness/sweep/cases.h kTileM must equal the kernel's tile M");
static_assert(kSmallShape.n % kOutProjNMultiple == 0 && kSmallShape.k % kOutProjKMultiple == 0 &&
                  kSmallShapeG3.n % kOutProjNMultiple == 0 &&
                  kSmallShapeG3.k % kOutProjKMultiple == 0,
              "the sweep's small shapes must be shapes the kernel tiles");

absl::Status CudaStatus(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(err)));
}

#define H3_CUDA_RETURN(expr)                        \
  do {                                              \
    absl::Status h3_st = CudaStatus((expr), #expr); \
    if (!h3_st.ok()) return h3_st;                  \
  } while (0)

// A device allocation freed on scope exit. Never null (at least 256 bytes), so M = 0 passes
// pointers the API may check.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  absl::Status Alloc(size_t bytes) {
    bytes_ = bytes;
    return CudaStatus(cudaMalloc(&ptr_, std::max<size_t>(bytes, 256)), "cudaMalloc");
  }
  absl::Status Upload(const void* src, size_t bytes) {
    if (bytes == 0) return absl::OkStatus();
    return CudaStatus(cudaMemcpy(ptr_, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

template <typename T>
absl::Status AllocUpload(DeviceBuffer& buf, const std::vector<T>& host) {
  absl::Status st = buf.Alloc(host.size() * sizeof(T));
  if (!st.ok()) return st;
  return buf.Upload(host.data(), host.size() * sizeof(T));
}

// Copies rows `rows` of a [*, row_elems] device array into dst ([rows.size(), row_elems]).
template <typename T>
absl::Status FetchRows(const T* dev, int64_t row_elems, absl::Span<const int64_t> rows,
                       std::vector<T>& dst) {
  dst.resize(rows.size() * static_cast<size_t>(row_elems));
  if (rows.empty() || row_elems == 0) return absl::OkStatus();
  const bool contiguous = rows.back() - rows.front() + 1 == static_cast<int64_t>(rows.size());
  if (contiguous) {
    H3_CUDA_RETURN(cudaMemcpy(dst.data(), dev + rows.front() * row_elems, dst.size() * sizeof(T),
                              cudaMemcpyDeviceToHost));
    return absl::OkStatus();
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    H3_CUDA_RETURN(cudaMemcpy(dst.data() + i * row_elems, dev + rows[i] * row_elems,
                              row_elems * sizeof(T), cudaMemcpyDeviceToHost));
  }
  return absl::OkStatus();
}

class GpuBackend : public DeviceBackend {
 public:
  GpuBackend(std::string description, Sm90Emulation sm90_emulation)
      : description_(std::move(description)), sm90_emulation_(sm90_emulation) {}
  std::string Description() const override { return description_; }

  absl::StatusOr<DeviceResult> Run(const Problem& p, bool out_is_residual, bool caller_workspace,
                                   absl::Span<const int64_t> rows) override {
    const OpShape& s = p.shape;
    DeviceBuffer attn, wq, wsf, gate, gidx, residual, out, act_q, act_sf, act_gs;
    absl::Status st;
    if (!(st = AllocUpload(attn, p.attn_out)).ok()) return st;
    if (!(st = AllocUpload(wq, p.weight->q)).ok()) return st;
    if (!(st = AllocUpload(wsf, p.weight->sf)).ok()) return st;
    if (!(st = AllocUpload(gate, p.gate)).ok()) return st;
    if (!(st = AllocUpload(gidx, p.gate_index)).ok()) return st;
    if (!(st = AllocUpload(residual, p.residual)).ok()) return st;
    if (!(st = AllocUpload(act_gs, std::vector<float>{p.act_global_scale})).ok()) return st;
    const size_t out_bytes = p.residual.size() * sizeof(uint16_t);
    const size_t q_bytes = static_cast<size_t>(s.m * (s.k / 2));
    const size_t sf_bytes = static_cast<size_t>(s.m * (s.k / 16));
    if (!out_is_residual) {
      if (!(st = out.Alloc(out_bytes)).ok()) return st;
      // Poison: 0xFFFF is a NaN the epilogue never writes (it canonicalizes to 0x7FFF).
      H3_CUDA_RETURN(cudaMemset(out.as<void>(), 0xFF, out_bytes));
    }
    if (caller_workspace) {
      if (!(st = act_q.Alloc(q_bytes)).ok()) return st;
      if (!(st = act_sf.Alloc(sf_bytes)).ok()) return st;
      H3_CUDA_RETURN(cudaMemset(act_q.as<void>(), 0xFF, q_bytes));
      H3_CUDA_RETURN(cudaMemset(act_sf.as<void>(), 0xFF, sf_bytes));  // 0xFF: never a UE4M3 scale
    }

    OutProjArgs args;
    args.m = s.m;
    args.n = s.n;
    args.k = s.k;
    args.g = s.g;
    args.attn_out = attn.as<uint16_t>();
    args.o_weight_q = wq.as<uint8_t>();
    args.o_weight_sf = wsf.as<uint8_t>();
    args.o_weight_global_scale = p.weight->global_scale;
    args.act_global_scale = act_gs.as<float>();
    args.gate = gate.as<uint16_t>();
    args.gate_index = gidx.as<int32_t>();
    args.residual = residual.as<uint16_t>();
    args.out = out_is_residual ? residual.as<uint16_t>() : out.as<uint16_t>();
    args.act_q = caller_workspace ? act_q.as<uint8_t>() : nullptr;
    args.act_sf = caller_workspace ? act_sf.as<uint8_t>() : nullptr;
    args.sm90_emulation = sm90_emulation_;
    H3_CUDA_RETURN(cudaDeviceSynchronize());
    st = MinimaxH3Nvfp4OutProj(args, /*stream=*/0, CheckMode::kChecked);
    if (!st.ok()) return st;
    H3_CUDA_RETURN(cudaDeviceSynchronize());

    DeviceResult r;
    if (!(st = FetchRows(args.out, s.n, rows, r.out)).ok()) return st;
    if (caller_workspace) {
      if (!(st = FetchRows(act_q.as<uint8_t>(), s.k / 2, rows, r.act_q)).ok()) return st;
      if (!(st = FetchRows(act_sf.as<uint8_t>(), s.k / 16, rows, r.act_sf)).ok()) return st;
    }
    return r;
  }

 private:
  std::string description_;
  Sm90Emulation sm90_emulation_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceBackend>> MakeGpuBackend(Sm90Emulation sm90_emulation) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    return absl::UnavailableError(absl::StrCat("no CUDA device: ", cudaGetErrorString(err)));
  }
  if (count == 0) return absl::UnavailableError("no CUDA device: cudaGetDeviceCount returned 0");
  int dev = 0;
  H3_CUDA_RETURN(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  H3_CUDA_RETURN(cudaGetDeviceProperties(&prop, dev));
  absl::StatusOr<std::string> build = OutProjBackendName(sm90_emulation);
  if (!build.ok()) {
    return absl::UnavailableError(
        absl::StrFormat("%s (sm_%d%d): the kernel has no build for it: %s", prop.name, prop.major,
                        prop.minor, build.status().message()));
  }
  std::string what = absl::StrFormat("GPU %s (sm_%d%d, %d SMs): kernel build \"%s\"", prop.name,
                                     prop.major, prop.minor, prop.multiProcessorCount, *build);
  if (prop.major == 9) {
    absl::StrAppend(&what,
                    "\n  NOTE: this is the sm_90a VALIDATION build. The SM120 block-scaled MMA is "
                    "replaced by an exact emulation; it checks the kernel's data movement, "
                    "quantizer and epilogue against the contract, not the SM120 instruction.");
    if (sm90_emulation == Sm90Emulation::kFast) {
      absl::StrAppend(&what,
                      "\n  NOTE: --sm90_emulation=fast: the consumer loop is the Hopper one "
                      "(dequantized tiles, wgmma), not the SM120 kernel's fragment path.");
    }
  }
  return std::unique_ptr<DeviceBackend>(new GpuBackend(std::move(what), sm90_emulation));
}

}  // namespace h3::sweep
