#include "kernels/launch/register_split.h"

#include <string>

#include "absl/strings/str_format.h"

namespace h3::kernels {

std::string RegisterSplitRefusal(const RegisterSplit& split, int launch_regs) {
  // A thread's registers are allocated in units of 8 (what setmaxnreg counts in too).
  const int allocated = (launch_regs + 7) / 8 * 8;
  const int pool = allocated * split.threads;
  if (pool >= split.Needs()) return "";
  return absl::StrFormat(
      "the kernel was compiled with %d registers per thread (a CTA pool of %d x %d = %d); its "
      "setmaxnreg split needs %d x %d + %d x %d = %d, so the consumers' setmaxnreg.inc would "
      "wait forever: refusing to launch (rebuild with the toolchain the kernel was checked with, "
      "or report the nvcc/ptxas version)",
      launch_regs, allocated, split.threads, pool, split.producer_threads, split.producer_regs,
      split.consumer_threads, split.consumer_regs, split.Needs());
}

}  // namespace h3::kernels
