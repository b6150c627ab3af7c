// The device the benchmark runs on and the two rooflines its columns are measured against: the
// datasheet peaks (dense, no sparsity) and the measured device-to-device copy bandwidth.

#ifndef H3_HARNESS_BENCH_DEVICE_INFO_H_
#define H3_HARNESS_BENCH_DEVICE_INFO_H_

#include <cuda_runtime.h>

#include <string>

#include "absl/status/statusor.h"

namespace h3::bench {

struct DeviceInfo {
  cudaDeviceProp prop;
  // Datasheet figures, 0 where the device is not in the table.
  double peak_bf16_tflops = 0;
  double peak_nvfp4_tflops = 0;
  double datasheet_gbps = 0;
  // The fused op's MMA format: dense NVFP4 on sm_120; on sm_90 the validation build emulates the
  // block-scaled MMA with bf16 MMAs, so its roofline is the bf16 peak.
  double peak_op_tflops = 0;
  std::string peak_what;
};

// Device 0's properties and datasheet figures; Unavailable when there is no CUDA device.
absl::StatusOr<DeviceInfo> QueryDeviceInfo();

// The best of 10 device-to-device copies of 1 GiB, as (bytes read + bytes written) per second
// in GB/s: the memory roofline the bench's pct_copy_bw column is relative to.
absl::StatusOr<double> MeasureCopyBandwidthGbps();

}  // namespace h3::bench

#endif  // H3_HARNESS_BENCH_DEVICE_INFO_H_
