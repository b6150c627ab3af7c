// The C ABI of the Python package (capi.h): shape checks shared by both backends, then the GPU
// host API (kernels/out_proj.h) or the emulator (emulator/op.h), errors as code + message.

#include "python/native/capi.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "core/aliasing.h"
#include "core/global_scale.h"
#include "core/scale_layout.h"
#include "core/shape.h"
#include "core/version.h"
#include "emulator/check.h"
#include "emulator/op.h"
#include "kernels/out_proj.h"
#include "kernels/out_proj_internal.h"  // OutProjCudaError: the host API's wording
#include "python/native/capi_arrays.h"
#include "python/native/last_error.h"

namespace {

constexpr char kOp[] = "minimax_h3_nvfp4_out_proj";

using ::h3::capi::Done;
using ::h3::capi::Fail;

absl::Status Invalid(const absl::FormatSpec<const char*, std::string, std::string>& f,
                     const char* name, const std::string& want, const std::string& got) {
  return absl::InvalidArgumentError(absl::StrFormat(f, name, want, got));
}

using h3::capi::HasShape;
using h3::capi::Numel;
using h3::capi::ShapeStr;

struct Dims {
  int64_t m, n, k, g;
};

// Where the symbols `which` ("M", "N", "K", "G", in any combination) come from, for a message:
// an error in the operand that fixed M, N or K must not be read as one in the operand named.
std::string SymbolSources(const Dims& d, const std::string& which) {
  std::vector<std::string> parts;
  const bool m = which.find('M') != std::string::npos, k = which.find('K') != std::string::npos;
  if (m && k) parts.push_back(absl::StrFormat("M = %d, K = %d from attn_out [M, K]", d.m, d.k));
  if (m && !k) parts.push_back(absl::StrFormat("M = %d from attn_out [M, K]", d.m));
  if (!m && k) parts.push_back(absl::StrFormat("K = %d from attn_out [M, K]", d.k));
  if (which.find('N') != std::string::npos) {
    parts.push_back(absl::StrFormat("N = %d from o_weight_q [N, K/2]", d.n));
  }
  if (which.find('G') != std::string::npos) {
    parts.push_back(absl::StrFormat("G = %d from gate [G, N]", d.g));
  }
  return absl::StrJoin(parts, ", ");
}

// "<name> must have shape [M, N] = [37, 128] (M = 37 from attn_out [M, K], N = 128 from
// o_weight_q [N, K/2]), got [37, 64]"; the sources of the symbols in `which`, and `hint`, are
// formatted only on an error (this runs on every call).
absl::Status CheckShape(const char* name, const H3Array& a, const char* symbolic,
                        std::initializer_list<int64_t> want, const Dims& d, const char* which,
                        const char* hint = "") {
  if (HasShape(a, want)) return absl::OkStatus();
  return Invalid("minimax_h3_nvfp4_out_proj: %s must have shape %s, got %s", name,
                 absl::StrCat(symbolic, " = [", absl::StrJoin(want, ", "), "] (",
                              SymbolSources(d, which), hint, ")"),
                 ShapeStr(a));
}

absl::Status CheckRank(const char* name, const H3Array& a, int64_t ndim, const char* symbolic) {
  if (a.ndim == ndim) return absl::OkStatus();
  return Invalid("minimax_h3_nvfp4_out_proj: %s must be %s, got shape %s", name,
                 absl::StrFormat("%d-D %s", ndim, symbolic), ShapeStr(a));
}

absl::Status CheckOneElement(const char* name, const H3Array& a) {
  if (a.ndim >= 0 && a.ndim <= 1 && Numel(a) == 1) return absl::OkStatus();
  return Invalid("minimax_h3_nvfp4_out_proj: %s must be %s, got shape %s", name,
                 "one float32 ([1] or a scalar)", ShapeStr(a));
}

// The operands' shapes against each other: M, K from attn_out, N from o_weight_q, G from gate.
// `backend_shape` validates (m, n, k, g) with the backend's own rule, between deriving them and
// checking the shapes that divide K (K/2, K/16 are meaningless for a K the backend rejects).
template <typename BackendShape>
absl::Status CheckOperands(const H3OutProjArgs* a, Dims* d, BackendShape backend_shape) {
  if (a == nullptr) return absl::InvalidArgumentError("minimax_h3_nvfp4_out_proj: args is null");
  if (a->version != H3_CAPI_VERSION) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "minimax_h3_nvfp4_out_proj: the C ABI version must be %d (this library), got %d: the "
        "Python package and libminimax_h3_nvfp4.so come from different builds",
        H3_CAPI_VERSION, a->version));
  }
  // H3Array carries at most 4 dimensions: any other rank is refused before its shape is read.
  const std::pair<const char*, const H3Array*> arrays[] = {
      {"attn_out", &a->attn_out},       {"o_weight_q", &a->o_weight_q},
      {"o_weight_sf", &a->o_weight_sf}, {"o_weight_global_scale", &a->o_weight_global_scale},
      {"act_global_scale", &a->act_global_scale}, {"gate", &a->gate},
      {"gate_index", &a->gate_index},   {"residual", &a->residual},
      {"out", &a->out},                 {"act_q", &a->act_q},
      {"act_sf", &a->act_sf},           {"ready_flags", &a->ready_flags}};
  for (const auto& [name, arr] : arrays) {
    if (arr->ndim < 0 || arr->ndim > 4) {
      return Invalid("minimax_h3_nvfp4_out_proj: %s must be %s, got %s", name,
                     "an array of 0 to 4 dimensions", absl::StrFormat("ndim %d", arr->ndim));
    }
  }
  absl::Status s;
  if (!(s = CheckRank("attn_out", a->attn_out, 2, "[M, K]")).ok()) return s;
  if (!(s = CheckRank("o_weight_q", a->o_weight_q, 2, "[N, K/2]")).ok()) return s;
  if (!(s = CheckRank("gate", a->gate, 2, "[G, N]")).ok()) return s;
  d->m = a->attn_out.shape[0];
  d->k = a->attn_out.shape[1];
  d->n = a->o_weight_q.shape[0];
  d->g = a->gate.shape[0];
  if (!(s = backend_shape(*d)).ok()) return s;
  const int64_t m = d->m, n = d->n, k = d->k, g = d->g;
  // A weight given transposed, [K/2, N] with N the gate's, is said so: N is read from its own
  // rows, so the expected shape alone would show a K/2 that looks right.
  const bool transposed = a->o_weight_q.shape[0] == k / 2 &&
                          a->o_weight_q.shape[1] == a->gate.shape[1] && a->gate.shape[1] != k / 2;
  if (!(s = CheckShape("o_weight_q", a->o_weight_q, "[N, K/2]", {n, k / 2}, *d, "NK",
                       transposed ? "; is it transposed? o_weight_q is [N, K/2]" : ""))
           .ok()) {
    return s;
  }
  const int64_t sf_bytes = h3::SwizzledScaleBytes(n, k / 16);
  if (Numel(a->o_weight_sf) != sf_bytes || a->o_weight_sf.ndim < 1 || a->o_weight_sf.ndim > 4) {
    return Invalid(
        "minimax_h3_nvfp4_out_proj: %s must be %s, got %s", "o_weight_sf",
        absl::StrFormat("round_up(N,128) * round_up(K/16,4) = %d bytes (%s)", sf_bytes,
                        SymbolSources(*d, "NK")),
        absl::StrFormat("%d bytes (shape %s)", Numel(a->o_weight_sf), ShapeStr(a->o_weight_sf)));
  }
  if (a->o_weight_global_scale.data != nullptr &&
      !(s = CheckOneElement("o_weight_global_scale", a->o_weight_global_scale)).ok()) {
    return s;
  }
  if (!(s = CheckOneElement("act_global_scale", a->act_global_scale)).ok()) return s;
  if (!(s = CheckShape("gate", a->gate, "[G, N]", {g, n}, *d, "N")).ok()) return s;
  if (!(s = CheckShape("gate_index", a->gate_index, "[M]", {m}, *d, "M")).ok()) return s;
  if (a->residual.data != nullptr &&
      !(s = CheckShape("residual", a->residual, "[M, N]", {m, n}, *d, "MN")).ok()) {
    return s;
  }
  if (!(s = CheckShape("out", a->out, "[M, N]", {m, n}, *d, "MN")).ok()) return s;
  if (a->act_q.data != nullptr &&
      !(s = CheckShape("act_q", a->act_q, "[M, K/2]", {m, k / 2}, *d, "MK")).ok()) {
    return s;
  }
  if (a->act_sf.data != nullptr &&
      !(s = CheckShape("act_sf", a->act_sf, "[M, K/16]", {m, k / 16}, *d, "MK")).ok()) {
    return s;
  }
  return absl::OkStatus();
}

// ---- CPU (emulator) -------------------------------------------------------------------------

absl::Status CheckHostPtr(const char* name, const void* p, int64_t bytes) {
  if (p == nullptr && bytes > 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("minimax_h3_nvfp4_out_proj: %s must be host memory, got null", name));
  }
  return absl::OkStatus();
}

template <typename T>
absl::Span<const T> In(const H3Array& a, int64_t n) {
  return absl::Span<const T>(static_cast<const T*>(a.data), static_cast<size_t>(n));
}

// The emulator's inputs from checked arguments (host memory). residual.data == NULL: out.
absl::StatusOr<h3::OpInputs> CpuInputs(const H3OutProjArgs* a, bool check_outputs) {
  Dims d{};
  absl::Status s = CheckOperands(a, &d, [](const Dims& d) {
    return h3::ValidateShape(h3::OpShape{d.m, d.n, d.k, d.g});
  });
  if (!s.ok()) return s;
  const int64_t m = d.m, n = d.n, k = d.k, g = d.g;
  const void* residual = a->residual.data != nullptr ? a->residual.data : a->out.data;
  const int64_t sf_bytes = h3::SwizzledScaleBytes(n, k / 16);
  struct Need {
    const char* name;
    const void* p;
    int64_t bytes;
  };
  const Need need[] = {
      {"attn_out", a->attn_out.data, m * k * 2},
      {"o_weight_q", a->o_weight_q.data, n * (k / 2)},
      {"o_weight_sf", a->o_weight_sf.data, sf_bytes},
      {"act_global_scale", a->act_global_scale.data, 4},
      {"gate", a->gate.data, g * n * 2},
      {"gate_index", a->gate_index.data, m * 4},
      {"residual", residual, m * n * 2},
      {"out", a->out.data, check_outputs ? m * n * 2 : 0},
  };
  for (const Need& x : need) {
    if (!(s = CheckHostPtr(x.name, x.p, x.bytes)).ok()) return s;
  }
  if (check_outputs) {
    const std::vector<h3::ByteRange> inputs = {
        h3::RangeOf("attn_out", a->attn_out.data, m * k * 2),
        h3::RangeOf("o_weight_q", a->o_weight_q.data, n * (k / 2)),
        h3::RangeOf("o_weight_sf", a->o_weight_sf.data, sf_bytes),
        h3::RangeOf("o_weight_global_scale", a->o_weight_global_scale.data, 4),
        h3::RangeOf("act_global_scale", a->act_global_scale.data, 4),
        h3::RangeOf("gate", a->gate.data, g * n * 2),
        h3::RangeOf("gate_index", a->gate_index.data, m * 4),
        h3::RangeOf("residual", residual, m * n * 2),
    };
    const std::vector<h3::ByteRange> outputs = {
        h3::RangeOf("out", a->out.data, m * n * 2),
        h3::RangeOf("act_q", a->act_q.data, m * (k / 2)),
        h3::RangeOf("act_sf", a->act_sf.data, m * (k / 16)),
    };
    if (!(s = h3::CheckAliasing(inputs, outputs, residual == a->out.data)).ok()) return s;
  }
  h3::OpInputs in;
  in.shape = h3::OpShape{m, n, k, g};
  in.attn_out = In<uint16_t>(a->attn_out, m * k);
  in.o_weight_q = In<uint8_t>(a->o_weight_q, n * (k / 2));
  in.o_weight_sf = In<uint8_t>(a->o_weight_sf, sf_bytes);
  in.o_weight_global_scale = a->o_weight_global_scale.data != nullptr
                                 ? *static_cast<const float*>(a->o_weight_global_scale.data)
                                 : a->o_weight_global_scale_value;
  in.act_global_scale = *static_cast<const float*>(a->act_global_scale.data);
  in.gate = In<uint16_t>(a->gate, g * n);
  in.gate_index = In<int32_t>(a->gate_index, m);
  in.residual = absl::Span<const uint16_t>(static_cast<const uint16_t*>(residual),
                                           static_cast<size_t>(m * n));
  return in;
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
  // The kernel's own shape rule, in its wording: with m = 0 the host API validates n, k and g
  // and returns before touching any pointer or the device (m is checked by the real call).
  auto kernel_shape_rule = [](const Dims& d) {
    h3::OutProjArgs shape_only;
    shape_only.m = 0;
    shape_only.n = d.n;
    shape_only.k = d.k;
    shape_only.g = d.g;
    absl::Status s = h3::MinimaxH3Nvfp4OutProj(shape_only, nullptr, h3::CheckMode::kAsync);
    // The host API names its fields (n, k, g); the operands they came from are added here.
    if (s.ok()) return s;
    return absl::Status(s.code(),
                        absl::StrCat(s.message(), " (", SymbolSources(d, "MNKG"), ")"));
  };
  Dims d{};
  if (absl::Status s = CheckOperands(a, &d, kernel_shape_rule); !s.ok()) return s;
  if (a->ready_flags.data != nullptr) {
    const int64_t want = h3::OutProjReadyFlagBytes(d.m);
    if (a->ready_flags.ndim != 1 || a->ready_flags.shape[0] < want) {
      return Invalid("minimax_h3_nvfp4_out_proj: %s must be %s, got %s", "ready_flags",
                     absl::StrFormat("1-D with at least h3_ready_flag_bytes(M) = %d bytes", want),
                     ShapeStr(a->ready_flags));
    }
  }
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
  if (h3::FindOutProjTile(static_cast<h3::OutProjTile>(a->tile)) == nullptr) {
    return Invalid("minimax_h3_nvfp4_out_proj: %s must be %s, got %s", "tile",
                   "a registered tile config: " + h3::OutProjTileCodes(),
                   absl::StrCat(a->tile));
  }
  if (a->o_weight_global_scale.data == nullptr) {
    // A host value: checked here (the kernel checks device values only in kChecked mode).
    if (absl::Status s = h3::CheckGlobalScale("o_weight_global_scale",
                                              a->o_weight_global_scale_value);
        !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("minimax_h3_nvfp4_out_proj: ", s.message()));
    }
  }
  h3::OutProjArgs p;
  p.m = d.m;
  p.n = d.n;
  p.k = d.k;
  p.g = d.g;
  p.attn_out = static_cast<const uint16_t*>(a->attn_out.data);
  p.o_weight_q = static_cast<const uint8_t*>(a->o_weight_q.data);
  p.o_weight_sf = static_cast<const uint8_t*>(a->o_weight_sf.data);
  p.o_weight_global_scale = a->o_weight_global_scale_value;
  p.o_weight_global_scale_dev = static_cast<const float*>(a->o_weight_global_scale.data);
  p.act_global_scale = static_cast<const float*>(a->act_global_scale.data);
  p.gate = static_cast<const uint16_t*>(a->gate.data);
  p.gate_index = static_cast<const int32_t*>(a->gate_index.data);
  p.out = static_cast<uint16_t*>(a->out.data);
  p.residual = a->residual.data != nullptr ? static_cast<const uint16_t*>(a->residual.data) : p.out;
  p.act_q = static_cast<uint8_t*>(a->act_q.data);
  p.act_sf = static_cast<uint8_t*>(a->act_sf.data);
  p.ready_flags = a->ready_flags.data;
  p.ready_flags_zeroed = a->ready_flags_zeroed == 1;
  p.sm90_emulation =
      a->sm90_emulation == 1 ? h3::Sm90Emulation::kFast : h3::Sm90Emulation::kFaithful;
  p.tile = static_cast<h3::OutProjTile>(a->tile);
  if (d.m == 0) return h3::MinimaxH3Nvfp4OutProj(p, static_cast<cudaStream_t>(stream));
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
  absl::StatusOr<h3::OpInputs> in = CpuInputs(args, /*check_outputs=*/true);
  if (!in.ok()) return Fail(in.status());
  if (args->cpu_gemm != 0 && args->cpu_gemm != 1) {
    return Fail(Invalid("minimax_h3_nvfp4_out_proj: %s must be %s, got %s", "cpu_gemm",
                        "0 (fast) or 1 (exact)", absl::StrCat(args->cpu_gemm)));
  }
  const h3::OpShape& s = in->shape;
  h3::OpOutputs out;
  out.out =
      absl::Span<uint16_t>(static_cast<uint16_t*>(args->out.data), static_cast<size_t>(s.m * s.n));
  if (args->act_q.data != nullptr) {
    out.act_q = absl::Span<uint8_t>(static_cast<uint8_t*>(args->act_q.data),
                                    static_cast<size_t>(s.m * (s.k / 2)));
  }
  if (args->act_sf.data != nullptr) {
    out.act_sf = absl::Span<uint8_t>(static_cast<uint8_t*>(args->act_sf.data),
                                     static_cast<size_t>(s.m * (s.k / 16)));
  }
  return Done(
      h3::RunOp(*in, out, args->cpu_gemm == 1 ? h3::GemmPath::kExact : h3::GemmPath::kFastF32));
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
  absl::StatusOr<h3::OpInputs> in = CpuInputs(args, /*check_outputs=*/false);
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
