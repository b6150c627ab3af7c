#include "harness/probe/probe.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/formats.h"
#include "emulator/formats.h"
#include "emulator/mma_model.h"
#include "harness/probe/judge_internal.h"

namespace h3::probe {

// The device name of the CPU model (RunModelDevice), which FormatReport tells apart.
constexpr char kModelDevice[] = "CPU model";

// ============================================================================================
// Public
// ============================================================================================

const char* AreaName(Area a) {
  switch (a) {
    case Area::kLayout:
      return "layout";
    case Area::kPrecision:
      return "precision";
    case Area::kConversion:
      return "conversion";
  }
  return "?";
}

const char* GroupName(MmaKind k) {
  switch (k) {
    case MmaKind::kCD:
      return "C/D";
    case MmaKind::kA:
      return "A";
    case MmaKind::kB:
      return "B";
    case MmaKind::kSfa:
      return "SFA";
    case MmaKind::kSfb:
      return "SFB";
    case MmaKind::kExact:
      return "exact";
    case MmaKind::kBound:
      return "bound";
    case MmaKind::kSubnormal:
      return "subnormal";
    case MmaKind::kNan:
      return "nan";
  }
  return "?";
}

Area AreaOf(MmaKind k) {
  switch (k) {
    case MmaKind::kCD:
    case MmaKind::kA:
    case MmaKind::kB:
    case MmaKind::kSfa:
    case MmaKind::kSfb:
      return Area::kLayout;
    default:
      return Area::kPrecision;
  }
}

DeviceResults RunModelDevice(const ProbeCases& cases) {
  DeviceResults r;
  r.device = absl::StrCat(kModelDevice, " (no device)");
  r.device_code =
      "the contract's CPU model: emulator/mma_model.h (exact sum rounded once), "
      "emulator/formats.h F32ToE2M1";
  r.native = false;
  r.d.resize(cases.mma.size() * 128);
  for (size_t i = 0; i < cases.mma.size(); ++i) {
    const MmaCase& mc = cases.mma[i];
    MmaM16N8K64BlockScaled(mc.a, mc.b, mc.c, mc.sfa, mc.sfb,
                           reinterpret_cast<float(*)[4]>(r.d.data() + 128 * i));
  }
  r.e2m1.resize(cases.e2m1.even.size());
  for (size_t i = 0; i < r.e2m1.size(); ++i) {
    r.e2m1[i] =
        static_cast<uint8_t>(F32ToE2M1(cases.e2m1.even[i]) | (F32ToE2M1(cases.e2m1.odd[i]) << 4));
  }
  return r;
}

namespace {

// The check groups, in report order: area, name, unit, what the group checks.
struct GroupSpec {
  Area area;
  const char* name;
  const char* unit;
  const char* what;
};
constexpr GroupSpec kGroups[] = {
    {Area::kLayout, "C/D", "cases",
     "C passes through to D (A = B = 0), 128 distinct values: C and D fragments as section 7"},
    {Area::kLayout, "A", "cases",
     "one-hot A code per (row, k), 16 x 64; B spells k in binary across its columns, so D "
     "names the (row, k) the hardware used"},
    {Area::kLayout, "B", "cases",
     "one-hot B code per (k, column), 64 x 8; A spells k in binary down its rows"},
    {Area::kLayout, "SFA", "cases",
     "one 2.0 scale byte per (row, k-block), the rest 1.0; B's blocks weigh 1, 2, 4, 8; "
     "ignored lanes (l % 4 = 2, 3) hold distinct poison scales"},
    {Area::kLayout, "SFB", "cases",
     "one 2.0 scale byte per (column, k-block), the rest 1.0; A's blocks weigh 1, 2, 4, 8; "
     "ignored lanes (l % 4 != 0) hold distinct poison scales"},
    {Area::kPrecision, "exact", "elements",
     "exact data whose sums need all 24 bits (section 8 exact case): bit for bit"},
    {Area::kPrecision, "bound", "elements",
     "partial sums beyond 24 bits (guard ladder at C = +-2^24, cancellation of "
     "+-6*448*448, wide random scales, large C, k-permutations): |D - (C + sum p)| <= "
     "64 * 2^-24 * (|C| + sum |p|); elements whose data is exact: bit for bit"},
    {Area::kPrecision, "subnormal", "elements",
     "UE4M3 scales 0x01-0x07 (m * 2^-9) and 0x00 on SFA, SFB and both: bit for bit"},
    {Area::kPrecision, "nan", "elements",
     "scale 0x7F makes its row / column NaN (also over zero codes); a NaN C stays NaN; 0x7F "
     "in ignored lanes has no effect"},
    {Area::kConversion, "e2m1", "values",
     "Arch::E2m1Byte (the kernels' conversion) against F32ToE2M1: NaN -> 0x7, -0 and tiny "
     "negatives -> 0x8, ties to even, saturation to +-6, both nibbles"},
};

// The proxy-fence litmus as an observation (litmus.h): counts, not a verdict - the product
// fences either way, and a clean unfenced run does not show the fences are unneeded.
std::string LitmusMeasurement(const LitmusCounts& l) {
  if (!l.ran) return "proxy-fence litmus: not run (no GPU)";
  const char* names[4] = {"no fence", "writer fence only", "reader fence only",
                          "both fences (the product)"};
  std::vector<std::string> parts;
  uint64_t timeouts = 0;
  for (int v = 3; v >= 0; --v) {
    parts.push_back(absl::StrFormat("%s %d stale words%s", names[v], l.stale_words[v],
                                    l.timeouts[v] ? absl::StrFormat(" (%d CTAs timed out)",
                                                                    l.timeouts[v])
                                                  : ""));
    timeouts += l.timeouts[v];
  }
  const bool race = l.stale_words[0] + l.stale_words[1] + l.stale_words[2] > 0;
  return absl::StrFormat(
      "proxy-fence litmus (generic stores -> release -> acquire -> cp.async.bulk across CTAs, "
      "%d pairs x %d round trips per variant): %s; %s",
      l.pairs, l.rounds, absl::StrJoin(parts, ", "),
      l.stale_words[3] > 0 ? "STALE READS EVEN WITH BOTH FENCES: the ready-flag protocol is "
                             "broken on this device"
      : race     ? "this device reads stale data without the fences: they are needed (and present)"
      : timeouts ? "VOID: CTAs timed out (not all resident?), no conclusion"
                 : "no stale read in any variant: this device does not show the race the fences "
                   "close (they stay)");
}

}  // namespace

Report Judge(const ProbeCases& cases, const DeviceResults& results, const JudgeOptions& opt) {
  Report rep;
  rep.device_info.device = results.device;
  rep.device_info.device_code = results.device_code;
  rep.device_info.native = results.native;
  for (const GroupSpec& spec : kGroups) {
    GroupResult g;
    g.area = spec.area;
    g.name = spec.name;
    g.unit = spec.unit;
    g.what = spec.what;
    rep.groups.push_back(std::move(g));
  }

  const size_t ncases = cases.mma.size();
  if (results.d.size() != ncases * 128) {
    AddFailure(Group(rep.groups, "C/D"), opt,
               absl::StrFormat("the device returned %d D values, expected %d", results.d.size(),
                               ncases * 128));
  }
  PrecisionJudge precision;
  for (size_t ci = 0; ci < ncases && results.d.size() == ncases * 128; ++ci) {
    const MmaCase& mc = cases.mma[ci];
    float D[16][8], E[16][8], e_frag[32][4];
    UnpackD(results.d.data() + 128 * ci, D);
    GroupResult& g = Group(rep.groups, GroupName(mc.kind));
    if (AreaOf(mc.kind) != Area::kLayout) {
      precision.Case(mc, D, g, opt);
      continue;
    }
    // Layout: the whole D against the contract's model, then what moved where.
    MmaM16N8K64BlockScaled(mc.a, mc.b, mc.c, mc.sfa, mc.sfb, e_frag);
    UnpackD(&e_frag[0][0], E);
    ++g.checked;
    bool ok = true;
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 8; ++n) ok = ok && Same(D[m][n], E[m][n]);
    }
    if (!ok) AddFailure(g, opt, DiagnoseLayout(mc, D, E));
  }
  JudgeE2m1(cases, results, Group(rep.groups, "e2m1"), opt);
  precision.AppendMeasurements(rep.measurements);
  rep.measurements.push_back(RawCvtMeasurement(cases, results));
  rep.measurements.push_back(LitmusMeasurement(results.litmus));

  // Verdict.
  std::vector<std::string> bad[3];
  for (const GroupResult& g : rep.groups) {
    if (!g.ok()) bad[static_cast<int>(g.area)].push_back(g.name);
  }
  rep.layout_ok = bad[0].empty();
  rep.precision_ok = bad[1].empty();
  rep.conversion_ok = bad[2].empty();
  rep.protocol_broken = results.litmus.ran && results.litmus.stale_words[3] > 0;
  std::vector<std::string> v;
  if (!rep.layout_ok) {
    v.push_back(absl::StrCat("LAYOUT BUG in ", absl::StrJoin(bad[0], ", "),
                             ": the instruction does not read/write these operands where "
                             "docs/contract.md section 7 says (see the failures above); fix "
                             "kernels/device/fragment_math.h / the contract's table before reading the "
                             "precision results, which assume the layout"));
    const bool a_bad = !Group(rep.groups, "A").ok(), b_bad = !Group(rep.groups, "B").ok();
    if (a_bad && b_bad) {
      v.push_back(
          "A and B are located through each other (an A case finds its k through B's "
          "pattern and vice versa): a row / column move names the operand at fault, but a "
          "k mismatch seen in both groups only says that A's and B's k orders disagree");
    }
  }
  if (!rep.precision_ok) {
    v.push_back(absl::StrCat(
        rep.layout_ok ? "ACCUMULATION DEVIATION" : "also precision failures", " in ",
        absl::StrJoin(bad[1], ", "),
        rep.layout_ok ? ": the layout is right, but the device's arithmetic is not the "
                        "contract's (section 8 bound / exact case, subnormal or NaN scales)"
                      : " (possibly consequences of the layout bug)"));
  }
  if (!rep.conversion_ok) {
    v.push_back(
        absl::StrCat("E2M1 CONVERSION DIFFERENCE in Arch::E2m1Byte (section 2): act_q "
                     "will differ from the emulator"));
  }
  if (rep.protocol_broken) {
    v.push_back(
        "READY-FLAG PROTOCOL BROKEN: the proxy-fence litmus read stale data with both fences in "
        "place (kernels/device/ready_flags.h); results of the fused kernel cannot be trusted here");
  }
  if (v.empty()) {
    v.push_back(
        "layout as section 7 (A, B, SFA, SFB, C/D), accumulation within section 8 (exact sums "
        "bit for bit, the rest within the bound), subnormal and NaN scales as sections 2 and 6, "
        "e2m1 as section 2: a sweep failure on this device is neither the instruction's layout, "
        "its accumulation nor the e2m1 conversion");
  }
  rep.verdict = absl::StrJoin(v, ". ");
  if (!results.native) {
    absl::StrAppend(&rep.verdict,
                    ". NOTE: the block-scaled MMA here is not the SM120 hardware instruction (",
                    results.device_code, ")");
  }
  return rep;
}

std::string FormatReport(const Report& r) {
  std::string s;
  absl::StrAppend(&s,
                  "minimax_h3_nvfp4_out_proj probe: the block-scaled mma.sync m16n8k64 "
                  "kind::mxf4nvf4 scale_vec::4X ue4m3 and the e2m1 conversion against "
                  "docs/contract.md sections 2, 6, 7, 8\n");
  absl::StrAppend(&s, "device: ", r.device_info.device, "\n");
  absl::StrAppend(&s, "device code: ", r.device_info.device_code, "\n");
  const char* headers[3] = {"layout (section 7)", "precision (sections 2, 6, 8)",
                            "conversion (section 2)"};
  for (int area = 0; area < 3; ++area) {
    absl::StrAppend(&s, headers[area], "\n");
    for (const GroupResult& g : r.groups) {
      if (static_cast<int>(g.area) != area) continue;
      absl::StrAppend(
          &s, absl::StrFormat("  %s  %-10s %6d/%-6d %-11s %s\n", g.ok() ? "PASS" : "FAIL", g.name,
                              g.checked - g.failed, g.checked, g.unit + " ok", g.what));
      for (const std::string& f : g.failures) absl::StrAppend(&s, "        ", f, "\n");
      if (g.failed > static_cast<int64_t>(g.failures.size())) {
        absl::StrAppend(&s, absl::StrFormat("        ... and %d more\n",
                                            g.failed - static_cast<int64_t>(g.failures.size())));
      }
    }
  }
  absl::StrAppend(&s, "measured (observations, not judged):\n");
  for (const std::string& m : r.measurements) absl::StrAppend(&s, "  ", m, "\n");
  absl::StrAppend(&s, "verdict: ", r.verdict, "\n");
  // The CPU model stands in where no GPU is: a pass then checks the probe, not a device.
  const bool model = absl::StartsWith(r.device_info.device, kModelDevice);
  absl::StrAppend(&s, !r.passed() ? "PROBE FAILED\n"
                      : model     ? "SELF-CHECK PASSED; no GPU probed\n"
                                  : "PROBE PASSED\n");
  return s;
}

std::string ReportJson(const Report& r) {
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const GroupResult& g : r.groups) {
    groups.push_back({{"area", AreaName(g.area)},
                      {"name", g.name},
                      {"what", g.what},
                      {"unit", g.unit},
                      {"checked", g.checked},
                      {"failed", g.failed},
                      {"pass", g.ok()},
                      {"failures", g.failures}});
  }
  const nlohmann::ordered_json j = {
      {"device", r.device_info.device},
      {"device_code", r.device_info.device_code},
      {"native", r.device_info.native},
      {"layout_ok", r.layout_ok},
      {"precision_ok", r.precision_ok},
      {"conversion_ok", r.conversion_ok},
      {"protocol_broken", r.protocol_broken},
      {"passed", r.passed()},
      {"verdict", r.verdict},
      {"groups", groups},
      {"measurements", r.measurements},
  };
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace h3::probe
