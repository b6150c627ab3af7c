#include "harness/sweep/golden.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "emulator/check.h"
#include "emulator/op.h"
#include "emulator/quantize.h"
#include "emulator/swizzle.h"
#include "harness/npy.h"
#include "harness/testbed/compare.h"
#include "harness/testbed/problem.h"
#include "harness/testbed/rows.h"

namespace h3::sweep {
namespace {

namespace fs = std::filesystem;

template <typename T>
absl::Status Load(const std::string& prefix, const char* key, TypedArray<T>& a, int rank) {
  const std::string path = absl::StrCat(prefix, "_", key, ".npy");
  absl::StatusOr<TypedArray<T>> r = ReadNpyAs<T>(path);
  if (!r.ok()) return r.status();
  if (rank >= 0 && static_cast<int>(r->shape.size()) != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected rank ", rank, ", got rank ", r->shape.size()));
  }
  a = *std::move(r);
  return absl::OkStatus();
}

struct Golden {
  testbed::Problem problem;
  std::vector<uint16_t> out;
  std::vector<uint8_t> act_q, act_sf;
};

absl::StatusOr<Golden> LoadGolden(const std::string& dir) {
  TypedArray<uint16_t> attn, gate, residual, out;
  TypedArray<uint8_t> wq, wsf, act_q, act_sf;
  TypedArray<float> wgs, ags;
  TypedArray<int32_t> gidx;
  absl::Status st;
  if (!(st = Load(dir, "attn_out", attn, 2)).ok()) return st;
  if (!(st = Load(dir, "o_weight_q", wq, 2)).ok()) return st;
  if (!(st = Load(dir, "o_weight_sf", wsf, -1)).ok()) return st;
  if (!(st = Load(dir, "o_weight_global_scale", wgs, -1)).ok()) return st;
  if (!(st = Load(dir, "act_global_scale", ags, -1)).ok()) return st;
  if (!(st = Load(dir, "gate", gate, 2)).ok()) return st;
  if (!(st = Load(dir, "gate_index", gidx, 1)).ok()) return st;
  if (!(st = Load(dir, "residual", residual, 2)).ok()) return st;
  if (!(st = Load(dir, "out", out, 2)).ok()) return st;
  if (!(st = Load(dir, "act_q", act_q, 2)).ok()) return st;
  if (!(st = Load(dir, "act_sf", act_sf, 2)).ok()) return st;
  if (wgs.data.size() != 1 || ags.data.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": the global scale files must hold one value each, got ",
                     wgs.data.size(), " and ", ags.data.size()));
  }
  Golden g;
  testbed::Problem& p = g.problem;
  p.shape = OpShape{attn.shape[0], gate.shape[1], attn.shape[1], gate.shape[0]};
  p.case_m = p.shape.m;
  p.rows = testbed::AllRows(p.shape.m);
  p.attn_out = std::move(attn.data);
  p.gate = std::move(gate.data);
  p.gate_index = std::move(gidx.data);
  p.residual = std::move(residual.data);
  p.act_global_scale = ags.data[0];
  auto w = std::make_shared<QuantizedWeight>();
  w->n = wq.shape[0];
  w->k = wq.shape[1] * 2;
  w->q = std::move(wq.data);
  w->sf = std::move(wsf.data);
  w->global_scale = wgs.data[0];
  p.weight = std::move(w);
  g.out = std::move(out.data);
  g.act_q = std::move(act_q.data);
  g.act_sf = std::move(act_sf.data);
  return g;
}

}  // namespace

std::vector<GoldenCase> FindGoldenCases(const std::string& testdata_dir) {
  std::vector<GoldenCase> found;
  std::ifstream manifest(fs::path(testdata_dir) / "MANIFEST.txt");
  std::string line;
  while (std::getline(manifest, line)) {
    std::istringstream words(line);
    std::string kind, name;
    if (!(words >> kind >> name) || kind[0] == '#') continue;
    GoldenCase g;
    if (kind == "op") {
      g.kind = GoldenCase::Kind::kOp;
    } else if (kind == "quant") {
      g.kind = GoldenCase::Kind::kQuant;
    } else {
      continue;
    }
    g.name = absl::StrCat("golden/", name);
    g.prefix = (fs::path(testdata_dir) / name).string();
    found.push_back(std::move(g));
  }
  return found;
}

namespace {

// A quant golden as a whole-op problem: its activations, a zero weight (N = 128, scales 1),
// gate row 0 of zeros for every row, zero residual.
absl::StatusOr<Golden> LoadQuantGolden(const std::string& prefix) {
  TypedArray<uint16_t> x;
  TypedArray<uint8_t> codes, scales;
  TypedArray<float> gs;
  absl::Status st;
  if (!(st = Load(prefix, "x", x, 2)).ok()) return st;
  if (!(st = Load(prefix, "gs", gs, -1)).ok()) return st;
  if (!(st = Load(prefix, "codes", codes, 2)).ok()) return st;
  if (!(st = Load(prefix, "scales", scales, 2)).ok()) return st;
  if (gs.data.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "_gs.npy: expected one value, got ", gs.data.size()));
  }
  Golden g;
  testbed::Problem& p = g.problem;
  const int64_t n = 128;
  p.shape = OpShape{x.shape[0], n, x.shape[1], 1};
  p.case_m = p.shape.m;
  p.rows = testbed::AllRows(p.shape.m);
  p.attn_out = std::move(x.data);
  p.gate.assign(static_cast<size_t>(n), 0);
  p.gate_index.assign(static_cast<size_t>(p.shape.m), 0);
  p.residual.assign(static_cast<size_t>(p.shape.m * n), 0);
  p.act_global_scale = gs.data[0];
  auto w = std::make_shared<QuantizedWeight>();
  w->n = n;
  w->k = p.shape.k;
  w->q.assign(static_cast<size_t>(n * (p.shape.k / 2)), 0);
  // UE4M3 0x38 = 1.0 in every scale, padding included (it is never read).
  w->sf.assign(static_cast<size_t>(SwizzledScaleBytes(n, p.shape.k / 16)), 0x38);
  w->global_scale = 1.f;
  p.weight = std::move(w);
  g.act_q = std::move(codes.data);
  g.act_sf = std::move(scales.data);
  return g;
}

}  // namespace

CaseResult RunGoldenCase(const GoldenCase& golden, DeviceBackend* device) {
  const auto t0 = std::chrono::steady_clock::now();
  CaseResult r;
  r.name = golden.name;
  r.backend = device ? "gpu" : "emulator";
  auto finish = [&](Verdict v) {
    r.verdict = v;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  };
  const bool is_op = golden.kind == GoldenCase::Kind::kOp;
  absl::StatusOr<Golden> g = is_op ? LoadGolden(golden.prefix) : LoadQuantGolden(golden.prefix);
  if (!g.ok()) {
    r.first_mismatch = std::string(g.status().message());
    return finish(Verdict::kError);
  }
  const testbed::Problem& p = g->problem;
  const OpShape& s = p.shape;
  r.m = s.m;
  r.n = s.n;
  r.k = s.k;
  r.rows_compared = s.m;
  testbed::Comparison c;
  auto judged = [&] {
    TakeComparison(c, r);
    return finish(c.pass ? Verdict::kPass : Verdict::kFail);
  };
  std::vector<uint8_t> act_q(g->act_q.size(), 0xFF), act_sf(g->act_sf.size(), 0xFF);
  // act_q/act_sf against the golden's own bytes (not the emulator's).
  auto compare_act = [&](absl::string_view label) {
    c.act_check = "bit-exact";
    const std::string prefix = absl::StrCat(label, " ");
    testbed::JudgeBytes("act_q", g->act_q, act_q, s.k / 2, p.rows, prefix, c);
    testbed::JudgeBytes("act_sf", g->act_sf, act_sf, s.k / 16, p.rows, prefix, c);
  };

  if (!is_op && device == nullptr) {
    // The quantizer alone (docs/contract.md section 3); no GEMM, so no out comparison.
    c.out_check = "none";
    QuantizeRows(p.attn_out, s.m, s.k, p.act_global_scale, absl::MakeSpan(act_q),
                 absl::MakeSpan(act_sf));
    compare_act("emulator");
    return judged();
  }

  // The device first: shapes its kernel does not tile (quant goldens with k % 256 != 0) are
  // skipped before the emulator is asked for an envelope it may not define (k % 64 != 0).
  std::vector<uint16_t> out(static_cast<size_t>(s.m * s.n), 0x7FBF);
  if (device != nullptr) {
    absl::StatusOr<testbed::RunResult> dev = device->Run(p, false, true, p.rows);
    if (!dev.ok()) {
      const bool unsupported = dev.status().code() == absl::StatusCode::kUnimplemented ||
                               dev.status().code() == absl::StatusCode::kInvalidArgument;
      r.first_mismatch = absl::StrCat("device: ", dev.status().ToString());
      return finish(unsupported ? Verdict::kSkip : Verdict::kError);
    }
    out = std::move(dev->out);
    act_q = std::move(dev->act_q);
    act_sf = std::move(dev->act_sf);
  }

  absl::StatusOr<testbed::Reference> ref = testbed::MakeReference(p, p.rows);
  if (!ref.ok()) {
    r.first_mismatch = absl::StrCat("envelope: ", ref.status().ToString());
    return finish(Verdict::kError);
  }
  const OutEnvelope& env = ref->env;
  c.out_check = ref->exact ? "bit-exact" : "bound";
  // The independent golden out must itself lie inside the emulator's envelope.
  if (is_op) testbed::JudgeOut(env, g->out, p.rows, "golden out vs envelope: ", c);

  if (device != nullptr) {
    testbed::JudgeOut(env, out, p.rows, "gpu out: ", c);
    compare_act("gpu");
    return judged();
  }
  const OpInputs in = testbed::InputsOf(p);
  for (GemmPath path : {GemmPath::kFastF32, GemmPath::kExact}) {
    const absl::string_view label = path == GemmPath::kFastF32 ? "fast path" : "exact path";
    OpOutputs o{absl::MakeSpan(out), absl::MakeSpan(act_q), absl::MakeSpan(act_sf)};
    absl::Status st = RunOp(in, o, path);
    if (!st.ok()) {
      r.first_mismatch = absl::StrCat("emulator ", label, ": ", st.ToString());
      return finish(Verdict::kError);
    }
    testbed::JudgeOut(env, out, p.rows, absl::StrCat(label, " out: "), c);
    compare_act(label);
    if (path == GemmPath::kExact) {
      // The golden's out is the epilogue of the exact accumulator rounded once to f32, which is
      // what the exact path computes: equal bit for bit.
      OutEnvelope pin = env;
      pin.lo = g->out;
      pin.hi = g->out;
      testbed::JudgeOut(pin, out, p.rows, "exact path vs golden out: ", c);
    }
  }
  return judged();
}

}  // namespace h3::sweep
