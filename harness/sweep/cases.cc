#include "harness/sweep/cases.h"

#include <regex>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace h3::sweep {
namespace {

using testbed::DataKind;
using testbed::GatePattern;
using testbed::SmoothPattern;

std::string ShapeTag(const OpShape& s) {
  if (s.n == kH3N && s.k == kH3K && s.g == kH3G) return "h3";
  return absl::StrCat("n", s.n, "k", s.k, "g", s.g);
}

OpShape WithM(OpShape shape, int64_t m) {
  shape.m = m;
  return shape;
}

CaseSpec Make(OpShape shape, int64_t m, DataKind data, GatePattern gate, bool inplace = false,
              bool caller_ws = true, SmoothPattern smooth = SmoothPattern::kNone) {
  CaseSpec spec;
  spec.problem.shape = WithM(shape, m);
  spec.problem.data = data;
  spec.problem.gate = gate;
  spec.problem.smooth = smooth;
  spec.out_is_residual = inplace;
  spec.caller_workspace = caller_ws;
  spec.name = CaseName(spec);
  return spec;
}

}  // namespace

std::string CaseName(const CaseSpec& spec) {
  const testbed::ProblemSpec& p = spec.problem;
  return absl::StrCat(ShapeTag(p.shape), "/m=", p.shape.m, "/", testbed::DataKindName(p.data), "/",
                      testbed::GatePatternName(p.gate), "/",
                      spec.out_is_residual ? "inplace" : "out", "/",
                      spec.caller_workspace ? "ws" : "nows",
                      p.smooth == SmoothPattern::kNone ? "" : "/smooth=",
                      testbed::SmoothPatternName(p.smooth),
                      p.lora_rank == 0 ? "" : absl::StrCat("/lora=", p.lora_rank));
}

std::vector<CaseSpec> DefaultCases() {
  using D = DataKind;
  using G = GatePattern;
  constexpr OpShape kH3 = {};
  constexpr int64_t t = kTileM;
  const int64_t wrap = kWrapTilesM * t + 3;  // past one full wave of tiles, and not a multiple
  std::vector<CaseSpec> cases;

  // The MiniMax-H3 shape: M from 0 through the tile edges to real token counts.
  cases.push_back(Make(kH3, 0, D::kExact, G::kAllValid));
  cases.push_back(Make(kH3, 1, D::kExact, G::kAllValid));
  cases.push_back(Make(kH3, 1, D::kSpecial, G::kMixedInvalid, /*inplace=*/true, /*ws=*/false));
  cases.push_back(Make(kH3, t - 1, D::kGaussian, G::kAllValid));
  cases.push_back(Make(kH3, t, D::kExact, G::kPaddingRuns));
  cases.push_back(Make(kH3, t, D::kExact, G::kOneRow, /*inplace=*/true));
  cases.push_back(Make(kH3, t + 1, D::kHeavyTail, G::kAllValid, /*inplace=*/true));
  cases.push_back(Make(kH3, t + 1, D::kExact, G::kMixedInvalid, false, /*ws=*/false));
  cases.push_back(Make(kH3, 2 * t, D::kSpecial, G::kMixedInvalid));
  cases.push_back(Make(kH3, 2 * t, D::kSaturate, G::kAllValid));
  cases.push_back(Make(kH3, wrap, D::kGaussian, G::kMixedInvalid, false, /*ws=*/false));
  cases.push_back(Make(kH3, wrap, D::kExact, G::kIntMax, /*inplace=*/true));
  cases.push_back(Make(kH3, kTokens480p5s, D::kGaussian, G::kPaddingRuns));
  cases.push_back(Make(kH3, kTokens720p5s, D::kHeavyTail, G::kMixedInvalid, /*inplace=*/true));
  cases.push_back(Make(kH3, kTokensPast2g, D::kExact, G::kAllValid));

  // Small shapes: every gate pattern on exact data at a tile edge, every data kind past a wave.
  for (G gate : {G::kAllValid, G::kPaddingRuns, G::kIndexG, G::kIntMin, G::kIntMax,
                 G::kMixedInvalid, G::kOneRow}) {
    cases.push_back(Make(kSmallShape, t + 1, D::kExact, gate));
  }
  for (D data : {D::kExact, D::kGaussian, D::kHeavyTail, D::kSpecial, D::kSaturate}) {
    cases.push_back(Make(kSmallShape, wrap, data, G::kMixedInvalid));
  }
  cases.push_back(Make(kSmallShape, 0, D::kGaussian, G::kAllValid));
  cases.push_back(Make(kSmallShape, 1, D::kGaussian, G::kAllValid));
  cases.push_back(Make(kSmallShape, t - 1, D::kHeavyTail, G::kPaddingRuns, true, false));
  cases.push_back(Make(kSmallShape, t, D::kGaussian, G::kIndexG, /*inplace=*/true));
  cases.push_back(Make(kSmallShape, t, D::kExact, G::kMixedInvalid, /*inplace=*/true, false));
  // 49 M tiles x 4 N tiles = 196 tiles: more than one wave on any target at this N.
  cases.push_back(Make(kSmallShape, 48 * t + 3, D::kGaussian, G::kPaddingRuns, false, false));
  cases.push_back(Make(kSmallShapeG3, t + 1, D::kExact, G::kIndexG));
  cases.push_back(Make(kSmallShapeG3, 3 * t + 17, D::kSpecial, G::kMixedInvalid, true));

  // act_smooth (contract section 12): exact data stays exact under per-block powers of two;
  // calibration-like factors on the real shape; every edge factor beside special activations.
  using S = SmoothPattern;
  cases.push_back(Make(kSmallShape, t + 1, D::kExact, G::kMixedInvalid, false, true, S::kPow2Block));
  cases.push_back(Make(kH3, t + 1, D::kHeavyTail, G::kMixedInvalid, false, true, S::kLogNormal));
  cases.push_back(Make(kH3, wrap, D::kGaussian, G::kPaddingRuns, true, false, S::kLogNormal));
  cases.push_back(Make(kSmallShape, wrap, D::kSpecial, G::kMixedInvalid, false, true, S::kExtreme));
  cases.push_back(Make(kSmallShapeG3, 2 * t, D::kSaturate, G::kAllValid, false, true, S::kExtreme));

  // The low-rank branch (contract section 13), r = 16 / 32 / 64, with and without smoothing.
  auto branch = [](CaseSpec c, int r) {
    c.problem.lora_rank = r;
    c.name = CaseName(c);
    return c;
  };
  cases.push_back(branch(Make(kSmallShape, t + 1, D::kExact, G::kMixedInvalid), 32));
  cases.push_back(branch(Make(kH3, t + 1, D::kHeavyTail, G::kMixedInvalid, false, true,
                              S::kLogNormal), 32));
  cases.push_back(branch(Make(kH3, wrap, D::kGaussian, G::kPaddingRuns, true, false), 16));
  cases.push_back(branch(Make(kSmallShape, wrap, D::kSpecial, G::kMixedInvalid, false, true,
                              S::kExtreme), 64));
  return cases;
}

std::vector<CaseSpec> ExtraMCases(absl::Span<const int64_t> ms) {
  std::vector<CaseSpec> cases;
  for (int64_t m : ms) {
    cases.push_back(Make(OpShape{}, m, DataKind::kGaussian, GatePattern::kMixedInvalid));
    cases.push_back(Make(OpShape{}, m, DataKind::kExact, GatePattern::kAllValid));
  }
  return cases;
}

absl::StatusOr<std::vector<CaseSpec>> FilterCases(std::vector<CaseSpec> cases,
                                                  const std::string& filter) {
  if (filter.empty()) return cases;
  std::regex re;
  try {
    re = std::regex(filter, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("--filter must be an ECMAScript regex, got '", filter, "': ", e.what()));
  }
  std::vector<CaseSpec> kept;
  for (CaseSpec& c : cases) {
    if (std::regex_search(c.name, re)) kept.push_back(std::move(c));
  }
  return kept;
}

}  // namespace h3::sweep
