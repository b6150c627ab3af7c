#include "kernels/device/stall.h"

#include <string>

#include "absl/strings/str_format.h"

namespace h3::kernels {
namespace {

// Warp roles of the fused kernel (config.cuh: warp 0 loads, 1..3 quantize, 4.. consume).
std::string Role(uint32_t thread) {
  const uint32_t warp = thread / 32;
  if (warp == 0) return "the load warp";
  if (warp < 4) return absl::StrFormat("quantizer warp %d", warp);
  return absl::StrFormat("consumer warp %d (group %d)", warp - 4, (warp - 4) / 4);
}

std::string What(const StallReport& r) {
  switch (static_cast<WaitKind>(r.kind)) {
    case WaitKind::kChunkReady:
      return absl::StrFormat("the ready flag of k-chunk %d of m-tile %d (quantizer warps publish it)",
                             r.a, r.m_tile);
    case WaitKind::kSlotA:
      return absl::StrFormat("a free A ring stage %d (phase %d; consumers release it)", r.a, r.b);
    case WaitKind::kSlotB:
      return absl::StrFormat("a free stage %d of B ring %d (its consumer group releases it)", r.b,
                             r.a);
    case WaitKind::kFullA:
      return absl::StrFormat("A ring stage %d, phase %d, to fill (TMA, by the load warp)", r.a,
                             r.b);
    case WaitKind::kFullB:
      return absl::StrFormat("B ring slot %d, phase %d, to fill (TMA, by the load warp)", r.a, r.b);
    case WaitKind::kSkewGate:
      return absl::StrFormat("skew gate %d, phase %d (the leading consumer group opens it)", r.a,
                             r.b);
    case WaitKind::kBranchReady:
      return absl::StrFormat(
          "the low-rank branch's l of m-tile %d (%d of its %d row groups written; quantizer warps "
          "write it)",
          r.m_tile, r.a, r.b);
    case WaitKind::kFullStaged:
      return absl::StrFormat("ring stage %d, phase %d, to fill (TMA, by the load warp)", r.a, r.b);
    case WaitKind::kTEmpty:
      return absl::StrFormat(
          "the staged t tile, phase parity %d, to be drained of the CTA's tile %d (quantizer "
          "warps drain it)",
          r.a, r.b - 1);
    case WaitKind::kTFull:
      return absl::StrFormat(
          "the staged t tile of the CTA's tile %d, phase parity %d, to be written (consumers "
          "write it)",
          r.b, r.a);
    case WaitKind::kNone:
      break;
  }
  return absl::StrFormat("wait kind %d", r.kind);
}

}  // namespace

std::string StallMessage(const StallReport& r) {
  return absl::StrFormat(
      "the kernel gave up waiting: CTA %d, thread %d (%s) waited %.3f s (its limit %.3f s) for %s, "
      "at tile (m-tile %d, n-tile %d)",
      r.block, r.thread, Role(r.thread), r.waited_ns * 1e-9, r.limit_ns * 1e-9, What(r), r.m_tile,
      r.n_tile);
}

}  // namespace h3::kernels
