#ifndef H3_KERNELS_STALL_HOST_H_
#define H3_KERNELS_STALL_HOST_H_

// The host side of the kernel's bounded waits (stall.h): the bound, and the per-context report
// the kernel writes when it gives up.

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "kernels/device/stall.h"

namespace h3::kernels {

// The bound of every wait, in ns: MINIMAX_H3_NVFP4_WAIT_LIMIT_MS (read once) or the build's
// default (10 s where assertions are on, 60 s in release builds).
absl::StatusOr<uint64_t> WaitLimitNs();

// Context `ctx`'s report: host-mapped pinned memory, readable after the kernel traps and the
// context is lost. With `allocate`, made on the first call that may allocate (the allocation
// runs in relaxed capture mode, so a capture elsewhere in the process stays valid; it is not
// attempted while `stream` itself is being captured, and a failure is not retried); null until
// then, and the waits stay bounded without a report.
StallReport* StallReportOf(unsigned long long ctx, cudaStream_t stream, bool allocate);

}  // namespace h3::kernels

#endif  // H3_KERNELS_STALL_HOST_H_
