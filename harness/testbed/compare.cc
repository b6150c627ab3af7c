#include "harness/testbed/compare.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "emulator/quality.h"
#include "emulator/quantize.h"
#include "harness/testbed/rows.h"

namespace h3::testbed {
namespace {

// Adds a CompareReport's counts to `c`; true when it passed.
bool Fold(const CompareReport& rep, bool out, Comparison& c) {
  c.checked += rep.checked;
  c.mismatches += rep.mismatches;
  if (out) c.max_ulp = std::max(c.max_ulp, rep.max_ulp);
  if (!rep.pass) c.pass = false;
  return rep.pass;
}

// Records the first mismatch: `m` when located, else the emulator's own description.
void Record(absl::string_view label, std::optional<Mismatch> m, const CompareReport& rep,
            Comparison& c) {
  if (!c.first_mismatch.empty()) return;
  c.first_mismatch = absl::StrCat(label, m.has_value() ? m->ToString() : rep.first_mismatch);
  c.first = std::move(m);
}

}  // namespace

std::string Mismatch::ToString() const {
  const int digits = bf16 ? 4 : 2;
  std::string s = absl::StrFormat("%s[m=%d,%s=%d]: got 0x%0*X want ", tensor, row,
                                  bf16 ? "n" : "byte", col, digits, got);
  if (want_lo == want_hi) return absl::StrFormat("%s0x%0*X", s, digits, want_lo);
  return absl::StrFormat("%s[0x%0*X,0x%0*X]", s, digits, want_lo, digits, want_hi);
}

void Comparison::Fail(std::string why) {
  pass = false;
  if (first_mismatch.empty()) first_mismatch = std::move(why);
}

std::string Comparison::Summary() const {
  return absl::StrFormat("%s (%d of %d mismatch, max ulp %d)", first_mismatch, mismatches, checked,
                         max_ulp);
}

void JudgeOut(const OutEnvelope& env, absl::Span<const uint16_t> got,
              absl::Span<const int64_t> case_rows, absl::string_view label, Comparison& c) {
  const CompareReport rep = CompareOut(env, got, AllRows(env.m));
  if (Fold(rep, /*out=*/true, c)) return;
  // The emulator names the mismatch by its row in `got`; find it to name the case's row.
  std::optional<Mismatch> m;
  const size_t elems = static_cast<size_t>(env.m * env.n);
  if (got.size() == elems && env.lo.size() == elems && env.hi.size() == elems &&
      static_cast<int64_t>(case_rows.size()) == env.m) {
    for (size_t e = 0; e < elems && !m.has_value(); ++e) {
      const int32_t key = Bf16OrderKey(got[e]);
      if (key >= Bf16OrderKey(env.lo[e]) && key <= Bf16OrderKey(env.hi[e])) continue;
      m = Mismatch{
          "out",     true,     case_rows[e / env.n], static_cast<int64_t>(e) % env.n, got[e],
          env.lo[e], env.hi[e]};
    }
  }
  Record(label, std::move(m), rep, c);
}

void JudgeBytes(absl::string_view what, absl::Span<const uint8_t> want,
                absl::Span<const uint8_t> got, int64_t row_bytes,
                absl::Span<const int64_t> case_rows, absl::string_view label, Comparison& c) {
  const CompareReport rep =
      CompareBytes(std::string_view(what.data(), what.size()), want, got, row_bytes);
  if (Fold(rep, /*out=*/false, c)) return;
  std::optional<Mismatch> m;
  if (want.size() == got.size() && row_bytes > 0) {
    const auto diff = std::mismatch(want.begin(), want.end(), got.begin());
    const int64_t i = diff.first - want.begin();
    if (diff.first != want.end() && i / row_bytes < static_cast<int64_t>(case_rows.size())) {
      m = Mismatch{std::string(what), false,        case_rows[i / row_bytes],
                   i % row_bytes,     *diff.second, *diff.first,
                   *diff.first};
    }
  }
  Record(label, std::move(m), rep, c);
}

absl::StatusOr<Reference> MakeReference(const Problem& p, absl::Span<const int64_t> rows) {
  const OpShape& s = p.shape;
  Reference ref;
  ref.k = s.k;
  ref.env.m = 0;
  ref.env.n = s.n;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= s.m || static_cast<size_t>(rows[i]) >= p.rows.size()) {
      return absl::InvalidArgumentError(absl::StrCat("MakeReference: rows[", i, "] = ", rows[i],
                                                     " is not a row of the problem (", s.m,
                                                     " rows, ", p.rows.size(), " case rows)"));
    }
    ref.case_rows.push_back(p.rows[rows[i]]);
  }
  ref.exact = true;
  if (rows.empty()) return ref;  // ComputeOutEnvelope reads empty rows as "all"
  absl::StatusOr<OutEnvelope> env = ComputeOutEnvelope(InputsOf(p), rows);
  if (!env.ok()) return env.status();
  ref.env = *std::move(env);
  ref.exact =
      std::all_of(ref.env.exact.begin(), ref.env.exact.end(), [](uint8_t e) { return e != 0; });
  ref.act_q.resize(rows.size() * static_cast<size_t>(s.k / 2));
  ref.act_sf.resize(rows.size() * static_cast<size_t>(s.k / kScaleBlock));
  if (p.act_smooth.empty()) {
    QuantizeSelectedRows(p.attn_out, s.k, p.act_global_scale, rows, absl::MakeSpan(ref.act_q),
                         absl::MakeSpan(ref.act_sf));
  } else {
    // Contract section 12: the codes are those of x' = bf16(f32(attn_out) (x) s).
    std::vector<uint16_t> xs(rows.size() * static_cast<size_t>(s.k));
    for (size_t i = 0; i < rows.size(); ++i) {
      SmoothRows(p.attn_out.data() + rows[i] * s.k, 1, s.k, p.act_smooth, xs.data() + i * s.k);
    }
    QuantizeRows(xs, static_cast<int64_t>(rows.size()), s.k, p.act_global_scale,
                 absl::MakeSpan(ref.act_q), absl::MakeSpan(ref.act_sf));
  }
  return ref;
}

void Judge(const Reference& ref, const RunResult& got, const JudgeOptions& options, Comparison& c) {
  if (ref.case_rows.empty()) {
    c.out_check = "none";
    c.act_check = "none";
    if (!got.out.empty() || !got.act_q.empty() || !got.act_sf.empty()) {
      c.Fail(absl::StrCat(options.label, "no rows to compare, but the run returned data"));
    }
    return;
  }
  c.out_check = ref.exact ? "bit-exact" : "bound";
  if (options.exact_data && !ref.exact) {
    c.Fail("exact data whose accumulation the emulator cannot prove exact (generator)");
  }
  JudgeOut(ref.env, got.out, ref.case_rows, options.label, c);
  if (!options.compare_act) {
    c.act_check = "n/a (internal workspace)";
    return;
  }
  // Quantization is deterministic (docs/contract.md section 3): act_q/act_sf match bit for bit.
  c.act_check = "bit-exact";
  JudgeBytes("act_q", ref.act_q, got.act_q, ref.k / 2, ref.case_rows, options.label, c);
  JudgeBytes("act_sf", ref.act_sf, got.act_sf, ref.k / kScaleBlock, ref.case_rows, options.label,
             c);
}

absl::StatusOr<Comparison> CompareWithEmulator(const Problem& p, absl::Span<const int64_t> rows,
                                               const RunResult& got, const JudgeOptions& options) {
  absl::StatusOr<Reference> ref = MakeReference(p, rows);
  if (!ref.ok()) return ref.status();
  Comparison c;
  Judge(*ref, got, options, c);
  return c;
}

}  // namespace h3::testbed
