#include "harness/probe/probe_device.h"

#include <cuda_runtime.h>

#include <vector>

#include "absl/strings/str_format.h"
#include "harness/probe/probe_kernels.cuh"
#include "harness/testbed/cuda.h"

namespace h3::probe {

using testbed::DeviceBuffer;

absl::StatusOr<DeviceResults> RunOnCurrentDevice(const ProbeCases& cases) {
  H3_RETURN_IF_ERROR(testbed::CheckCudaDevice());
  int dev = 0;
  H3_CUDA_RETURN_IF_ERROR(cudaGetDevice(&dev));
  cudaDeviceProp prop;
  H3_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, dev));

  DeviceResults r;
  r.device = absl::StrFormat("%s (sm_%d%d, %d SMs)", prop.name, prop.major, prop.minor,
                             prop.multiProcessorCount);

  DeviceBuffer<int> info;
  H3_RETURN_IF_ERROR(info.Upload(std::vector<int>{0, 0, 0}));
  H3_CUDA_RETURN_IF_ERROR(LaunchBuildInfo(info.get()));
  H3_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  absl::StatusOr<std::vector<int>> info_host = info.Download();
  if (!info_host.ok()) return info_host.status();
  const int arch = (*info_host)[0];
  r.native = (*info_host)[1] == 1;
  const bool raw_cvt = (*info_host)[2] == 1;
  r.device_code = r.native
                      ? absl::StrFormat(
                            "sm_%d kernel image: the NATIVE mma.sync ... kind::mxf4nvf4 "
                            "block_scale (kernels/device/mma.cuh) and cvt.rn.satfinite.e2m1x2.f32",
                            arch / 10)
                      : absl::StrFormat(
                            "sm_%d kernel image: the sm_90a VALIDATION build - the block-scaled "
                            "MMA emulated exactly from its registers by bf16 mma.sync "
                            "(kernels/sm90/mma_emulated.cuh), e2m1 by the software twin",
                            arch / 10);

  const size_t n = cases.mma.size();
  std::vector<uint32_t> a(n * 128), b(n * 64), sfa(n * 32), sfb(n * 32);
  std::vector<float> c(n * 128);
  for (size_t i = 0; i < n; ++i) {
    const MmaCase& mc = cases.mma[i];
    for (int l = 0; l < 32; ++l) {
      for (int j = 0; j < 4; ++j) {
        a[(i * 32 + l) * 4 + j] = mc.a[l][j];
        c[(i * 32 + l) * 4 + j] = mc.c[l][j];
      }
      for (int j = 0; j < 2; ++j) b[(i * 32 + l) * 2 + j] = mc.b[l][j];
      sfa[i * 32 + l] = mc.sfa[l];
      sfb[i * 32 + l] = mc.sfb[l];
    }
  }
  DeviceBuffer<uint32_t> da, db, dsfa, dsfb;
  DeviceBuffer<float> dc, dd;
  H3_RETURN_IF_ERROR(da.Upload(a));
  H3_RETURN_IF_ERROR(db.Upload(b));
  H3_RETURN_IF_ERROR(dsfa.Upload(sfa));
  H3_RETURN_IF_ERROR(dsfb.Upload(sfb));
  H3_RETURN_IF_ERROR(dc.Upload(c));
  H3_RETURN_IF_ERROR(dd.Alloc(n * 128));
  H3_RETURN_IF_ERROR(dd.Fill(0xFF));  // NaN: a lane that never writes shows up
  H3_CUDA_RETURN_IF_ERROR(LaunchMmaBatch(da.get(), db.get(), dc.get(), dsfa.get(), dsfb.get(),
                                         static_cast<int64_t>(n), dd.get()));
  H3_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  absl::StatusOr<std::vector<float>> d = dd.Download();
  if (!d.ok()) return d.status();
  r.d = *std::move(d);

  const size_t m = cases.e2m1.even.size();
  DeviceBuffer<float> deven, dodd;
  DeviceBuffer<uint8_t> dbytes, draw;
  H3_RETURN_IF_ERROR(deven.Upload(cases.e2m1.even));
  H3_RETURN_IF_ERROR(dodd.Upload(cases.e2m1.odd));
  H3_RETURN_IF_ERROR(dbytes.Alloc(m));
  H3_RETURN_IF_ERROR(draw.Alloc(m));
  H3_CUDA_RETURN_IF_ERROR(
      LaunchE2m1Batch(deven.get(), dodd.get(), static_cast<int64_t>(m), dbytes.get(), draw.get()));
  H3_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  absl::StatusOr<std::vector<uint8_t>> bytes = dbytes.Download();
  if (!bytes.ok()) return bytes.status();
  r.e2m1 = *std::move(bytes);
  if (raw_cvt) {
    absl::StatusOr<std::vector<uint8_t>> raw = draw.Download();
    if (!raw.ok()) return raw.status();
    r.raw_cvt = *std::move(raw);
  }
  // 30,000 round trips per fence variant where 60 pairs fit (every CTA must be resident).
  const int pairs = prop.multiProcessorCount / 2 < 60 ? prop.multiProcessorCount / 2 : 60;
  H3_CUDA_RETURN_IF_ERROR(RunProxyLitmus(pairs, 30000 / pairs, &r.litmus));
  return r;
}

}  // namespace h3::probe
