#include "harness/op_io.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "emulator/swizzle.h"
#include "emulator/weight.h"
#include "harness/npy.h"
#include "harness/output_set.h"

namespace h3 {
namespace {

std::string Shape(absl::Span<const int64_t> s) {
  if (s.size() == 1) return absl::StrCat("(", s[0], ",)");
  return absl::StrCat("(", absl::StrJoin(s, ", "), ")");
}

absl::Status ShapeError(const std::string& path, absl::Span<const int64_t> found,
                        absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": shape ", Shape(found), ", expected ", expected));
}

// A scalar file: shape (1,) or () and a finite value > 0 (docs/contract.md section 3:
// global scales must be finite and positive).
absl::StatusOr<float> LoadGlobalScale(const std::string& path) {
  absl::StatusOr<TypedArray<float>> a = ReadNpyAs<float>(path);
  if (!a.ok()) return a.status();
  if (a->shape.size() > 1 || a->data.size() != 1) {
    return ShapeError(path, a->shape, "(1,) (one float32)");
  }
  const float v = a->data[0];
  if (!std::isfinite(v) || !(v > 0.f)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: value %g, expected a finite global scale > 0", path, v));
  }
  return v;
}

int64_t RoundUp(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

}  // namespace

OpInputs OpFiles::Inputs() const {
  OpInputs in;
  in.shape = shape;
  in.attn_out = attn_out;
  in.o_weight_q = o_weight_q;
  in.o_weight_sf = o_weight_sf;
  in.o_weight_global_scale = o_weight_global_scale;
  in.act_global_scale = act_global_scale;
  in.gate = gate;
  in.gate_index = gate_index;
  in.residual = residual;
  return in;
}

absl::StatusOr<OpFiles> LoadOpFiles(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat(dir, ": the input directory does not exist"));
  }
  auto path = [&](absl::string_view name) {
    return (std::filesystem::path(dir) / std::string(name)).string();
  };
  OpFiles f;
  // attn_out fixes M and K.
  const std::string attn_path = path("attn_out.npy");
  absl::StatusOr<TypedArray<uint16_t>> attn = ReadNpyAs<uint16_t>(attn_path);
  if (!attn.ok()) return attn.status();
  if (attn->shape.size() != 2 || attn->shape[1] <= 0 || attn->shape[1] % 64 != 0) {
    return ShapeError(attn_path, attn->shape, "(M, K) with K > 0 a multiple of 64 (bf16 bits)");
  }
  const int64_t m = attn->shape[0], k = attn->shape[1];
  f.attn_out = std::move(attn->data);

  // o_weight_q fixes N.
  const std::string q_path = path("o_weight_q.npy");
  absl::StatusOr<TypedArray<uint8_t>> q = ReadNpyAs<uint8_t>(q_path);
  if (!q.ok()) return q.status();
  if (q->shape.size() != 2 || q->shape[0] < 1 || q->shape[1] != k / 2) {
    return ShapeError(q_path, q->shape,
                      absl::StrFormat("(N, K/2) = (N, %d) with N >= 1, K = %d "
                                      "from attn_out.npy",
                                      k / 2, k));
  }
  const int64_t n = q->shape[0];
  f.o_weight_q = std::move(q->data);

  const std::string sf_path = path("o_weight_sf.npy");
  absl::StatusOr<TypedArray<uint8_t>> sf = ReadNpyAs<uint8_t>(sf_path);
  if (!sf.ok()) return sf.status();
  const int64_t sf_rows = RoundUp(n, 128), sf_cols = RoundUp(k / 16, 4);
  // The 2-D form quantize_weight writes, or the same bytes flattened.
  const bool sf_ok =
      (sf->shape.size() == 2 && sf->shape[0] == sf_rows && sf->shape[1] == sf_cols) ||
      (sf->shape.size() == 1 && sf->shape[0] == sf_rows * sf_cols);
  if (!sf_ok) {
    return ShapeError(sf_path, sf->shape,
                      absl::StrFormat("(round_up(N,128), round_up(K/16,4)) = (%d, %d) (or "
                                      "(%d,) flat) for N = %d, K = %d",
                                      sf_rows, sf_cols, sf_rows * sf_cols, n, k));
  }
  f.o_weight_sf = std::move(sf->data);

  absl::StatusOr<float> wgs = LoadGlobalScale(path("o_weight_global_scale.npy"));
  if (!wgs.ok()) return wgs.status();
  f.o_weight_global_scale = *wgs;
  absl::StatusOr<float> ags = LoadGlobalScale(path("act_global_scale.npy"));
  if (!ags.ok()) return ags.status();
  f.act_global_scale = *ags;

  const std::string gate_path = path("gate.npy");
  absl::StatusOr<TypedArray<uint16_t>> gate = ReadNpyAs<uint16_t>(gate_path);
  if (!gate.ok()) return gate.status();
  if (gate->shape.size() != 2 || gate->shape[0] < 1 || gate->shape[1] != n) {
    return ShapeError(gate_path, gate->shape,
                      absl::StrFormat("(G, N) = (G, %d) with G >= 1, N from "
                                      "o_weight_q.npy",
                                      n));
  }
  const int64_t g = gate->shape[0];
  f.gate = std::move(gate->data);

  const std::string gi_path = path("gate_index.npy");
  absl::StatusOr<TypedArray<int32_t>> gi = ReadNpyAs<int32_t>(gi_path);
  if (!gi.ok()) return gi.status();
  if (gi->shape.size() != 1 || gi->shape[0] != m) {
    return ShapeError(gi_path, gi->shape,
                      absl::StrFormat("(M,) = (%d,) with M from attn_out.npy", m));
  }
  f.gate_index = std::move(gi->data);

  const std::string res_path = path("residual.npy");
  absl::StatusOr<TypedArray<uint16_t>> res = ReadNpyAs<uint16_t>(res_path);
  if (!res.ok()) return res.status();
  if (res->shape.size() != 2 || res->shape[0] != m || res->shape[1] != n) {
    return ShapeError(res_path, res->shape,
                      absl::StrFormat("(M, N) = (%d, %d) from attn_out.npy "
                                      "and o_weight_q.npy",
                                      m, n));
  }
  f.residual = std::move(res->data);

  f.shape = OpShape{m, n, k, g};
  // Backstop: the emulator's own validation of the same arguments.
  if (absl::Status s = ValidateOpInputs(f.Inputs()); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(dir, ": inconsistent inputs: ", s.message()));
  }
  return f;
}

absl::Status WriteOpResults(const std::string& dir, const OpShape& s, const OpResults& r) {
  if (static_cast<int64_t>(r.out.size()) != s.m * s.n ||
      static_cast<int64_t>(r.act_q.size()) != s.m * s.k / 2 ||
      static_cast<int64_t>(r.act_sf.size()) != s.m * s.k / 16) {
    return absl::InternalError("result sizes do not match the shape");
  }
  return WriteOutputSet(dir, {{"out.npy",
                               [&](const std::string& p) {
                                 return WriteNpy<uint16_t>(p, {s.m, s.n}, r.out);
                               }},
                              {"act_q.npy",
                               [&](const std::string& p) {
                                 return WriteNpy<uint8_t>(p, {s.m, s.k / 2}, r.act_q);
                               }},
                              {"act_sf.npy", [&](const std::string& p) {
                                 return WriteNpy<uint8_t>(p, {s.m, s.k / 16}, r.act_sf);
                               }}});
}

absl::StatusOr<OpResults> RunOpEmulator(const OpFiles& in, GemmPath path) {
  const OpShape& s = in.shape;
  OpResults r;
  r.out.resize(s.m * s.n);
  r.act_q.resize(s.m * s.k / 2);
  r.act_sf.resize(s.m * s.k / 16);
  if (absl::Status st =
          RunOp(in.Inputs(),
                {absl::MakeSpan(r.out), absl::MakeSpan(r.act_q), absl::MakeSpan(r.act_sf)}, path);
      !st.ok()) {
    return st;
  }
  return r;
}

absl::StatusOr<std::string> QuantizeWeightFile(const std::string& weight_path,
                                               const std::string& out_dir) {
  absl::StatusOr<NpyArray> w = ReadNpy(weight_path);
  if (!w.ok()) return w.status();
  const NpyHeader& h = w->header;
  if (h.dtype != NpyDtype::kU2 && h.dtype != NpyDtype::kF4) {
    return absl::InvalidArgumentError(absl::StrCat(weight_path, ": dtype is '",
                                                   NpyDtypeName(h.dtype),
                                                   "', expected '<u2' (bf16 bits) or '<f4'"));
  }
  // The contract's quantizer takes K % 16 == 0 (section 5), but `op` refuses a K that is not a
  // multiple of 64: a weight it could not use is refused here, as the Python API does.
  if (h.shape.size() != 2 || h.shape[0] < 1 || h.shape[1] <= 0 || h.shape[1] % 64 != 0) {
    return ShapeError(weight_path, h.shape,
                      "(N, K) with N >= 1 and K > 0 a multiple of 64, as op takes it (the GPU "
                      "kernel: also N % 128 == 0, K % 256 == 0)");
  }
  const int64_t n = h.shape[0], k = h.shape[1];
  absl::StatusOr<QuantizedWeight> q;
  if (h.dtype == NpyDtype::kU2) {
    q = QuantizeWeightBf16(
        absl::MakeConstSpan(reinterpret_cast<const uint16_t*>(w->data.data()), n * k), n, k);
  } else {
    q = QuantizeWeightF32(
        absl::MakeConstSpan(reinterpret_cast<const float*>(w->data.data()), n * k), n, k);
  }
  if (!q.ok()) {
    return absl::Status(q.status().code(), absl::StrCat(weight_path, ": ", q.status().message()));
  }
  const int64_t sf_rows = RoundUp(n, 128), sf_cols = RoundUp(k / 16, 4);
  const float gs[1] = {q->global_scale};
  if (absl::Status st =
          WriteOutputSet(out_dir, {{"o_weight_q.npy",
                                    [&](const std::string& p) {
                                      return WriteNpy<uint8_t>(p, {n, k / 2}, q->q);
                                    }},
                                   {"o_weight_sf.npy",
                                    [&](const std::string& p) {
                                      return WriteNpy<uint8_t>(p, {sf_rows, sf_cols}, q->sf);
                                    }},
                                   {"o_weight_global_scale.npy",
                                    [&](const std::string& p) {
                                      return WriteNpy<float>(p, {1}, absl::MakeConstSpan(gs));
                                    }}});
      !st.ok()) {
    return st;
  }
  return absl::StrFormat(
      "quantize_weight: %s [%d, %d] %s -> %s: o_weight_q.npy [%d, %d], "
      "o_weight_sf.npy [%d, %d], o_weight_global_scale.npy = %.9g",
      weight_path, n, k, h.dtype == NpyDtype::kU2 ? "bf16" : "f32", out_dir, n, k / 2, sf_rows,
      sf_cols, q->global_scale);
}

}  // namespace h3
