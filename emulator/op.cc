#include "emulator/op.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/global_scale.h"
#include "emulator/epilogue.h"
#include "emulator/formats.h"
#include "emulator/gemm.h"
#include "emulator/quantize.h"
#include "emulator/swizzle.h"

namespace h3 {
namespace {

// Rows per GEMM chunk: bounds the dequantized activation buffer
// (chunk * K * 4 bytes) for any M while keeping Eigen's GEMM efficient.
constexpr int64_t kRowChunk = 4096;

struct Workspace {
  std::vector<float> w_deq, a_deq, acc;
  std::vector<uint8_t> q, sf;
};

template <typename T>
void Grow(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(n);
}

absl::Status CheckSize(const char* name, int64_t expected, size_t given, const char* what) {
  if (static_cast<int64_t>(given) != expected) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: expected %d elements (%s), got %d", name, expected, what, given));
  }
  return absl::OkStatus();
}


}  // namespace

absl::Status ValidateOpInputs(const OpInputs& in) {
  const OpShape& s = in.shape;
  if (absl::Status st = ValidateShape(s); !st.ok()) return st;
  if (absl::Status st = CheckSize("attn_out", s.m * s.k, in.attn_out.size(), "m*k"); !st.ok())
    return st;
  if (absl::Status st = CheckSize("o_weight_q", s.n * (s.k / 2), in.o_weight_q.size(), "n*k/2");
      !st.ok())
    return st;
  if (absl::Status st = CheckSize("o_weight_sf", SwizzledScaleBytes(s.n, s.k / 16),
                                  in.o_weight_sf.size(), "round_up(n,128)*round_up(k/16,4)");
      !st.ok())
    return st;
  if (absl::Status st = CheckSize("gate", s.g * s.n, in.gate.size(), "g*n"); !st.ok()) return st;
  if (absl::Status st = CheckSize("gate_index", s.m, in.gate_index.size(), "m"); !st.ok())
    return st;
  if (absl::Status st = CheckSize("residual", s.m * s.n, in.residual.size(), "m*n"); !st.ok())
    return st;
  if (absl::Status st = CheckGlobalScale("o_weight_global_scale", in.o_weight_global_scale);
      !st.ok())
    return st;
  return CheckGlobalScale("act_global_scale", in.act_global_scale);
}

absl::Status ValidateOpOutputs(const OpShape& s, const OpOutputs& out) {
  if (absl::Status st = CheckSize("out", s.m * s.n, out.out.size(), "m*n"); !st.ok()) return st;
  if (!out.act_q.empty()) {  // empty = not wanted
    if (absl::Status st = CheckSize("act_q", s.m * (s.k / 2), out.act_q.size(), "m*k/2"); !st.ok())
      return st;
  }
  if (!out.act_sf.empty()) {
    if (absl::Status st = CheckSize("act_sf", s.m * (s.k / 16), out.act_sf.size(), "m*k/16");
        !st.ok())
      return st;
  }
  return absl::OkStatus();
}

absl::Status RunOp(const OpInputs& in, const OpOutputs& out, GemmPath path) {
  if (absl::Status st = ValidateOpInputs(in); !st.ok()) return st;
  if (absl::Status st = ValidateOpOutputs(in.shape, out); !st.ok()) return st;
  const OpShape& s = in.shape;
  if (s.m == 0) return absl::OkStatus();

  const float alpha = EpilogueAlpha(in.act_global_scale, in.o_weight_global_scale);
  const BlockScaledMatrix w{s.n, s.k, in.o_weight_q, in.o_weight_sf, ScaleLayout::kSwizzled128x4};
  const int64_t chunk_rows = std::min(kRowChunk, s.m);

  // Scratch reused across calls (grow-only): first touch of fresh pages costs more here
  // than dequantizing. Calls are serialized on it.
  static std::mutex* mu = new std::mutex;
  static Workspace* ws = new Workspace;
  std::lock_guard<std::mutex> lock(*mu);

  // The weight is converted once per call, shared by all row chunks.
  IntOperand w_int;
  if (path == GemmPath::kFastF32) {
    Grow(ws->w_deq, s.n * s.k);
    DequantizeInto(w, ws->w_deq.data());
    Grow(ws->a_deq, chunk_rows * s.k);
    Grow(ws->acc, chunk_rows * s.n);
  } else {
    w_int = ToIntOperand(w);
  }

  for (int64_t r0 = 0; r0 < s.m; r0 += kRowChunk) {
    const int64_t rows = std::min(kRowChunk, s.m - r0);
    // Activation codes/scales of this chunk: straight into the caller's
    // workspace when given, else into scratch.
    absl::Span<uint8_t> q, sf;
    if (!out.act_q.empty()) {
      q = out.act_q.subspan(r0 * (s.k / 2), rows * (s.k / 2));
    } else {
      Grow(ws->q, rows * (s.k / 2));
      q = absl::MakeSpan(ws->q.data(), rows * (s.k / 2));
    }
    if (!out.act_sf.empty()) {
      sf = out.act_sf.subspan(r0 * (s.k / 16), rows * (s.k / 16));
    } else {
      Grow(ws->sf, rows * (s.k / 16));
      sf = absl::MakeSpan(ws->sf.data(), rows * (s.k / 16));
    }
    QuantizeRows(in.attn_out.subspan(r0 * s.k, rows * s.k), rows, s.k, in.act_global_scale, q, sf);
    const BlockScaledMatrix a{rows, s.k, q, sf, ScaleLayout::kLinear};
    MatrixF32 exact_acc;
    const float* acc;
    if (path == GemmPath::kFastF32) {
      DequantizeInto(a, ws->a_deq.data());
      GemmFastF32Into(ws->a_deq.data(), rows, ws->w_deq.data(), s.n, s.k, ws->acc.data());
      acc = ws->acc.data();
    } else {
      exact_acc = GemmExactF32(ToIntOperand(a), w_int);
      acc = exact_acc.data();
    }
    // residual and out may be the same buffer: raw pointers, row by row.
    const uint16_t* res = in.residual.data();
    uint16_t* dst = out.out.data();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t m = r0 + r;
      EpilogueRow(acc + r * s.n, alpha, in.gate, s.g, s.n, in.gate_index[m], res + m * s.n,
                  dst + m * s.n);
    }
  }
  return absl::OkStatus();
}

}  // namespace h3
