#ifndef H3_KERNELS_BOUNDED_WAIT_CUH_
#define H3_KERNELS_BOUNDED_WAIT_CUH_

// Every wait of the fused kernel, bounded (stall.h): past p.wait_limit_ns x the role's factor the
// first thread to give up claims the call's stall word, writes the report to host-mapped memory
// and traps, so a hang on a part nobody has run becomes an error that names the wait. The bound
// is read from the timer only after a first failed try: a wait that succeeds at once costs what
// it did unbounded.

#include <cstdint>

#include "kernels/device/params.h"
#include "kernels/device/ptx.cuh"
#include "kernels/device/ready_flags.h"
#include "kernels/device/stall.h"

namespace h3::kernels {

struct WaitSite {
  WaitKind kind;
  int32_t a, b;  // per kind (stall.h)
  int32_t m_tile, n_tile;
  uint64_t bound;  // the role's factor (stall.h kLoaderBound ...)
};

__device__ __forceinline__ void GiveUpWaiting(const OutProjParams& p, const WaitSite& site,
                                              uint64_t waited_ns) {
  volatile StallReport* r = p.stall;
  if (atomicCAS(p.ready_flags + kStallClaim, 0u, 1u) == 0u) {
    if (r != nullptr) {
      r->kind = static_cast<uint32_t>(site.kind);
      r->block = blockIdx.x;
      r->thread = threadIdx.x;
      r->a = site.a;
      r->b = site.b;
      r->m_tile = site.m_tile;
      r->n_tile = site.n_tile;
      r->waited_ns = waited_ns;
      r->limit_ns = p.wait_limit_ns * site.bound;
      __threadfence_system();  // the fields before the state that tells the host they are there
      r->state = 1u;
      __threadfence_system();
    }
  } else if (r != nullptr) {
    // Others give up at about the same time: a trap of theirs would end the grid before the
    // winner's report reaches host memory. Wait for it (1 s at most), then trap.
    const uint64_t t0 = ptx::GlobalTimerNs();
    while (r->state != 1u && ptx::GlobalTimerNs() - t0 < 1000000000ull) __nanosleep(1000);
  }
  __trap();
}

// The slow path of MbarWaitBounded, entered only after a failed first try: polls until the phase
// completes, gives up past the site's bound. Out of line (__noinline__) so that the caller's loop
// holds one try and one branch per wait, as an unbounded wait would; p by reference (the kernel's
// __grid_constant__ parameter block, not copied).
inline __device__ __noinline__ void MbarWaitSlow(uint32_t bar, uint32_t parity,
                                                 const OutProjParams& p, WaitSite site) {
  const uint64_t t0 = ptx::GlobalTimerNs();
  while (!ptx::MbarTryWaitAddr(bar, parity)) {
    const uint64_t waited = ptx::GlobalTimerNs() - t0;
    if (waited > p.wait_limit_ns * site.bound) GiveUpWaiting(p, site, waited);
  }
}

// bar: the barrier's shared-memory address.
__device__ __forceinline__ void MbarWaitBoundedAddr(uint32_t bar, uint32_t parity,
                                                    const OutProjParams& p, const WaitSite& site) {
  if (!ptx::MbarTryWaitAddr(bar, parity)) MbarWaitSlow(bar, parity, p, site);
}
__device__ __forceinline__ void MbarWaitBounded(uint64_t* bar, uint32_t parity,
                                                const OutProjParams& p, const WaitSite& site) {
  MbarWaitBoundedAddr(ptx::SmemAddr(bar), parity, p, site);
}

}  // namespace h3::kernels

#endif  // H3_KERNELS_BOUNDED_WAIT_CUH_
