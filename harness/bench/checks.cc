#include "harness/bench/checks.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/formats.h"
#include "emulator/check.h"
#include "emulator/op.h"
#include "emulator/quality.h"
#include "emulator/quantize.h"

namespace h3::bench {
namespace {

// The op's inputs restricted to the sampled rows (row i of every M-sized span is op row rows[i]).
OpInputs SampledOpInputs(const HostRows& h, bool smoothed, bool branch) {
  OpInputs op;
  op.shape = OpShape{static_cast<int64_t>(h.rows.size()), kN, BenchK(), kG};
  op.attn_out = h.attn;
  op.o_weight_q = h.w_q;
  op.o_weight_sf = h.w_sf;
  op.o_weight_global_scale = kWeightGs;
  op.act_global_scale = kActGs;
  op.gate = h.gate;
  op.gate_index = h.gate_index;
  op.residual = h.residual;
  if (smoothed) op.act_smooth = h.act_smooth;
  if (branch) {
    op.lora_down = h.lora_down;
    op.lora_up = h.lora_up;
  }
  return op;
}

}  // namespace

absl::Status CheckQuantized(const Inputs& in, bool smoothed) {
  const HostRows& h = in.host;
  const RotationSet& s = *in.sets[0];
  std::vector<uint8_t> want_q(h.rows.size() * BenchK() / 2), want_sf(h.rows.size() * BenchK() / 16);
  std::vector<uint16_t> xs;
  if (smoothed) {
    xs.resize(h.attn.size());
    SmoothRows(h.attn.data(), static_cast<int64_t>(h.rows.size()), BenchK(), h.act_smooth,
               xs.data());
  }
  QuantizeRows(smoothed ? xs : h.attn, h.rows.size(), BenchK(), kActGs, absl::MakeSpan(want_q),
               absl::MakeSpan(want_sf));
  absl::StatusOr<std::vector<uint8_t>> got_q =
      testbed::DownloadRows(s.act_q.get(), BenchK() / 2, h.rows);
  H3_RETURN_IF_ERROR(got_q.status());
  absl::StatusOr<std::vector<uint8_t>> got_sf =
      testbed::DownloadRows(s.act_sf.get(), BenchK() / 16, h.rows);
  H3_RETURN_IF_ERROR(got_sf.status());
  const CompareReport q = CompareBytes("act_q", want_q, *got_q, BenchK() / 2);
  if (!q.pass) return absl::InternalError(absl::StrCat("act_q differs: ", q.first_mismatch));
  const CompareReport sf = CompareBytes("act_sf", want_sf, *got_sf, BenchK() / 16);
  if (!sf.pass) return absl::InternalError(absl::StrCat("act_sf differs: ", sf.first_mismatch));
  return absl::OkStatus();
}

absl::Status CheckOutInEnvelope(const Inputs& in, bool smoothed, bool branch) {
  absl::StatusOr<OutEnvelope> env =
      ComputeOutEnvelope(SampledOpInputs(in.host, smoothed, branch), {});
  H3_RETURN_IF_ERROR(env.status());
  absl::StatusOr<std::vector<uint16_t>> got =
      testbed::DownloadRows(in.sets[0]->out.get(), kN, in.host.rows);
  H3_RETURN_IF_ERROR(got.status());
  const CompareReport o = CompareOut(*env, *got, {});
  if (o.pass) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(o.mismatches, " of ", o.checked,
                                          " out elements outside the envelope; first (row = "
                                          "sampled-row index) ",
                                          o.first_mismatch));
}

absl::Status CheckBf16Pipeline(const Inputs& in) {
  const HostRows& h = in.host;
  const RotationSet& s = *in.sets[0];
  absl::StatusOr<std::vector<uint16_t>> out = testbed::DownloadRows(s.out.get(), kN, h.rows);
  H3_RETURN_IF_ERROR(out.status());
  absl::StatusOr<std::vector<uint16_t>> w16 = s.w_bf16.Download();
  H3_RETURN_IF_ERROR(w16.status());
  std::vector<float> w(w16->size()), a(h.attn.size());  // [N, K], [rows, K]
  for (size_t i = 0; i < w.size(); ++i) w[i] = Bf16ToF32((*w16)[i]);
  for (size_t i = 0; i < a.size(); ++i) a[i] = Bf16ToF32(h.attn[i]);
  int64_t bad = 0;
  std::string first;
  for (size_t i = 0; i < h.rows.size(); ++i) {
    const int32_t g = h.gate_index[i];
    for (int64_t n = 0; n < kN; ++n) {
      const double res = Bf16ToF32(h.residual[i * kN + n]);
      double want = res, tol = 0;
      if (g >= 0 && g < kG) {
        double acc = 0, mag = 0;
        const float* ar = &a[i * BenchK()];
        const float* wr = &w[n * BenchK()];
        for (int64_t k = 0; k < BenchK(); ++k) {
          const double p = double{ar[k]} * wr[k];
          acc += p;
          mag += std::fabs(p);
        }
        const double gate = Bf16ToF32(h.gate[g * kN + n]);
        want = res + gate * acc;
        // bf16 o: relative 2^-8 of |acc| plus f32 accumulation (2^-8 of the magnitude sum, a
        // loose bound), then bf16(gate * o) and bf16(residual + t): 2^-8 each.
        tol = std::fabs(gate) * (std::fabs(acc) + mag * 0x1p-8) * 0x1p-7 * 2 +
              std::fabs(want) * 0x1p-7;
      }
      const double got = Bf16ToF32((*out)[i * kN + n]);
      if (!(std::fabs(got - want) <= tol) && bad++ == 0) {
        first = absl::StrFormat("row %d col %d: got %g want %g (tolerance %g)", h.rows[i], n, got,
                                want, tol);
      }
    }
  }
  if (bad == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(bad, " of ", h.rows.size() * kN,
                                          " out elements off the bf16 reference; first ", first));
}

}  // namespace h3::bench
