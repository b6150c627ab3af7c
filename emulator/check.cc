#include "emulator/check.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "emulator/check_branch.h"
#include "emulator/epilogue.h"
#include "emulator/gemm.h"
#include "emulator/quality.h"
#include "emulator/quantize.h"

namespace h3 {
namespace {

// The allowed out values for one in-range element, given the f32 values the
// accumulator may take.
void ElementEnvelope(const AccInterval& iv, float alpha, uint16_t gate, uint16_t residual,
                     uint16_t* lo, uint16_t* hi) {
  if (iv.nan) {
    *lo = *hi = 0x7FFF;  // NaN acc -> NaN o -> NaN t -> canonical NaN out
    return;
  }
  uint16_t cand[4];
  int nc = 0;
  cand[nc++] = EpilogueElement(iv.lo, alpha, gate, residual);
  cand[nc++] = EpilogueElement(iv.hi, alpha, gate, residual);
  if (iv.lo <= 0.0f && iv.hi >= 0.0f) {
    // The epilogue is monotone in acc (alpha > 0), but 0 * Inf (alpha or gate
    // infinite) is NaN only at zero: evaluate there too.
    cand[nc++] = EpilogueElement(-0.0f, alpha, gate, residual);
    cand[nc++] = EpilogueElement(0.0f, alpha, gate, residual);
  }
  EnvelopeOfCandidates(cand, nc, lo, hi);
}

}  // namespace

absl::StatusOr<OutEnvelope> ComputeOutEnvelope(const OpInputs& in, absl::Span<const int64_t> rows) {
  if (absl::Status st = ValidateOpInputs(in); !st.ok()) return st;
  const OpShape& s = in.shape;
  OutEnvelope env;
  if (rows.empty()) {
    env.row_ids.resize(s.m);
    for (int64_t i = 0; i < s.m; ++i) env.row_ids[i] = i;
  } else {
    for (size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] < 0 || rows[i] >= s.m) {
        return absl::InvalidArgumentError(
            absl::StrFormat("rows[%d]: expected a row in [0, %d), got %d", i, s.m, rows[i]));
      }
    }
    env.row_ids.assign(rows.begin(), rows.end());
  }
  const int64_t m = static_cast<int64_t>(env.row_ids.size());
  env.m = m;
  env.n = s.n;
  env.lo.assign(m * s.n, 0);
  env.hi.assign(m * s.n, 0);
  env.exact.assign(m * s.n, 0);
  if (m == 0) return env;

  std::vector<uint8_t> q(m * (s.k / 2)), sf(m * (s.k / 16));
  // x' of section 12 for the held rows: the smoothed rows, or attn_out's (the branch reads x').
  const int64_t rank = static_cast<int64_t>(in.lora_down.size()) / s.k;
  std::vector<uint16_t> xs;
  if (in.act_smooth.empty()) {
    QuantizeSelectedRows(in.attn_out, s.k, in.act_global_scale, env.row_ids, absl::MakeSpan(q),
                         absl::MakeSpan(sf));
  } else {
    // Section 12: x' is elementwise with fixed roundings, so the codes are exact as without it
    // and the envelope is the seed's on x'.
    xs.resize(m * s.k);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < m; ++i) {
      const uint16_t* x = in.attn_out.data() + env.row_ids[i] * s.k;
      for (int64_t c = 0; c < s.k; ++c) xs[i * s.k + c] = SmoothElement(x[c], in.act_smooth[c]);
    }
    QuantizeRows(xs, m, s.k, in.act_global_scale, absl::MakeSpan(q), absl::MakeSpan(sf));
  }
  const IntOperand a = ToIntOperand({m, s.k, q, sf, ScaleLayout::kLinear});
  const IntOperand w =
      ToIntOperand({s.n, s.k, in.o_weight_q, in.o_weight_sf, ScaleLayout::kSwizzled128x4});
  const float alpha = EpilogueAlpha(in.act_global_scale, in.o_weight_global_scale);

#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < m; ++i) {
    const int64_t row = env.row_ids[i];
    const int32_t gi = in.gate_index[row];
    const uint16_t* res = in.residual.data() + row * s.n;
    uint16_t* lo = env.lo.data() + i * s.n;
    uint16_t* hi = env.hi.data() + i * s.n;
    uint8_t* ex = env.exact.data() + i * s.n;
    if (!GateIndexInRange(gi, s.g)) {
      for (int64_t j = 0; j < s.n; ++j) {
        lo[j] = hi[j] = res[j];
        ex[j] = 1;
      }
      continue;
    }
    const uint16_t* gate = in.gate.data() + static_cast<int64_t>(gi) * s.n;
    if (rank > 0) {
      // Section 13.2: each l_j's and o's sets, v's over all of them, then the epilogue.
      std::vector<AccInterval> iv(s.n);
      for (int64_t j = 0; j < s.n; ++j) iv[j] = AccBound(ExactDot(a, i, w, j), s.k);
      const uint16_t* x = xs.empty() ? in.attn_out.data() + row * s.k : xs.data() + i * s.k;
      BranchRowEnvelope(x, s.k, in.lora_down, in.lora_up, rank, iv, alpha, gate, res, lo, hi, ex);
      continue;
    }
    for (int64_t j = 0; j < s.n; ++j) {
      const AccInterval iv = AccBound(ExactDot(a, i, w, j), s.k);
      ElementEnvelope(iv, alpha, gate[j], res[j], &lo[j], &hi[j]);
      ex[j] = (iv.nan || iv.exact) ? 1 : 0;
    }
  }
  return env;
}

CompareReport CompareOut(const OutEnvelope& env, absl::Span<const uint16_t> got,
                         absl::Span<const int64_t> rows) {
  CompareReport rep{false, 0, 0, 0, ""};
  const absl::Span<const int64_t> ids = rows.empty() ? absl::MakeConstSpan(env.row_ids) : rows;
  if (static_cast<int64_t>(ids.size()) != env.m ||
      static_cast<int64_t>(env.lo.size()) != env.m * env.n ||
      static_cast<int64_t>(env.hi.size()) != env.m * env.n) {
    rep.first_mismatch =
        absl::StrFormat("rows: expected %d rows (the envelope's), got %d", env.m, ids.size());
    return rep;
  }
  for (int64_t i = 0; i < env.m; ++i) {
    if (ids[i] < 0 || (ids[i] + 1) * env.n > static_cast<int64_t>(got.size())) {
      rep.first_mismatch = absl::StrFormat("got: row %d needs at least %d elements, got %d", ids[i],
                                           (ids[i] + 1) * env.n, got.size());
      return rep;
    }
  }
  for (int64_t i = 0; i < env.m; ++i) {
    for (int64_t j = 0; j < env.n; ++j) {
      const uint16_t g = got[ids[i] * env.n + j];
      const uint16_t lo = env.lo[i * env.n + j], hi = env.hi[i * env.n + j];
      const int32_t kg = Bf16OrderKey(g), klo = Bf16OrderKey(lo), khi = Bf16OrderKey(hi);
      ++rep.checked;
      if (kg >= klo && kg <= khi) continue;
      const int64_t ulp = kg < klo ? klo - kg : kg - khi;
      rep.max_ulp = std::max(rep.max_ulp, ulp);
      if (rep.mismatches++ == 0) {
        rep.first_mismatch =
            lo == hi ? absl::StrFormat("out[m=%d,n=%d]: got 0x%04x want 0x%04x", ids[i], j, g, lo)
                     : absl::StrFormat("out[m=%d,n=%d]: got 0x%04x want [0x%04x,0x%04x]", ids[i], j,
                                       g, lo, hi);
      }
    }
  }
  rep.pass = rep.mismatches == 0;
  return rep;
}

CompareReport CompareBytes(std::string_view what, absl::Span<const uint8_t> want,
                           absl::Span<const uint8_t> got, int64_t row_bytes) {
  CompareReport rep{false, 0, 0, 0, ""};
  if (want.size() != got.size()) {
    rep.first_mismatch =
        absl::StrFormat("%s: expected %d bytes, got %d", what, want.size(), got.size());
    return rep;
  }
  if (row_bytes <= 0) row_bytes = std::max<int64_t>(1, want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ++rep.checked;
    if (want[i] == got[i]) continue;
    rep.max_ulp = std::max<int64_t>(rep.max_ulp, std::abs(int{want[i]} - int{got[i]}));
    if (rep.mismatches++ == 0) {
      rep.first_mismatch = absl::StrFormat("%s[row=%d,col=%d]: got 0x%02x want 0x%02x", what,
                                           static_cast<int64_t>(i) / row_bytes,
                                           static_cast<int64_t>(i) % row_bytes, got[i], want[i]);
    }
  }
  rep.pass = rep.mismatches == 0;
  return rep;
}

}  // namespace h3
