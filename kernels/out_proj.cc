#include "kernels/out_proj.h"

#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/aliasing.h"
#include "core/cuda_diagnosis.h"
#include "core/global_scale.h"
#include "core/scale_layout.h"
#include "kernels/device/kernel_set.h"
#include "kernels/out_proj_internal.h"
#include "kernels/device/params.h"
#include "kernels/device/ready_flags.h"  // ReadyFlagWords
#include "kernels/device/stall.h"
#include "kernels/device/target_facts.h"
#include "kernels/device/tiles.h"
#include "kernels/device/work_units.h"  // NumChunks: the branch's partial slots
#include "kernels/stall_host.h"

namespace h3 {
namespace {

using internal::OutProjCudaError;

struct DeviceKind {
  kernels::KernelBuild build;
  std::string name;
};

static_assert(cudaErrorInsufficientDriver == kCudaErrorInsufficientDriver &&
                  cudaErrorNoDevice == kCudaErrorNoDevice,
              "core/cuda_diagnosis.h's error codes");

// The targets in words, from their facts: "12.x (sm_120f native), 9.0 (sm_90a validation,
// faithful ...), ...".
std::string SupportedTargets() {
  std::string out;
  for (const kernels::TargetFacts* t : kernels::kTargets) {
    if (!out.empty()) out += ", ";
    out += absl::StrFormat("%s (%s)", kernels::CapabilityName(*t), t->description);
  }
  return out;
}

absl::StatusOr<DeviceKind> CurrentDeviceKind(Sm90Emulation sm90_emulation) {
  // No device at all, or a driver too old for this runtime: said as such (the runtime's own
  // message reads "driver version is insufficient" in both cases).
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice) {
    int driver = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
    return absl::UnavailableError(
        "minimax_h3_nvfp4_out_proj: " +
        NoCudaDeviceReason(e, cudaGetErrorName(e), cudaGetErrorString(e), driver, CUDART_VERSION));
  }
  if (e != cudaSuccess) return OutProjCudaError(e, "cudaGetDeviceCount");
  int dev = 0, major = 0, minor = 0;
  e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return OutProjCudaError(e, "cudaGetDevice");
  // Two attribute queries instead of cudaGetDeviceProperties, which is slow on every call.
  e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  if (e != cudaSuccess) return OutProjCudaError(e, "cudaDeviceGetAttribute(compute capability)");
  if (const kernels::TargetFacts* t =
          kernels::FindTarget(major, minor, sm90_emulation == Sm90Emulation::kFast)) {
    return DeviceKind{t->build, t->cc_minor == kernels::kAnyMinor
                                    ? absl::StrFormat("%s (compute capability %d.%d)",
                                                      t->description, major, minor)
                                    : std::string(t->description)};
  }
  cudaDeviceProp prop;
  e = cudaGetDeviceProperties(&prop, dev);
  if (e != cudaSuccess) return OutProjCudaError(e, "cudaGetDeviceProperties");
  return absl::UnimplementedError(
      absl::StrFormat("minimax_h3_nvfp4_out_proj: device %d (%s) has compute capability %d.%d; "
                      "supported: %s",
                      dev, prop.name, major, minor, SupportedTargets()));
}

// CurrentDeviceKind of the current device, asked of the runtime once per (device, emulation):
// a device's compute capability never changes and CUDA numbers the devices once per process.
// A failure is not kept (the next call asks again, and says why as CurrentDeviceKind does).
absl::StatusOr<const DeviceKind*> CachedDeviceKind(Sm90Emulation sm90_emulation) {
  static std::mutex mu;
  static auto* kinds = new std::map<std::pair<int, int>, DeviceKind>();
  int dev = -1;
  if (cudaGetDevice(&dev) == cudaSuccess) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = kinds->find({dev, static_cast<int>(sm90_emulation)});
    if (it != kinds->end()) return &it->second;
  } else {
    dev = -1;  // CurrentDeviceKind below asks again and says why in its words
  }
  absl::StatusOr<DeviceKind> kind = CurrentDeviceKind(sm90_emulation);
  if (!kind.ok()) return kind.status();
  if (dev < 0) {
    if (const cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) {
      return OutProjCudaError(e, "cudaGetDevice");
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  return &kinds->emplace(std::make_pair(dev, static_cast<int>(sm90_emulation)), *std::move(kind))
              .first->second;
}

// The current CUDA context's process-unique id (driver cuCtxGetId, CUDA 12.0+). The launch
// geometry is kept per context, not per device number: after cudaDeviceReset the device gets a
// new context whose kernel attributes start from scratch.
absl::StatusOr<unsigned long long> CurrentContextId() {
  using GetCurrentFn = CUresult (*)(CUcontext*);
  using GetIdFn = CUresult (*)(CUcontext, unsigned long long*);
  static GetCurrentFn get_current = nullptr;
  static GetIdFn get_id = nullptr;
  static cudaError_t status = cudaSuccess;
  static std::once_flag once;
  std::call_once(once, [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q;
    status = cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &f, 12000, cudaEnableDefault, &q);
    if (status == cudaSuccess && q != cudaDriverEntryPointSuccess) status = cudaErrorNotSupported;
    get_current = reinterpret_cast<GetCurrentFn>(f);
    if (status == cudaSuccess) {
      status = cudaGetDriverEntryPointByVersion("cuCtxGetId", &f, 12000, cudaEnableDefault, &q);
      if (status == cudaSuccess && q != cudaDriverEntryPointSuccess) status = cudaErrorNotSupported;
      get_id = reinterpret_cast<GetIdFn>(f);
    }
  });
  if (status != cudaSuccess) {
    return OutProjCudaError(status, "cudaGetDriverEntryPointByVersion(cuCtx*)");
  }
  CUcontext ctx = nullptr;
  if (get_current(&ctx) == CUDA_SUCCESS && ctx == nullptr) {
    // No context yet: cudaFree(nullptr) makes the runtime's primary context current. A stream
    // being captured implies a current context, so this never runs inside a capture.
    const cudaError_t e = cudaFree(nullptr);
    if (e != cudaSuccess) return OutProjCudaError(e, "cudaFree(nullptr) (context initialization)");
    get_current(&ctx);
  }
  unsigned long long id = 0;
  if (ctx == nullptr || get_id(ctx, &id) != CUDA_SUCCESS) {
    return absl::InternalError("minimax_h3_nvfp4_out_proj: cannot identify the current context");
  }
  return id;
}

// The co-resident CTA count of the set's (build, tile) kernel in the current context, from its
// configure step (which also raises the kernel's shared-memory limit in this context): once per
// (context, set, build, tile), not on every call (ctx: CurrentContextId()). Neither step
// allocates or synchronizes, so it may run during a capture.
absl::StatusOr<int> ResidentCtas(unsigned long long ctx, const kernels::KernelSet& set,
                                 kernels::KernelBuild build, OutProjTile tile) {
  static std::mutex mu;
  static auto* resident = new std::map<
      std::tuple<unsigned long long, const kernels::KernelSet*, kernels::KernelBuild, OutProjTile>,
      int>();
  std::lock_guard<std::mutex> lock(mu);
  int& ctas = (*resident)[{ctx, &set, build, tile}];
  if (ctas == 0) {
    // The device's own shared-memory limit, not an assumed one (SM12x parts may differ).
    int dev = 0, optin = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) {
      e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    }
    if (e != cudaSuccess) {
      return OutProjCudaError(e, "cudaDeviceGetAttribute(shared memory per block)");
    }
    if (optin < set.smem_bytes(build, tile)) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "minimax_h3_nvfp4_out_proj: the kernel needs %d bytes of shared memory per block; "
          "device %d allows %d",
          set.smem_bytes(build, tile), dev, optin));
    }
    std::string refusal;
    e = set.configure(build, tile, &ctas, &refusal);
    if (!refusal.empty()) {
      ctas = 0;
      return absl::FailedPreconditionError(
          absl::StrCat("minimax_h3_nvfp4_out_proj: device ", dev, ": ", refusal));
    }
    if (e != cudaSuccess) {
      ctas = 0;
      return OutProjCudaError(e, "kernel configuration (shared-memory limit, occupancy query)");
    }
  }
  return ctas;
}

// The stall report of the current context, if a kernel wrote one.
std::optional<kernels::StallReport> StallReportOfCurrentContext() {
  absl::StatusOr<unsigned long long> ctx = CurrentContextId();
  if (!ctx.ok()) return std::nullopt;
  const kernels::StallReport* r = kernels::StallReportOf(*ctx, nullptr, /*allocate=*/false);
  if (r == nullptr) return std::nullopt;
  const volatile kernels::StallReport* v = r;
  if (v->state != 1u) return std::nullopt;
  kernels::StallReport copy;
  std::memcpy(&copy, const_cast<const kernels::StallReport*>(r), sizeof(copy));
  return copy;
}

std::string StallMessageOfCurrentContext() {
  const std::optional<kernels::StallReport> r = StallReportOfCurrentContext();
  return r.has_value() ? kernels::StallMessage(*r) : "";
}

// The kernel's shape rule (n, k tiled; m within the grid's reach), naming where each dimension
// came from.
absl::Status GpuShapeRule(const OpDims& d) {
  auto bad = [&d](const char* what, const std::string& want, int64_t got) {
    return absl::InvalidArgumentError(
        absl::StrFormat("minimax_h3_nvfp4_out_proj: %s must be %s, got %d (%s)", what, want, got,
                        DimensionSources(d, "MNKG")));
  };
  if (d.m < 0) return bad("m", ">= 0", d.m);
  if (d.n <= 0 || d.n % kOutProjNMultiple != 0) return bad("n", "a positive multiple of 128", d.n);
  if (d.k <= 0 || d.k % kOutProjKMultiple != 0) return bad("k", "a positive multiple of 256", d.k);
  if (d.g < 1) return bad("g", ">= 1", d.g);
  if (d.n > (int64_t{1} << 30)) return bad("n", "<= 2^30", d.n);
  if (d.k > (int64_t{1} << 30)) return bad("k", "<= 2^30", d.k);
  if (d.g > (int64_t{1} << 30)) return bad("g", "<= 2^30", d.g);
  if (d.m > kOutProjMaxM) return bad("m", absl::StrFormat("<= %d", kOutProjMaxM), d.m);
  return absl::OkStatus();
}

absl::Status ValidateArgs(const OutProjArgs& a, OpDims* d) {
  auto bad = [](const char* what, const std::string& want, int64_t got) {
    return absl::InvalidArgumentError(
        absl::StrFormat("minimax_h3_nvfp4_out_proj: %s must be %s, got %d", what, want, got));
  };
  if (FindOutProjTile(a.tile) == nullptr) {
    return bad("tile", "a registered tile config: " + OutProjTileCodes(),
               static_cast<int>(a.tile));
  }
  const int emu = static_cast<int>(a.sm90_emulation);
  if (emu != static_cast<int>(Sm90Emulation::kFaithful) &&
      emu != static_cast<int>(Sm90Emulation::kFast)) {
    return bad("sm90_emulation", "Sm90Emulation::kFaithful or kFast (0 or 1)", emu);
  }
  const OperandRules rules{GpuShapeRule, "a device pointer", /*check_alignment=*/true,
                           OutProjReadyFlagBytes};
  if (absl::Status s = ValidateOperands(a, rules, d); !s.ok()) return s;
  if (a.o_weight_global_scale.data == nullptr) {
    // A host value costs nothing to check (device values: in CheckMode::kChecked).
    if (absl::Status s = CheckGlobalScale("o_weight_global_scale", a.o_weight_global_scale_value);
        !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("minimax_h3_nvfp4_out_proj: ", s.message()));
    }
  }
  if (d->m == 0) return absl::OkStatus();
  // The kernel takes both activation workspaces from one source (TMA maps over each).
  if ((a.act_q.data == nullptr) != (a.act_sf.data == nullptr)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "minimax_h3_nvfp4_out_proj: act_q and act_sf must both be given or both be null, got "
        "act_q=%p act_sf=%p",
        a.act_q.data, a.act_sf.data));
  }
  if (a.ready_flags_zeroed && a.ready_flags.data == nullptr) {
    return absl::InvalidArgumentError(
        "minimax_h3_nvfp4_out_proj: ready_flags_zeroed must be false where ready_flags is null "
        "(the op allocates and zeroes its own), got true");
  }
  return absl::OkStatus();
}

// The kernel's parameters from validated operands: each operand's pointer (core/operands.def),
// its element type the kernel's (params.h).
kernels::OutProjParams ParamsOf(const OutProjArgs& a, const OpDims& d) {
  kernels::OutProjParams p;
  p.m = d.m;
  p.n = static_cast<int>(d.n);
  p.k = static_cast<int>(d.k);
  p.g = static_cast<int>(d.g);
#define H3_COPY_VALUE_REQUIRED(name)
#define H3_COPY_VALUE_OPTIONAL(name)
#define H3_COPY_VALUE_IN_PLACE(name)
#define H3_COPY_VALUE_OR_VALUE(name) p.name##_value = a.name##_value;
#define H3_OPERAND(name, dtype, shape, d0, d1, presence, ...) \
  H3_COPY_VALUE_##presence(name) p.name =                     \
      static_cast<decltype(p.name)>(const_cast<void*>(a.name.data));
#include "core/operands.def"
#undef H3_OPERAND
  if (p.residual == nullptr) p.residual = p.out;  // in place (contract section 9)
  return p;
}

}  // namespace

int64_t OutProjReadyFlagBytes(int64_t m) {
  if (m < 0) m = 0;
  // The flags and the low-rank branch's words (ready_flags.h: its arrival counters and l-ready
  // counts): one size for every call, whichever instance runs it.
  const int64_t words =
      kernels::ReadyFlagWords(m, kOutProjTileM) + kernels::BranchWords(m, kOutProjTileM);
  const int64_t bytes = words * int64_t{sizeof(uint32_t)};
  return (bytes + 15) / 16 * 16;
}

absl::Status OutProjStallStatus() {
  const std::string message = StallMessageOfCurrentContext();
  if (message.empty()) return absl::OkStatus();
  return absl::InternalError("minimax_h3_nvfp4_out_proj: " + message);
}

absl::StatusOr<std::string> OutProjBackendName(Sm90Emulation sm90_emulation) {
  absl::StatusOr<DeviceKind> kind = CurrentDeviceKind(sm90_emulation);
  if (!kind.ok()) return kind.status();
  return kind->name;
}

namespace {

// kChecked: act_smooth's factors must be finite (contract section 12), read back on the call's
// stream like the global scales.
absl::Status CheckActSmooth(const Operand& act_smooth, int64_t k, cudaStream_t stream) {
  if (act_smooth.data == nullptr) return absl::OkStatus();
  std::vector<float> s(static_cast<size_t>(k));
  cudaError_t e = cudaMemcpyAsync(s.data(), act_smooth.data, s.size() * sizeof(float),
                                  cudaMemcpyDeviceToHost, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) return internal::OutProjCudaError(e, "reading act_smooth (kChecked)");
  for (size_t i = 0; i < s.size(); ++i) {
    if (!std::isfinite(s[i])) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "minimax_h3_nvfp4_out_proj: act_smooth: expected finite factors (contract section "
          "12), got %g at [%d]",
          s[i], i));
    }
  }
  return absl::OkStatus();
}

}  // namespace

namespace internal {

std::optional<kernels::StallReport> OutProjStallReport() { return StallReportOfCurrentContext(); }

absl::Status OutProjCudaError(cudaError_t e, const char* what) {
  return absl::InternalError(absl::StrFormat("minimax_h3_nvfp4_out_proj: %s failed: %s (%s)", what,
                                             cudaGetErrorName(e), cudaGetErrorString(e)));
}

absl::Status RunOutProj(const OutProjArgs& args, cudaStream_t stream, CheckMode mode,
                        const kernels::KernelSet& kernels) {
  OpDims dims;
  if (absl::Status s = ValidateArgs(args, &dims); !s.ok()) return s;
  // A kernel set that ignored an option would compute another op; one that reads an option would
  // read a null pointer. The product picks its set by the operands (MinimaxH3Nvfp4OutProj).
  const bool branch = args.lora_down.data != nullptr;
  if (branch != kernels.branch) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "minimax_h3_nvfp4_out_proj: lora_down, lora_up: this kernel set %s the low-rank branch "
        "(contract section 13); expected them %s, got %s",
        kernels.branch ? "computes" : "does not compute", kernels.branch ? "given" : "null",
        branch ? "arrays" : "null"));
  }
  if (!kernels.branch && (args.act_smooth.data != nullptr) != kernels.smooths) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "minimax_h3_nvfp4_out_proj: act_smooth: this kernel set %s smoothing (contract section "
        "12); expected act_smooth %s, got %s",
        kernels.smooths ? "implements" : "does not implement",
        kernels.smooths ? "given" : "null", args.act_smooth.data ? "an array" : "null"));
  }
  if (dims.m == 0) return absl::OkStatus();
  absl::StatusOr<const DeviceKind*> kind_or = CachedDeviceKind(args.sm90_emulation);
  if (!kind_or.ok()) return kind_or.status();
  const DeviceKind* kind = *kind_or;
  // kAuto: the tuning cache's choice (out_proj_tile.cc)
  absl::StatusOr<OutProjTile> tile_or = internal::ResolvedOutProjTile(args, dims);
  if (!tile_or.ok()) return tile_or.status();
  const OutProjTile tile = *tile_or;
  absl::StatusOr<unsigned long long> ctx = CurrentContextId();
  if (!ctx.ok()) return ctx.status();
  absl::StatusOr<int> resident_ctas = ResidentCtas(*ctx, kernels, kind->build, tile);
  if (!resident_ctas.ok()) return resident_ctas.status();
  absl::StatusOr<uint64_t> wait_limit = kernels::WaitLimitNs();
  if (!wait_limit.ok()) return wait_limit.status();
  kernels::StallReport* stall = kernels::StallReportOf(*ctx, stream, /*allocate=*/true);

  if (mode == CheckMode::kChecked) {
    // Checked mode reads the scales back and synchronizes: illegal inside a capture, where it
    // would also invalidate the caller's whole graph. Refuse before touching the stream.
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaError_t e = cudaStreamIsCapturing(stream, &capture); e != cudaSuccess) {
      return OutProjCudaError(e, "cudaStreamIsCapturing");
    }
    if (capture != cudaStreamCaptureStatusNone) {
      return absl::FailedPreconditionError(
          "minimax_h3_nvfp4_out_proj: CheckMode::kChecked synchronizes and cannot be captured; "
          "capture with CheckMode::kAsync");
    }
    float act_gs = 0.f, w_gs = args.o_weight_global_scale_value;
    cudaError_t e = cudaMemcpyAsync(&act_gs, args.act_global_scale.data, sizeof(float),
                                    cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess && args.o_weight_global_scale.data != nullptr) {
      e = cudaMemcpyAsync(&w_gs, args.o_weight_global_scale.data, sizeof(float),
                          cudaMemcpyDeviceToHost, stream);
    }
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) return OutProjCudaError(e, "reading the global scales (kChecked)");
    for (const auto& [name, v] :
         {std::pair<const char*, float>{"act_global_scale", act_gs},
          {"o_weight_global_scale", w_gs}}) {
      if (absl::Status s = CheckGlobalScale(name, v); !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("minimax_h3_nvfp4_out_proj: ", s.message()));
      }
    }
    if (absl::Status s = CheckActSmooth(args.act_smooth, dims.k, stream); !s.ok()) return s;
  }

  // What the caller did not provide - the ready flags, act_q/act_sf - comes from one
  // stream-ordered allocation: no synchronization, so the call stays graph-capturable.
  const auto up256 = [](size_t bytes) { return (bytes + 255) / 256 * 256; };  // each part aligned
  const size_t flag_bytes = static_cast<size_t>(OutProjReadyFlagBytes(dims.m));
  const size_t q_bytes = up256(static_cast<size_t>(dims.m) * (dims.k / 2));
  const size_t sf_bytes = static_cast<size_t>(dims.m) * (dims.k / 16);
  // The branch's partial sums and l (lowrank.cuh): never zeroed (every element read is written
  // first in the launch).
  const int lora_rank = branch ? static_cast<int>(args.lora_down.shape[0]) : 0;
  const size_t partial_bytes = static_cast<size_t>(kernels::NumChunks(static_cast<int>(dims.k))) *
                               static_cast<size_t>(dims.m) * lora_rank * sizeof(float);
  const size_t act_bytes = static_cast<size_t>(dims.m) * lora_rank * sizeof(uint16_t);
  size_t ws_bytes = up256(partial_bytes) + up256(act_bytes);
  if (args.ready_flags.data == nullptr) ws_bytes += up256(flag_bytes);
  if (args.act_q.data == nullptr) ws_bytes += q_bytes + sf_bytes;
  void* ws = nullptr;
  if (ws_bytes > 0) {
    const cudaError_t e = cudaMallocAsync(&ws, ws_bytes, stream);
    if (e != cudaSuccess) return OutProjCudaError(e, "cudaMallocAsync(workspace)");
  }
  uint8_t* next = static_cast<uint8_t*>(ws);
  float* lora_partial = nullptr;
  uint16_t* lora_act = nullptr;
  if (partial_bytes > 0) {
    lora_partial = reinterpret_cast<float*>(next);
    next += up256(partial_bytes);
    lora_act = reinterpret_cast<uint16_t*>(next);
    next += up256(act_bytes);
  }
  void* flags = const_cast<void*>(args.ready_flags.data);
  if (flags == nullptr) {
    flags = next;
    next += up256(flag_bytes);
  }

  // The kernel's parameters, filled once here; the launcher adds only the TMA descriptors.
  kernels::OutProjParams p = ParamsOf(args, dims);
  if (p.act_q == nullptr) {
    p.act_q = next;
    p.act_sf = next + q_bytes;
  }
  p.ready_flags = static_cast<uint32_t*>(flags);
  p.lora_rank = lora_rank;
  p.lora_partial = lora_partial;
  p.lora_act = lora_act;
  // The API asks 4-byte alignment of these; 16 lets the kernel move 16 bytes per access.
  const auto aligned16 = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  p.prefetch_residual = aligned16(p.residual);
  p.vec16_epilogue = aligned16(p.residual) && aligned16(p.out) && aligned16(p.gate);
  p.wait_limit_ns = *wait_limit;
  p.stall = stall;

  const char* what = "cudaMemsetAsync(ready flags)";
  cudaError_t e =
      args.ready_flags_zeroed ? cudaSuccess : cudaMemsetAsync(flags, 0, flag_bytes, stream);
  if (e == cudaSuccess) e = kernels.launch(p, kind->build, tile, *resident_ctas, stream, &what);
  if (ws != nullptr) {
    const cudaError_t f = cudaFreeAsync(ws, stream);
    if (e == cudaSuccess && f != cudaSuccess) {
      e = f;
      what = "cudaFreeAsync(workspace)";
    }
  }
  if (e != cudaSuccess) return OutProjCudaError(e, what);
  if (mode == CheckMode::kChecked) {
    e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) {
      const absl::Status s = OutProjCudaError(e, "kernel execution (kChecked)");
      const std::string stall_message = StallMessageOfCurrentContext();
      return stall_message.empty() ? s
                                   : absl::InternalError(absl::StrCat(s.message(), "; ",
                                                                      stall_message));
    }
  }
  return absl::OkStatus();
}

}  // namespace internal

absl::Status MinimaxH3Nvfp4OutProj(const OutProjArgs& args, cudaStream_t stream, CheckMode mode) {
  const kernels::KernelSet& set = args.lora_down.data != nullptr ? kernels::ProductBranchKernels()
                                  : args.act_smooth.data != nullptr
                                      ? kernels::ProductSmoothedKernels()
                                      : kernels::ProductKernels();
  return internal::RunOutProj(args, stream, mode, set);
}

}  // namespace h3
