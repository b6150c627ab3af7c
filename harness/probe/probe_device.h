#ifndef H3_HARNESS_PROBE_PROBE_DEVICE_H_
#define H3_HARNESS_PROBE_PROBE_DEVICE_H_

// The probe's tables on the current CUDA device (probe_kernels.cuh), results for probe.h's Judge.

#include "absl/status/statusor.h"
#include "harness/probe/probe.h"

namespace h3::probe {

// Runs every MMA case (one warp each) and every e2m1 pair on the current device. Unavailable
// when there is no usable CUDA device; Internal on a CUDA error (e.g. no kernel image for this
// architecture: the probe is built for sm_90a and sm_120f).
absl::StatusOr<DeviceResults> RunOnCurrentDevice(const ProbeCases& cases);

}  // namespace h3::probe

#endif  // H3_HARNESS_PROBE_PROBE_DEVICE_H_
