#include "harness/bench/inputs.h"

#include <algorithm>
#include <cmath>

#include "core/scale_layout.h"
#include "emulator/formats.h"
#include "harness/bench/bench_kernels.cuh"
#include "harness/testbed/rows.h"

namespace h3::bench {
namespace {

int64_t g_bench_k = kH3K;

// Which tensor a testbed::Hash value belongs to.
enum Tensor : uint64_t { kAttn = 1, kResidual, kGate, kWBf16, kGateIndex, kWQ, kWSf };

absl::Status AllocSet(int64_t m, RotationSet& s) {
  H3_RETURN_IF_ERROR(s.attn.Alloc(m * BenchK()));
  H3_RETURN_IF_ERROR(s.residual.Alloc(m * kN));
  H3_RETURN_IF_ERROR(s.out.Alloc(m * kN));
  H3_RETURN_IF_ERROR(s.gate.Alloc(kG * kN));
  H3_RETURN_IF_ERROR(s.gate_index.Alloc(m));
  H3_RETURN_IF_ERROR(s.w_bf16.Alloc(kN * BenchK()));
  H3_RETURN_IF_ERROR(s.w_q.Alloc(kN * BenchK() / 2));
  H3_RETURN_IF_ERROR(s.w_sf.Alloc(SwizzledScaleBytes(kN, BenchK() / 16)));
  H3_RETURN_IF_ERROR(s.act_gs.Alloc(1));
  H3_RETURN_IF_ERROR(s.act_q.Alloc(m * BenchK() / 2));
  H3_RETURN_IF_ERROR(s.act_sf.Alloc(m * BenchK() / 16));
  H3_RETURN_IF_ERROR(s.act_sf_swz.Alloc(SwizzledScaleBytes(m, BenchK() / 16)));
  H3_RETURN_IF_ERROR(s.o_bf16.Alloc(m * kN));
  return s.o_f32.Alloc(m * kN);
}

absl::Status FillSet(int64_t m, uint64_t seed, cudaStream_t stream, RotationSet& s) {
  H3_CUDA_RETURN_IF_ERROR(
      FillUniformBf16(s.attn.get(), m, BenchK(), seed, kAttn, kAttnScale, stream));
  H3_CUDA_RETURN_IF_ERROR(FillUniformBf16(s.residual.get(), m, kN, seed, kResidual, 2.f, stream));
  H3_CUDA_RETURN_IF_ERROR(FillUniformBf16(s.gate.get(), kG, kN, seed, kGate, 1.f, stream));
  H3_CUDA_RETURN_IF_ERROR(
      FillUniformBf16(s.w_bf16.get(), kN, BenchK(), seed, kWBf16, 0.05f, stream));
  H3_CUDA_RETURN_IF_ERROR(FillGateIndex(s.gate_index.get(), m, kG, seed, kGateIndex, stream));
  H3_CUDA_RETURN_IF_ERROR(
      FillRandomBytes(s.w_q.get(), s.w_q.count(), seed, kWQ, 0xFF, 0x00, stream));
  // UE4M3 scales in [2^-3, 2): bytes 0x20..0x3F (padding bytes too; the op never reads them).
  H3_CUDA_RETURN_IF_ERROR(
      FillRandomBytes(s.w_sf.get(), s.w_sf.count(), seed, kWSf, 0x1F, 0x20, stream));
  // The swizzle step writes only the real scales: the padding stays zero, as cuBLASLt expects.
  H3_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(s.act_sf_swz.get(), 0, s.act_sf_swz.bytes(), stream));
  return testbed::CudaStatus(
      cudaMemcpyAsync(s.act_gs.get(), &kActGs, sizeof(float), cudaMemcpyHostToDevice, stream),
      "cudaMemcpyAsync (act_gs)");
}

}  // namespace

int64_t BenchK() { return g_bench_k; }
void SetBenchK(int64_t k) { g_bench_k = k; }

double FusedBytes(int64_t m) {
  const double md = static_cast<double>(m);
  return md * BenchK() * 2.0 + 2.0 * (md * BenchK() / 2.0 + md * BenchK() / 16.0) +
         kN * BenchK() / 2.0 + kN * BenchK() / 16.0 + 2.0 * md * kN * 2.0 + md * 4.0;
}

int RotationCount(int64_t m, int64_t l2_bytes) {
  return static_cast<int>(std::clamp(std::ceil(3.0 * l2_bytes / FusedBytes(m)), 2.0, 16.0));
}

absl::StatusOr<std::unique_ptr<Inputs>> MakeInputs(int64_t m, int64_t l2_bytes,
                                                   cudaStream_t stream) {
  auto in = std::make_unique<Inputs>();
  in->m = m;
  const int rotation = RotationCount(m, l2_bytes);
  for (int r = 0; r < rotation; ++r) {
    auto s = std::make_unique<RotationSet>();
    H3_RETURN_IF_ERROR(AllocSet(m, *s));
    H3_RETURN_IF_ERROR(FillSet(m, 1000 * static_cast<uint64_t>(m) + r, stream, *s));
    in->sets.push_back(std::move(s));
  }
  H3_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));

  const RotationSet& s0 = *in->sets[0];
  HostRows& h = in->host;
  h.rows = testbed::SampleRows(m, kCheckRows, /*seed=*/m);
  absl::StatusOr<std::vector<uint16_t>> attn =
      testbed::DownloadRows(s0.attn.get(), BenchK(), h.rows);
  absl::StatusOr<std::vector<uint16_t>> res = testbed::DownloadRows(s0.residual.get(), kN, h.rows);
  absl::StatusOr<std::vector<int32_t>> gi = testbed::DownloadRows(s0.gate_index.get(), 1, h.rows);
  absl::StatusOr<std::vector<uint16_t>> gate = s0.gate.Download();
  absl::StatusOr<std::vector<uint8_t>> w_q = s0.w_q.Download();
  absl::StatusOr<std::vector<uint8_t>> w_sf = s0.w_sf.Download();
  for (const absl::Status& st :
       {attn.status(), res.status(), gi.status(), gate.status(), w_q.status(), w_sf.status()}) {
    H3_RETURN_IF_ERROR(st);
  }
  h.attn = *std::move(attn);
  h.residual = *std::move(res);
  h.gate_index = *std::move(gi);
  h.gate = *std::move(gate);
  h.w_q = *std::move(w_q);
  h.w_sf = *std::move(w_sf);
  h.act_smooth.resize(static_cast<size_t>(BenchK()));
  for (int64_t c = 0; c < BenchK(); ++c) h.act_smooth[c] = SmoothFactor(c);
  H3_RETURN_IF_ERROR(in->act_smooth.Upload(h.act_smooth));
  // Branch factors of the testbed's sizes (1/sqrt(K) and 0.02 times 2^u - 1, u uniform in
  // [-1, 1]: not Gaussian, a fixed hash; the timing does not depend on the values), bf16.
  h.lora_down.resize(static_cast<size_t>(kBenchRank * BenchK()));
  h.lora_up.resize(static_cast<size_t>(kN * kBenchRank));
  const float down_sd = 1.0f / std::sqrt(static_cast<float>(BenchK()));
  for (size_t i = 0; i < h.lora_down.size(); ++i) {
    h.lora_down[i] = F32ToBf16(down_sd * (SmoothFactor(static_cast<int64_t>(i)) - 1.0f));
  }
  for (size_t i = 0; i < h.lora_up.size(); ++i) {
    h.lora_up[i] = F32ToBf16(0.02f * (SmoothFactor(static_cast<int64_t>(i) + 7) - 1.0f));
  }
  H3_RETURN_IF_ERROR(in->lora_down.Upload(h.lora_down));
  H3_RETURN_IF_ERROR(in->lora_up.Upload(h.lora_up));
  return in;
}

float SmoothFactor(int64_t c) {
  const uint64_t x = (static_cast<uint64_t>(c) + 1) * 0x9E3779B97F4A7C15ull;
  return std::exp2(static_cast<float>((x >> 40) % 2049) / 1024.0f - 1.0f);
}

}  // namespace h3::bench
