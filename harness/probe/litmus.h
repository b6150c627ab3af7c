#ifndef H3_HARNESS_PROBE_LITMUS_H_
#define H3_HARNESS_PROBE_LITMUS_H_

// The proxy-fence litmus of the probe (probe_kernels.cu RunProxyLitmus): the ready-flag hand-off
// of kernels/device/ready_flags.h in isolation - generic stores, release, acquire across CTAs, then a
// cp.async.bulk read (the async proxy) - run with and without its two proxy fences, counting the
// words the bulk copy read stale. The product always fences; the counts tell whether this
// hardware shows the race the fences close (the H200 shows none even unfenced: a zero is no
// proof that a fence is unneeded, a nonzero count proves it is needed).

#include <array>
#include <cstdint>

namespace h3::probe {

struct LitmusCounts {
  bool ran = false;
  int pairs = 0;   // writer/reader CTA pairs, all co-resident
  int rounds = 0;  // round trips per pair and variant
  // Variant v: bit 0 = the writer's fence.proxy.async.global before its release, bit 1 = the
  // reader's after its acquire (3: the product's protocol, 0: neither fence).
  std::array<uint64_t, 4> stale_words{};
  std::array<uint64_t, 4> timeouts{};  // CTAs that gave up waiting (1 s): the variant is void
};

}  // namespace h3::probe

#endif  // H3_HARNESS_PROBE_LITMUS_H_
