// The sweep's case table: which shapes, gate_index patterns, data and buffer arrangements the
// main job checks against the contract (issue 5, item 1).

#ifndef H3_HARNESS_SWEEP_CASES_H_
#define H3_HARNESS_SWEEP_CASES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/shape.h"
#include "harness/testbed/problem.h"
#include "harness/testbed/rows.h"

namespace h3::sweep {

// M of one kernel tile (kernels/device/config.cuh kBM; harness/testbed/gpu_run.cc checks it).
inline constexpr int64_t kTileM = testbed::kTileM;
// Tiles after which every CTA of the persistent grid has taken a second tile: more N tiles
// times M tiles than SMs on any target (H200: 132, RTX 5090: 170) once M >= 8 tiles at the
// MiniMax-H3 N (42 tiles of 128 columns).
inline constexpr int64_t kWrapTilesM = 8;

// Token counts of real MiniMax-H3 clips, estimated (not taken from a published config): a
// 5-second clip at 16 fps is 81 frames -> 21 latent frames (4x temporal VAE) at 16x16 pixels per
// token, plus 256 text tokens. 720p: 21*45*80 + 256; 480p: 21*30*52 + 256.
inline constexpr int64_t kTokens480p5s = 21 * 30 * 52 + 256;  // 33016
inline constexpr int64_t kTokens720p5s = 21 * 45 * 80 + 256;  // 75856 (> 65536)
// attn_out has more than 2^31 elements: every offset must be 64-bit.
inline constexpr int64_t kTokensPast2g = 300000;

struct CaseSpec {
  std::string name;
  testbed::ProblemSpec problem;  // shape (with the case's M), data kind, gate_index pattern
  bool out_is_residual = false;  // out and residual are one buffer (in-place update)
  bool caller_workspace = true;  // act_q/act_sf given by the caller (and then compared)
};

// "<shape>/m=<M>/<data>/<gate>/<out|inplace>/<ws|nows>[/smooth=<pattern>]", e.g.
// "h3/m=129/gauss/valid/out/ws".
std::string CaseName(const CaseSpec& spec);

// Small shapes that keep many combinations cheap: N and K multiples of 256 so any tile of up to
// 256 in N and K divides them; K/64 = 16 k-steps, more than any pipeline's stage count.
inline constexpr OpShape kSmallShape = {0, 512, 1024, kH3G};
inline constexpr OpShape kSmallShapeG3 = {0, 256, 2048, 3};

// The embedded default sweep (no arguments needed).
std::vector<CaseSpec> DefaultCases();

// Cases for additional M values (`--extra_m`): each M at the MiniMax-H3 shape, Gaussian data
// and exact data.
std::vector<CaseSpec> ExtraMCases(absl::Span<const int64_t> ms);

// Keeps the cases whose name matches the ECMAScript regex `filter` (empty = all).
absl::StatusOr<std::vector<CaseSpec>> FilterCases(std::vector<CaseSpec> cases,
                                                  const std::string& filter);

}  // namespace h3::sweep

#endif  // H3_HARNESS_SWEEP_CASES_H_
