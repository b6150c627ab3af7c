#include "harness/sweep/runner.h"

#include <algorithm>
#include <chrono>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "emulator/op.h"
#include "emulator/quantize.h"

namespace h3::sweep {

absl::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "PASS";
    case Verdict::kFail:
      return "FAIL";
    case Verdict::kSkip:
      return "SKIP";
    case Verdict::kError:
      return "ERROR";
  }
  return "?";
}

std::vector<int64_t> RowsToCompare(const CaseSpec& spec, const RunnerOptions& options) {
  const OpShape& s = spec.shape;
  const bool all = options.full || s.m * s.n * s.k <= options.full_compare_macs;
  return all ? AllRows(s.m) : SampleRows(s.m, options.sample_rows, options.seed ^ s.m);
}

std::string FirstOutMismatch(const OutEnvelope& env, absl::Span<const uint16_t> got,
                             absl::Span<const int64_t> rows) {
  for (int64_t i = 0; i < env.m; ++i) {
    for (int64_t c = 0; c < env.n; ++c) {
      const int64_t e = i * env.n + c;
      const uint16_t lo = env.lo[e], hi = env.hi[e], g = got[e];
      const bool ok =
          lo == hi ? g == lo
                   : Bf16OrderKey(lo) <= Bf16OrderKey(g) && Bf16OrderKey(g) <= Bf16OrderKey(hi);
      if (ok) continue;
      if (lo == hi)
        return absl::StrFormat("out[m=%d,n=%d]: got 0x%04X want 0x%04X", rows[i], c, g, lo);
      return absl::StrFormat("out[m=%d,n=%d]: got 0x%04X want [0x%04X,0x%04X]", rows[i], c, g, lo,
                             hi);
    }
  }
  return "";
}

std::string FirstByteMismatch(absl::string_view what, absl::Span<const uint8_t> want,
                              absl::Span<const uint8_t> got, int64_t row_bytes,
                              absl::Span<const int64_t> rows) {
  if (want.size() != got.size()) {
    return absl::StrFormat("%s: size %d, want %d", what, got.size(), want.size());
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] == got[i]) continue;
    const int64_t r = static_cast<int64_t>(i) / row_bytes, c = static_cast<int64_t>(i) % row_bytes;
    return absl::StrFormat("%s[m=%d,byte=%d]: got 0x%02X want 0x%02X", what, rows[r], c, got[i],
                           want[i]);
  }
  return "";
}

namespace {

struct EmulatorRun {
  std::vector<uint16_t> out;
  std::vector<uint8_t> act_q, act_sf;
};

// The emulator's whole op on `p`, in place when asked (out is the residual buffer).
absl::StatusOr<EmulatorRun> RunEmulator(const Problem& p, GemmPath path, bool in_place) {
  const OpShape& s = p.shape;
  EmulatorRun r;
  r.act_q.assign(static_cast<size_t>(s.m * (s.k / 2)), 0xFF);
  r.act_sf.assign(static_cast<size_t>(s.m * (s.k / 16)), 0xFF);
  if (in_place) {
    r.out = p.residual;
  } else {
    r.out.assign(static_cast<size_t>(s.m * s.n), 0x7FBF);  // poison: a NaN no path produces
  }
  const OpInputs in = InputsOf(
      p, in_place ? absl::Span<const uint16_t>(r.out) : absl::Span<const uint16_t>(p.residual));
  OpOutputs out;
  out.out = absl::MakeSpan(r.out);
  out.act_q = absl::MakeSpan(r.act_q);
  out.act_sf = absl::MakeSpan(r.act_sf);
  absl::Status st = RunOp(in, out, path);
  if (!st.ok()) return st;
  return r;
}

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Folds one `out` comparison into the result; returns false on a mismatch.
bool FoldOut(const OutEnvelope& env, absl::Span<const uint16_t> got, absl::Span<const int64_t> rows,
             absl::string_view label, CaseResult& r) {
  const CompareReport rep = CompareOut(env, got, {});
  r.checked += rep.checked;
  r.mismatches += rep.mismatches;
  r.max_ulp = std::max(r.max_ulp, rep.max_ulp);
  if (rep.pass) return true;
  if (r.first_mismatch.empty()) {
    std::string where = FirstOutMismatch(env, got, rows);
    r.first_mismatch = absl::StrCat(label, where.empty() ? rep.first_mismatch : where);
  }
  return false;
}

bool FoldBytes(absl::string_view what, absl::Span<const uint8_t> want,
               absl::Span<const uint8_t> got, int64_t row_bytes, absl::Span<const int64_t> rows,
               CaseResult& r) {
  const CompareReport rep =
      CompareBytes(std::string_view(what.data(), what.size()), want, got, row_bytes);
  r.checked += rep.checked;
  r.mismatches += rep.mismatches;
  if (rep.pass) return true;
  if (r.first_mismatch.empty()) {
    std::string where = FirstByteMismatch(what, want, got, row_bytes, rows);
    r.first_mismatch = where.empty() ? rep.first_mismatch : where;
  }
  return false;
}

}  // namespace

CaseResult RunCase(const CaseSpec& spec, DeviceBackend* device, WeightCache& weights,
                   const RunnerOptions& options, const ProgressFn& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  const OpShape& s = spec.shape;
  CaseResult r;
  r.name = spec.name;
  r.backend = device ? "gpu" : "emulator";
  r.m = s.m;
  r.n = s.n;
  r.k = s.k;
  auto error = [&](Verdict v, std::string why) {
    r.verdict = v;
    r.first_mismatch = std::move(why);
    r.seconds = Seconds(t0);
    return r;
  };

  const std::vector<int64_t> rows = RowsToCompare(spec, options);
  r.rows_compared = static_cast<int64_t>(rows.size());
  const bool large = static_cast<int64_t>(rows.size()) * s.n * s.k > (int64_t{1} << 33);

  // The backend under test.
  DeviceResult got;
  std::vector<uint16_t> exact_out;
  if (device != nullptr) {
    if (s.m > 4096) progress(absl::StrCat("generating ", s.m, " rows"));
    absl::StatusOr<Problem> full =
        GenerateProblem(spec, options.seed, AllRows(s.m), weights, options.threads);
    if (!full.ok()) return error(Verdict::kError, std::string(full.status().message()));
    if (s.m > 4096) progress("running the op on the device");
    absl::StatusOr<DeviceResult> dev =
        device->Run(*full, spec.out_is_residual, spec.caller_workspace, rows);
    if (!dev.ok()) {
      // Small shapes the kernel does not tile are skipped; the MiniMax-H3 shape must run.
      const bool h3 = s.n == kH3N && s.k == kH3K && s.g == kH3G;
      const bool unsupported = dev.status().code() == absl::StatusCode::kUnimplemented ||
                               dev.status().code() == absl::StatusCode::kInvalidArgument;
      return error(!h3 && unsupported ? Verdict::kSkip : Verdict::kError,
                   absl::StrCat("device: ", dev.status().ToString()));
    }
    got = *std::move(dev);
  }

  // The emulator on the compared rows only (rows are independent in the contract).
  if (large) progress(absl::StrCat("emulating ", rows.size(), " of ", s.m, " rows"));
  absl::StatusOr<Problem> sub = GenerateProblem(spec, options.seed, rows, weights, options.threads);
  if (!sub.ok()) return error(Verdict::kError, std::string(sub.status().message()));
  if (device == nullptr) {
    absl::StatusOr<EmulatorRun> fast = RunEmulator(*sub, GemmPath::kFastF32, spec.out_is_residual);
    if (!fast.ok())
      return error(Verdict::kError, absl::StrCat("emulator fast path: ", fast.status().ToString()));
    absl::StatusOr<EmulatorRun> exact = RunEmulator(*sub, GemmPath::kExact, spec.out_is_residual);
    if (!exact.ok())
      return error(Verdict::kError,
                   absl::StrCat("emulator exact path: ", exact.status().ToString()));
    got.out = std::move(fast->out);
    got.act_q = std::move(fast->act_q);
    got.act_sf = std::move(fast->act_sf);
    exact_out = std::move(exact->out);
    // The two paths share the quantizer; their act bytes must agree all the same.
    r.act_check = "bit-exact";
    FoldBytes("act_q(fast vs exact)", exact->act_q, got.act_q, s.k / 2, rows, r);
    FoldBytes("act_sf(fast vs exact)", exact->act_sf, got.act_sf, s.k / 16, rows, r);
  }

  if (s.m == 0) {
    r.comparison = "none";
    r.act_check = "none";
    r.verdict = got.out.empty() ? Verdict::kPass : Verdict::kFail;
    if (!got.out.empty()) r.first_mismatch = "M = 0 returned data";
    r.seconds = Seconds(t0);
    return r;
  }

  absl::StatusOr<OutEnvelope> env = ComputeOutEnvelope(InputsOf(*sub, sub->residual), {});
  if (!env.ok()) return error(Verdict::kError, absl::StrCat("envelope: ", env.status().ToString()));
  const bool all_exact =
      std::all_of(env->exact.begin(), env->exact.end(), [](uint8_t e) { return e != 0; });
  r.comparison = all_exact ? "bit-exact" : "bound";
  bool pass = true;
  if (spec.data == DataKind::kExact && !all_exact) {
    pass = false;
    r.first_mismatch = "exact data whose accumulation the emulator cannot prove exact (generator)";
  }
  if (got.out.size() != env->lo.size()) {
    return error(Verdict::kError, absl::StrFormat("backend returned %d out values, want %d",
                                                  got.out.size(), env->lo.size()));
  }
  pass &= FoldOut(*env, got.out, rows, device ? "" : "fast path: ", r);
  if (!exact_out.empty()) pass &= FoldOut(*env, exact_out, rows, "exact path: ", r);

  if (device != nullptr) {
    if (got.act_q.empty()) {
      r.act_check = "n/a (internal workspace)";
    } else {
      // Quantization is deterministic (contract section 3): act_q/act_sf must match bit for bit.
      std::vector<uint8_t> want_q(static_cast<size_t>(sub->shape.m * (s.k / 2)));
      std::vector<uint8_t> want_sf(static_cast<size_t>(sub->shape.m * (s.k / 16)));
      QuantizeRows(sub->attn_out, sub->shape.m, s.k, sub->act_global_scale, absl::MakeSpan(want_q),
                   absl::MakeSpan(want_sf));
      r.act_check = "bit-exact";
      pass &= FoldBytes("act_q", want_q, got.act_q, s.k / 2, rows, r);
      pass &= FoldBytes("act_sf", want_sf, got.act_sf, s.k / 16, rows, r);
    }
  }
  pass &= r.mismatches == 0;
  r.verdict = pass ? Verdict::kPass : Verdict::kFail;
  r.seconds = Seconds(t0);
  return r;
}

}  // namespace h3::sweep
