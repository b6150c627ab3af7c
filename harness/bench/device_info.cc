#include "harness/bench/device_info.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "harness/testbed/cuda.h"

namespace h3::bench {

absl::StatusOr<DeviceInfo> QueryDeviceInfo() {
  H3_RETURN_IF_ERROR(testbed::CheckCudaDevice());
  DeviceInfo d;
  H3_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&d.prop, 0));
  const std::string name = d.prop.name;
  // Datasheet leads: H200 / H100 SXM (NVIDIA product pages), RTX 5090 (docs/contract.md section 7).
  struct Row {
    const char* match;
    double bf16, nvfp4, gbps;
  };
  constexpr Row kTable[] = {
      {"H200", 989, 0, 4800}, {"H100", 989, 0, 3350}, {"RTX 5090", 209.5, 1676, 1792}};
  for (const Row& r : kTable) {
    if (name.find(r.match) != std::string::npos) {
      d.peak_bf16_tflops = r.bf16;
      d.peak_nvfp4_tflops = r.nvfp4;
      d.datasheet_gbps = r.gbps;
      break;
    }
  }
  if (d.prop.major >= 12) {
    d.peak_op_tflops = d.peak_nvfp4_tflops;
    d.peak_what = "dense NVFP4";
  } else {
    d.peak_op_tflops = d.peak_bf16_tflops;
    d.peak_what = "dense BF16 (the validation build's emulated MMA)";
  }
  return d;
}

absl::StatusOr<double> MeasureCopyBandwidthGbps() {
  constexpr size_t kBytes = size_t{1} << 30;
  testbed::DeviceBuffer<uint8_t> src, dst;  // [1 GiB] each
  H3_RETURN_IF_ERROR(src.Alloc(kBytes));
  H3_RETURN_IF_ERROR(dst.Alloc(kBytes));
  H3_RETURN_IF_ERROR(src.Fill(0));
  cudaEvent_t start = nullptr, stop = nullptr;
  H3_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start));
  H3_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop));
  float best_ms = 1e30f;
  absl::Status status;
  for (int i = 0; i < 10 && status.ok(); ++i) {
    float ms = 0;
    status.Update(testbed::CudaStatus(cudaEventRecord(start), "cudaEventRecord"));
    status.Update(
        testbed::CudaStatus(cudaMemcpyAsync(dst.get(), src.get(), kBytes, cudaMemcpyDeviceToDevice),
                            "cudaMemcpyAsync"));
    status.Update(testbed::CudaStatus(cudaEventRecord(stop), "cudaEventRecord"));
    status.Update(testbed::CudaStatus(cudaEventSynchronize(stop), "cudaEventSynchronize"));
    status.Update(
        testbed::CudaStatus(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime"));
    best_ms = std::min(best_ms, ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!status.ok()) return status;
  return 2.0 * kBytes / (best_ms / 1e3) / 1e9;
}

}  // namespace h3::bench
