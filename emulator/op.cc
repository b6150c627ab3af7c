#include "emulator/op.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/global_scale.h"
#include "core/operands.h"
#include "emulator/epilogue.h"
#include "emulator/formats.h"
#include "emulator/gemm.h"
#include "emulator/quality.h"
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
  std::vector<uint16_t> xs, l;  // smoothed activations, the branch's l (sections 12, 13)
};

template <typename T>
void Grow(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(n);
}

absl::Status CheckSize(const char* name, int64_t expected, size_t given, const std::string& what) {
  if (static_cast<int64_t>(given) != expected) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: expected %d elements (%s), got %d", name, expected, what, given));
  }
  return absl::OkStatus();
}

// A row's element count in words: "m*k", "n*k/2", "round_up(n,128)*round_up(k/16,4)".
std::string SizeWords(OperandId id) {
  const OperandSpec& s = kOperands[static_cast<int>(id)];
  if (s.shape == OperandShape::SWIZZLED_SF) return "round_up(n,128)*round_up(k/16,4)";
  std::vector<std::string> parts;
  for (const Extent e : s.dims) {
    switch (e) {
      case Extent::M:
        parts.push_back("m");
        break;
      case Extent::N:
        parts.push_back("n");
        break;
      case Extent::K:
        parts.push_back("k");
        break;
      case Extent::G:
        parts.push_back("g");
        break;
      case Extent::R:
        parts.push_back("r");
        break;
      case Extent::K_2:
        parts.push_back("k/2");
        break;
      case Extent::K_16:
        parts.push_back("k/16");
        break;
      case Extent::X:
        break;
    }
  }
  return absl::StrJoin(parts, "*");
}

// One array row's span: its table size, or empty where the row is optional (not given).
absl::Status CheckRow(OperandId id, size_t given, size_t element_bytes, const OpDims& d) {
  const OperandSpec& spec = kOperands[static_cast<int>(id)];
  if (given == 0 && spec.presence == Presence::OPTIONAL) return absl::OkStatus();
  return CheckSize(spec.name, OperandTableBytes(id, d) / static_cast<int64_t>(element_bytes), given,
                   SizeWords(id));
}

}  // namespace

// Every row of the table (core/operands.def) that OpInputs / OpOutputs carry, in its order:
// arrays by size, SCALARs (the global scales) by value.
absl::Status ValidateOpInputs(const OpInputs& in) {
  const OpShape& s = in.shape;
  if (absl::Status st = ValidateShape(s); !st.ok()) return st;
  // The quality rows first: they fix r (lora_down's rows), which the table sizes lora_up by.
  int64_t r = 0;
  if (absl::Status st = ValidateQualityInputs(s, QualityOf(in), &r); !st.ok()) return st;
  const OpDims d{s.m, s.n, s.k, s.g, r};
  absl::Status st;
#define H3_OP_CHECK_DIMS2(name) \
  st = CheckRow(OperandId::name, in.name.size(), sizeof(in.name[0]), d);
#define H3_OP_CHECK_DIMS1(name) H3_OP_CHECK_DIMS2(name)
#define H3_OP_CHECK_SWIZZLED_SF(name) H3_OP_CHECK_DIMS2(name)
#define H3_OP_CHECK_SCALAR(name) st = CheckGlobalScale(#name, in.name);
#define H3_OP_CHECK_FLAG_BYTES(name)
#define H3_OP_CHECK_IN(shape, name) H3_OP_CHECK_##shape(name) if (!st.ok()) return st;
#define H3_OP_CHECK_OUT(shape, name)
#define H3_OP_CHECK_WORKSPACE(shape, name)
#define H3_OPERAND(name, dtype, shape, d0, d1, presence, role, ...) H3_OP_CHECK_##role(shape, name)
#include "core/operands.def"
#undef H3_OPERAND
  return absl::OkStatus();
}

absl::Status ValidateOpOutputs(const OpShape& s, const OpOutputs& out) {
  absl::Status st;
#define H3_OP_OUTPUT_IN(name)
#define H3_OP_OUTPUT_WORKSPACE(name)
#define H3_OP_OUTPUT_OUT(name)                                                               \
  st = CheckRow(OperandId::name, out.name.size(), sizeof(out.name[0]), OpDims{s.m, s.n, s.k, s.g}); \
  if (!st.ok()) return st;
#define H3_OPERAND(name, dtype, shape, d0, d1, presence, role, ...) H3_OP_OUTPUT_##role(name)
#include "core/operands.def"
#undef H3_OPERAND
  return absl::OkStatus();
}

absl::Status RunOp(const OpInputs& in, const OpOutputs& out, GemmPath path) {
  return RunOpQuality(in, QualityInputs{}, out, path);
}

namespace {

// One option from `in`'s row or from `quality`: given in one place, or the same span in both.
template <typename T>
absl::Status Merge(const char* name, absl::Span<const T> row, absl::Span<const T> extra,
                   absl::Span<const T>* merged) {
  if (!row.empty() && !extra.empty() && (row.data() != extra.data() || row.size() != extra.size())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: expected given once (OpInputs or QualityInputs), got two different arrays", name));
  }
  *merged = row.empty() ? extra : row;
  return absl::OkStatus();
}

}  // namespace

absl::Status RunOpQuality(const OpInputs& in_rows, const QualityInputs& extra,
                          const OpOutputs& out, GemmPath path) {
  // The options as the operand table carries them (OpInputs' rows) or as `extra`: one set.
  QualityInputs quality;
  const QualityInputs rows = QualityOf(in_rows);
  absl::Status merged = Merge("act_smooth", rows.act_smooth, extra.act_smooth, &quality.act_smooth);
  if (merged.ok()) merged = Merge("lora_down", rows.lora_down, extra.lora_down, &quality.lora_down);
  if (merged.ok()) merged = Merge("lora_up", rows.lora_up, extra.lora_up, &quality.lora_up);
  if (!merged.ok()) return merged;
  OpInputs in = in_rows;
  in.act_smooth = quality.act_smooth;
  in.lora_down = quality.lora_down;
  in.lora_up = quality.lora_up;
  if (absl::Status st = ValidateOpInputs(in); !st.ok()) return st;
  if (absl::Status st = ValidateOpOutputs(in.shape, out); !st.ok()) return st;
  int64_t rank = 0;
  if (absl::Status st = ValidateQualityInputs(in.shape, quality, &rank); !st.ok()) return st;
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
    // x' of section 12: the smoothed rows when act_smooth is given, else attn_out itself.
    const uint16_t* x = in.attn_out.data() + r0 * s.k;
    if (!quality.act_smooth.empty()) {
      Grow(ws->xs, rows * s.k);
      SmoothRows(x, rows, s.k, quality.act_smooth, ws->xs.data());
      x = ws->xs.data();
    }
    QuantizeRows(absl::MakeConstSpan(x, rows * s.k), rows, s.k, in.act_global_scale, q, sf);
    const BlockScaledMatrix a{rows, s.k, q, sf, ScaleLayout::kLinear};
    MatrixF32 exact_acc;
    float* acc;
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
    if (rank > 0) {
      // Section 13: o = acc * alpha, then v = o + l @ lora_up^T in place, then the epilogue on v.
      for (int64_t i = 0; i < rows * s.n; ++i) {
        volatile float o = acc[i] * alpha;
        acc[i] = o;
      }
      Grow(ws->l, rows * rank);
      LowRankDown(x, rows, s.k, quality.lora_down, rank, path, ws->l.data());
      LowRankUpInto(ws->l.data(), rows, rank, quality.lora_up, s.n, path, acc);
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t m = r0 + r;
        EpilogueRowFromO(acc + r * s.n, in.gate, s.g, s.n, in.gate_index[m], res + m * s.n,
                         dst + m * s.n);
      }
      continue;
    }
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
