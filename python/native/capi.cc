// The C ABI of the Python package (capi.h): the operands copied as they are (core/operands.def)
// to the GPU host API (kernels/out_proj.h) or the emulator (emulator/op_operands.h), which
// validate them; errors as code + message.

#include "python/native/capi.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "core/operands.h"
#include "core/scale_layout.h"
#include "core/version.h"
#include "emulator/check.h"
#include "emulator/op.h"
#include "emulator/op_operands.h"
#include "kernels/out_proj.h"
#include "kernels/out_proj_internal.h"  // OutProjCudaError: the host API's wording
#include "python/native/last_error.h"

namespace {

using ::h3::capi::Done;
using ::h3::capi::Fail;

absl::Status Invalid(const absl::FormatSpec<const char*, std::string, std::string>& f,
                     const char* name, const std::string& want, const std::string& got) {
  return absl::InvalidArgumentError(absl::StrFormat(f, name, want, got));
}

static_assert(sizeof(H3Array) == sizeof(h3::Operand) && sizeof(H3Array::shape) ==
                  sizeof(h3::Operand::shape),
              "H3Array carries what h3::Operand does");

// The operands as the backends take them (core/operands.h), field for field from the table.
h3::OperandSet OperandsOf(const H3OutProjArgs& a) {
  h3::OperandSet s;
  const auto of = [](const H3Array& x) {
    h3::Operand o;
    o.data = x.data;
    o.ndim = x.ndim;
    for (int i = 0; i < 4; ++i) o.shape[i] = x.shape[i];
    return o;
  };
#define H3_CAPI_COPY_REQUIRED(name)
#define H3_CAPI_COPY_OPTIONAL(name)
#define H3_CAPI_COPY_IN_PLACE(name)
#define H3_CAPI_COPY_OR_VALUE(name) s.name##_value = a.name##_value;
#define H3_OPERAND(name, dtype, shape, d0, d1, presence, ...) \
  s.name = of(a.name);                                        \
  H3_CAPI_COPY_##presence(name)
#include "core/operands.def"
#undef H3_OPERAND
  return s;
}

// What the C ABI itself adds: the struct's version.
absl::Status CheckVersion(const H3OutProjArgs* a) {
  if (a == nullptr) return absl::InvalidArgumentError("minimax_h3_nvfp4_out_proj: args is null");
  if (a->version != H3_CAPI_VERSION) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "minimax_h3_nvfp4_out_proj: the C ABI version must be %d (this library), got %d: the "
        "Python package and libminimax_h3_nvfp4.so come from different builds",
        H3_CAPI_VERSION, a->version));
  }
  return absl::OkStatus();
}

// ---- GPU ------------------------------------------------------------------------------------

// Makes `device` current for the call (the operands' device, whatever torch's thread state) and
// restores the previous one. cudaSetDevice is not a stream operation: fine during a capture.
class DeviceScope {
 public:
  absl::Status Enter(int32_t device) {
    if (device < 0) return absl::OkStatus();
    cudaError_t e = cudaGetDevice(&prev_);
    if (e != cudaSuccess) return h3::internal::OutProjCudaError(e, "cudaGetDevice");
    if (prev_ == device) return absl::OkStatus();
    e = cudaSetDevice(device);
    if (e != cudaSuccess) return h3::internal::OutProjCudaError(e, "cudaSetDevice");
    switched_ = true;
    return absl::OkStatus();
  }
  ~DeviceScope() {
    if (switched_) cudaSetDevice(prev_);
  }

 private:
  int prev_ = -1;
  bool switched_ = false;
};

// True where `stream` is surely not being captured. A failed query (e.g. the legacy stream while
// another stream captures) counts as capturing: the caller then calls again without the cached
// workspace, and that call reports the stream's state as any call does. The query's own error is
// cleared, so that torch's next error check does not pin it on an unrelated kernel (the retry
// sets it again where it persists).
bool NotCapturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return status == cudaStreamCaptureStatusNone;
}

// *capturing: set (and nothing run) where a->cached_workspace is set and the stream captures.
absl::Status RunGpu(const H3OutProjArgs* a, void* stream, bool* capturing) {
  if (absl::Status s = CheckVersion(a); !s.ok()) return s;
  if (a->cached_workspace != 0 && a->cached_workspace != 1) {
    return Invalid("minimax_h3_nvfp4_out_proj: %s must be %s, got %s", "cached_workspace",
                   "0 or 1", absl::StrCat(a->cached_workspace));
  }
  if (a->ready_flags_zeroed != 0 && a->ready_flags_zeroed != 1) {
    return Invalid("minimax_h3_nvfp4_out_proj: %s must be %s, got %s", "ready_flags_zeroed",
                   "0 or 1", absl::StrCat(a->ready_flags_zeroed));
  }
  if (a->sm90_emulation != 0 && a->sm90_emulation != 1) {
    return Invalid("minimax_h3_nvfp4_out_proj: %s must be %s, got %s", "sm90_emulation",
                   "0 (faithful) or 1 (fast)", absl::StrCat(a->sm90_emulation));
  }
  // The operands and the other options as they are: the host API validates them.
  h3::OutProjArgs p;
  static_cast<h3::OperandSet&>(p) = OperandsOf(*a);
  p.ready_flags_zeroed = a->ready_flags_zeroed == 1;
  p.sm90_emulation = static_cast<h3::Sm90Emulation>(a->sm90_emulation);
  p.tile = static_cast<h3::OutProjTile>(a->tile);
  DeviceScope scope;
  if (absl::Status s = scope.Enter(a->device); !s.ok()) return s;
  if (a->cached_workspace != 0 && !NotCapturing(static_cast<cudaStream_t>(stream))) {
    *capturing = true;
    return absl::OkStatus();
  }
  return h3::MinimaxH3Nvfp4OutProj(p, static_cast<cudaStream_t>(stream), h3::CheckMode::kAsync);
}

}  // namespace

extern "C" {

int32_t h3_capi_version(void) { return H3_CAPI_VERSION; }

const char* h3_version(void) { return h3::kVersion; }

int32_t h3_tile_count(void) { return h3::kOutProjTileCount + 1; }

const char* h3_tile_name(int32_t index) {
  if (index == 0) return "auto";
  return index > 0 && index <= h3::kOutProjTileCount ? h3::kOutProjTiles[index - 1].name : nullptr;
}

int32_t h3_tile_code(int32_t index) {
  if (index == 0) return static_cast<int32_t>(h3::OutProjTile::kAuto);
  return index > 0 && index <= h3::kOutProjTileCount
             ? static_cast<int32_t>(h3::kOutProjTiles[index - 1].tile)
             : -1;
}

const char* h3_last_error(void) { return h3::capi::LastError(); }

const char* h3_stall_message(void) {
  thread_local std::string message;
  const absl::Status s = h3::OutProjStallStatus();
  message = s.ok() ? "" : std::string(s.message());
  return message.c_str();
}

int32_t h3_out_proj_gpu(const H3OutProjArgs* args, void* stream) {
  bool capturing = false;
  const absl::Status s = RunGpu(args, stream, &capturing);
  if (s.ok() && capturing) return H3_CAPTURING;
  return Done(s);
}

int32_t h3_out_proj_cpu(const H3OutProjArgs* args) {
  if (absl::Status s = CheckVersion(args); !s.ok()) return Fail(s);
  if (args->cpu_gemm != 0 && args->cpu_gemm != 1) {
    return Fail(Invalid("minimax_h3_nvfp4_out_proj: %s must be %s, got %s", "cpu_gemm",
                        "0 (fast) or 1 (exact)", absl::StrCat(args->cpu_gemm)));
  }
  return Done(h3::RunOpOnOperands(
      OperandsOf(*args), args->cpu_gemm == 1 ? h3::GemmPath::kExact : h3::GemmPath::kFastF32));
}

int64_t h3_args_size(void) { return static_cast<int64_t>(sizeof(H3OutProjArgs)); }

int64_t h3_args_offset(const char* field) {
  if (field == nullptr) return -1;
#define H3_CAPI_FIELD(name) {#name, offsetof(H3OutProjArgs, name)},
#define H3_CAPI_FIELD_REQUIRED(name)
#define H3_CAPI_FIELD_OPTIONAL(name)
#define H3_CAPI_FIELD_IN_PLACE(name)
#define H3_CAPI_FIELD_OR_VALUE(name) H3_CAPI_FIELD(name##_value)
  static constexpr std::pair<const char*, size_t> kFields[] = {
      H3_CAPI_FIELD(version)
#define H3_OPERAND(name, dtype, shape, d0, d1, presence, ...) \
  H3_CAPI_FIELD(name) H3_CAPI_FIELD_##presence(name)
#include "core/operands.def"
#undef H3_OPERAND
      H3_CAPI_FIELD(cached_workspace) H3_CAPI_FIELD(sm90_emulation) H3_CAPI_FIELD(cpu_gemm)
      H3_CAPI_FIELD(device) H3_CAPI_FIELD(tile) H3_CAPI_FIELD(ready_flags_zeroed)};
  for (const auto& [name, offset] : kFields) {
    if (std::strcmp(name, field) == 0) return static_cast<int64_t>(offset);
  }
  return -1;
}

int64_t h3_ready_flag_bytes(int64_t m) { return h3::OutProjReadyFlagBytes(m); }

int64_t h3_swizzled_scale_bytes(int64_t n, int64_t k) {
  if (n < 0 || k < 0) return 0;
  return h3::SwizzledScaleBytes(n, (k + 15) / 16);
}

int32_t h3_backend_name(int32_t device, int32_t sm90_emulation, char* buf, int64_t buf_len) {
  DeviceScope scope;
  if (absl::Status s = scope.Enter(device); !s.ok()) return Fail(s);
  absl::StatusOr<std::string> name = h3::OutProjBackendName(
      sm90_emulation == 1 ? h3::Sm90Emulation::kFast : h3::Sm90Emulation::kFaithful);
  if (!name.ok()) return Fail(name.status());
  if (buf != nullptr && buf_len > 0) {
    const size_t n = std::min(name->size(), static_cast<size_t>(buf_len - 1));
    std::memcpy(buf, name->data(), n);
    buf[n] = '\0';
  }
  return Done(absl::OkStatus());
}

int32_t h3_out_envelope_cpu(const H3OutProjArgs* args, const int64_t* rows, int64_t nrows,
                            uint16_t* lo, uint16_t* hi, uint8_t* exact) {
  if (absl::Status s = CheckVersion(args); !s.ok()) return Fail(s);
  absl::StatusOr<h3::OpInputs> in = h3::OpInputsOf(OperandsOf(*args), /*with_outputs=*/false);
  if (!in.ok()) return Fail(in.status());
  if (nrows < 0 || (nrows > 0 && rows == nullptr)) {
    return Fail(absl::InvalidArgumentError(
        absl::StrFormat("minimax_h3_nvfp4_out_proj: rows must be %d row ids, got null", nrows)));
  }
  absl::StatusOr<h3::OutEnvelope> env =
      h3::ComputeOutEnvelope(*in, absl::Span<const int64_t>(rows, static_cast<size_t>(nrows)));
  if (!env.ok()) return Fail(env.status());
  const size_t count = env->lo.size();
  if (count > 0) {
    if (lo == nullptr || hi == nullptr || exact == nullptr) {
      return Fail(absl::InvalidArgumentError("minimax_h3_nvfp4_out_proj: lo, hi, exact are null"));
    }
    std::memcpy(lo, env->lo.data(), count * sizeof(uint16_t));
    std::memcpy(hi, env->hi.data(), count * sizeof(uint16_t));
    std::memcpy(exact, env->exact.data(), count);
  }
  return Done(absl::OkStatus());
}

}  // extern "C"
