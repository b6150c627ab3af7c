#ifndef H3_KERNELS_REGISTER_SPLIT_H_
#define H3_KERNELS_REGISTER_SPLIT_H_

// What a kernel that moves registers between its warpgroups with setmaxnreg assumes about its
// launch, checked on the host before the first launch in a context (launch.cuh Configure).
// PTX ISA (setmaxnreg): the registers come from a per-CTA pool that setmaxnreg.dec fills, and
// setmaxnreg.inc blocks until the pool has enough. A CTA launched with fewer registers per
// thread than the split needs would therefore spin in the consumers' setmaxnreg.inc forever
// (USETMAXREG.TRY_ALLOC is a retry loop in the SASS): refuse it with a message instead. Plain
// C++ (no CUDA): the CPU test holds the rule to a table.

#include <string>

namespace h3::kernels {

struct RegisterSplit {
  int threads;           // of the CTA
  int producer_threads;  // setmaxnreg.dec to producer_regs
  int producer_regs;
  int consumer_threads;  // setmaxnreg.inc to consumer_regs
  int consumer_regs;
  int Needs() const { return producer_threads * producer_regs + consumer_threads * consumer_regs; }
};

// Empty when a CTA whose threads each got `launch_regs` registers can complete the split, else
// why not, in words a user can paste into a bug report.
std::string RegisterSplitRefusal(const RegisterSplit& split, int launch_regs);

}  // namespace h3::kernels

#endif  // H3_KERNELS_REGISTER_SPLIT_H_
