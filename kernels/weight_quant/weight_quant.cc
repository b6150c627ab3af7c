#include "kernels/weight_quant/weight_quant.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "core/global_scale.h"
#include "core/scale_layout.h"
#include "kernels/device/target_facts.h"
#include "kernels/weight_quant/weight_quant_kernel.h"

namespace h3 {
namespace {

constexpr char kFn[] = "quantize_minimax_h3_o_weight_nvfp4";

absl::Status CudaError(cudaError_t e, const char* what) {
  return absl::InternalError(absl::StrFormat("%s: %s failed: %s (%s)", kFn, what,
                                             cudaGetErrorName(e), cudaGetErrorString(e)));
}

absl::Status CheckPtr(const char* name, const void* p, int align) {
  if (p == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s must be a device pointer, got null", kFn, name));
  }
  if (reinterpret_cast<uintptr_t>(p) % align != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s must be %d-byte aligned, got address %p", kFn, name, align, p));
  }
  return absl::OkStatus();
}

struct Range {
  const char* name;
  uintptr_t begin, end;
};

absl::Status CheckNoOverlap(const Range& a, const Range& b) {
  if (a.begin < b.end && b.begin < a.end) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s must not overlap %s, got [%#x, %#x) and [%#x, %#x)", kFn, a.name,
                        b.name, a.begin, a.end, b.begin, b.end));
  }
  return absl::OkStatus();
}

absl::Status CheckDevice() {
  int dev = 0, major = 0, minor = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return CudaError(e, "cudaGetDevice");
  e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  if (e != cudaSuccess) return CudaError(e, "cudaDeviceGetAttribute(compute capability)");
  // Its kernels are built for the fused kernel's targets (kernels/device/target_facts.h).
  if (kernels::FindTarget(major, minor, /*sm90_fast=*/false) != nullptr) return absl::OkStatus();
  std::string supported;
  for (const kernels::TargetFacts* t : kernels::kTargets) {
    const std::string cc = kernels::CapabilityName(*t);  // two sm_90 targets: one "9.0"
    if (supported.find(cc) == std::string::npos) {
      supported += (supported.empty() ? "" : ", ") + cc;
    }
  }
  return absl::UnimplementedError(
      absl::StrFormat("%s: device %d has compute capability %d.%d; supported: %s", kFn, dev, major,
                      minor, supported));
}

// A kernel given host memory would fault and lose the context: refused by name instead.
absl::Status CheckDeviceMemory(const char* name, const void* p) {
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return CudaError(e, "cudaGetDevice");
  cudaPointerAttributes attr;
  e = cudaPointerGetAttributes(&attr, p);
  if (e != cudaSuccess) return CudaError(e, "cudaPointerGetAttributes");
  const bool device_memory =
      attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
  if (!device_memory || (attr.type == cudaMemoryTypeDevice && attr.device != dev)) {
    const char* kind = attr.type == cudaMemoryTypeHost           ? "pinned host memory"
                       : attr.type == cudaMemoryTypeUnregistered ? "host memory"
                                                                 : "memory of device";
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s must be device memory of the current device %d, got %s%s", kFn, name, dev, kind,
        attr.type == cudaMemoryTypeDevice ? absl::StrFormat(" %d", attr.device) : ""));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateWeightQuantArgs(const WeightQuantArgs& a) {
  if (a.n < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: weight n: expected >= 1, got %d", kFn, a.n));
  }
  if (a.k <= 0 || a.k % 16 != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: weight k: expected a positive multiple of 16, got %d", kFn, a.k));
  }
  // Byte counts below must fit int64 (the f32 weight's n * k * 4 is the largest).
  if (a.n > std::numeric_limits<int64_t>::max() / 4 / a.k) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: weight: expected n * k * 4 bytes to fit in int64, got n = %d, k = %d", kFn, a.n, a.k));
  }
  if (absl::Status s = CheckPtr("weight", a.weight, 16); !s.ok()) return s;
  if (absl::Status s = CheckPtr("q", a.q, 8); !s.ok()) return s;
  if (absl::Status s = CheckPtr("sf", a.sf, 4); !s.ok()) return s;
  auto range = [](const char* name, const void* p, int64_t bytes) {
    const uintptr_t b = reinterpret_cast<uintptr_t>(p);
    return Range{name, b, b + static_cast<uintptr_t>(bytes)};
  };
  const Range w = range("weight", a.weight, a.n * a.k * (a.weight_is_f32 ? 4 : 2));
  const Range q = range("q", a.q, a.n * (a.k / 2));
  const Range sf = range("sf", a.sf, SwizzledScaleBytes(a.n, a.k / 16));
  if (absl::Status s = CheckNoOverlap(q, w); !s.ok()) return s;
  if (absl::Status s = CheckNoOverlap(sf, w); !s.ok()) return s;
  return CheckNoOverlap(sf, q);
}

absl::StatusOr<float> QuantizeWeightNvfp4Gpu(const WeightQuantArgs& a, cudaStream_t stream) {
  if (absl::Status s = ValidateWeightQuantArgs(a); !s.ok()) return s;
  if (absl::Status s = CheckDevice(); !s.ok()) return s;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaError_t e = cudaStreamIsCapturing(stream, &capture);
  if (e != cudaSuccess) return CudaError(e, "cudaStreamIsCapturing");
  if (capture != cudaStreamCaptureStatusNone) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: stream must not be capturing (the quantizer synchronizes to return the global "
        "scale), got a stream in capture",
        kFn));
  }
  for (auto [name, p] :
       {std::pair<const char*, const void*>{"weight", a.weight}, {"q", a.q}, {"sf", a.sf}}) {
    if (absl::Status s = CheckDeviceMemory(name, p); !s.ok()) return s;
  }

  // Pass 1: amax and the first non-finite element, into a stream-ordered scratch.
  const int64_t count = a.n * a.k;
  void* scratch = nullptr;
  e = cudaMallocAsync(&scratch, sizeof(kernels::WeightAmaxScratch), stream);
  if (e != cudaSuccess) return CudaError(e, "cudaMallocAsync(amax scratch)");
  kernels::WeightAmaxScratch host{};
  auto* dev_scratch = static_cast<kernels::WeightAmaxScratch*>(scratch);
  e = cudaMemsetAsync(scratch, 0, sizeof(kernels::WeightAmaxScratch), stream);
  if (e == cudaSuccess) {
    e = kernels::LaunchWeightAmax(a.weight, a.weight_is_f32, count, dev_scratch, stream);
  }
  if (e == cudaSuccess) {
    e = cudaMemcpyAsync(&host, scratch, sizeof(host), cudaMemcpyDeviceToHost, stream);
  }
  const cudaError_t freed = cudaFreeAsync(scratch, stream);
  if (e == cudaSuccess) e = freed;
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) return CudaError(e, "the amax pass");

  if (host.not_first_bad != 0) {
    const int64_t i = static_cast<int64_t>(~host.not_first_bad);
    float v = 0.0f;
    if (a.weight_is_f32) {
      e = cudaMemcpy(&v, static_cast<const float*>(a.weight) + i, 4, cudaMemcpyDeviceToHost);
    } else {
      uint16_t b = 0;
      e = cudaMemcpy(&b, static_cast<const uint16_t*>(a.weight) + i, 2, cudaMemcpyDeviceToHost);
      const uint32_t bits = static_cast<uint32_t>(b) << 16;  // bf16 -> f32, exact
      std::memcpy(&v, &bits, 4);
    }
    if (e != cudaSuccess) return CudaError(e, "cudaMemcpy(the non-finite weight value)");
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: weight[%d, %d]: expected a finite value, got %g", kFn, i / a.k, i % a.k, v));
  }
  float amax = 0.0f;
  std::memcpy(&amax, &host.amax_bits, 4);
  // w_gs = RN(RN(1 / amax) * 2688), 1 when amax == 0: the emulator's own function
  // (core/global_scale.h), so the two quantizers cannot disagree on the scale.
  const absl::StatusOr<float> w_gs = WeightGlobalScale(amax);
  if (!w_gs.ok()) {
    return absl::Status(w_gs.status().code(),
                        absl::StrFormat("%s: %s", kFn, w_gs.status().message()));
  }
  const float gs = *w_gs;

  // Pass 2: codes and swizzled scales (padding included).
  e = kernels::LaunchWeightQuantize(a.weight, a.weight_is_f32, a.n, a.k, gs, a.q, a.sf, stream);
  if (e != cudaSuccess) return CudaError(e, "the quantize kernel's launch");
  return gs;
}

}  // namespace h3
