#include "core/operands.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "core/aliasing.h"
#include "core/scale_layout.h"
#include "core/shape.h"

namespace h3 {
namespace {

constexpr Operand OperandSet::*kMembers[] = {
#define H3_OPERAND(name, ...) &OperandSet::name,
#include "core/operands.def"
#undef H3_OPERAND
};
static_assert(sizeof(kMembers) / sizeof(kMembers[0]) == kOperandCount);

// core/aliasing.h exempts exactly out == residual and takes out as the first output: the table
// must keep them so (the first written row is out; the one IN_PLACE row is residual).
constexpr bool AliasingRowsAsExpected() {
  int in_place = 0;
  bool first_written_is_out = false, seen_written = false;
  for (const OperandSpec& s : kOperands) {
    if (s.presence == Presence::IN_PLACE) {
      ++in_place;
      if (s.name[0] != 'r' || s.name[1] != 'e' || s.name[2] != 's') return false;
    }
    if (s.role != Role::IN && !seen_written) {
      seen_written = true;
      first_written_is_out = s.name[0] == 'o' && s.name[1] == 'u' && s.name[2] == 't' &&
                             s.name[3] == '\0';
    }
  }
  return in_place == 1 && first_written_is_out;
}
static_assert(AliasingRowsAsExpected(),
              "core/aliasing.h exempts out == residual: out must be the first written row and "
              "residual the one IN_PLACE row");

const OperandSpec& Spec(int i) { return kOperands[i]; }

const char* ExtentName(Extent e) {
  switch (e) {
    case Extent::M: return "M";
    case Extent::N: return "N";
    case Extent::K: return "K";
    case Extent::G: return "G";
    case Extent::R: return "R";
    case Extent::K_2: return "K/2";
    case Extent::K_16: return "K/16";
    case Extent::X: break;
  }
  return "";
}

int64_t ExtentValue(Extent e, const OpDims& d) {
  switch (e) {
    case Extent::M: return d.m;
    case Extent::N: return d.n;
    case Extent::K: return d.k;
    case Extent::G: return d.g;
    case Extent::R: return d.r;
    case Extent::K_2: return d.k / 2;
    case Extent::K_16: return d.k / 16;
    case Extent::X: break;
  }
  return 0;
}

int Rank(const OperandSpec& s) {
  return s.shape == OperandShape::DIMS2 ? 2 : s.shape == OperandShape::DIMS1 ? 1 : 0;
}

// "[N, K/2]"
std::string Symbolic(const OperandSpec& s) {
  std::vector<std::string> parts;
  for (int i = 0; i < Rank(s); ++i) parts.push_back(ExtentName(s.dims[i]));
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

std::string ShapeStr(const Operand& a) {
  if (a.ndim < 0 || a.ndim > 4) return absl::StrFormat("a %d-D array", a.ndim);
  return absl::StrCat("[", absl::StrJoin(absl::MakeConstSpan(a.shape, a.ndim), ", "), "]");
}

bool IsSymbol(Extent e) {
  return e == Extent::M || e == Extent::N || e == Extent::K || e == Extent::G || e == Extent::R;
}

void SetSymbol(Extent e, int64_t v, OpDims* d) {
  if (e == Extent::M) d->m = v;
  if (e == Extent::N) d->n = v;
  if (e == Extent::K) d->k = v;
  if (e == Extent::G) d->g = v;
  if (e == Extent::R) d->r = v;
}

// The row and position that define symbol `e`: the first DIMS row with it bare there.
bool DefiningRow(Extent e, int* row, int* pos) {
  for (int i = 0; i < kOperandCount; ++i) {
    for (int p = 0; p < Rank(Spec(i)); ++p) {
      if (Spec(i).dims[p] == e) {
        *row = i;
        *pos = p;
        return true;
      }
    }
  }
  return false;
}

int64_t ElementBytes(DType t) {
  switch (t) {
    case DType::BF16: return 2;
    case DType::I32:
    case DType::F32: return 4;
    case DType::U8:
    case DType::SF8:
    case DType::FLAGS: return 1;
  }
  return 1;
}

absl::Status Invalid(const char* name, const std::string& want, const std::string& got) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "minimax_h3_nvfp4_out_proj: %s must be %s, got %s", name, want, got));
}

bool Given(const OperandSpec& s, const Operand& a) {
  return s.presence == Presence::REQUIRED || a.data != nullptr;
}

// The expected [d0, d1] of a DIMS row; `alt` replaces the row's own symbols by those another
// row gives (for the transposition hint).
bool HasDims(const Operand& a, const OperandSpec& s, const OpDims& d) {
  if (a.ndim != Rank(s)) return false;
  for (int p = 0; p < Rank(s); ++p) {
    if (a.shape[p] != ExtentValue(s.dims[p], d)) return false;
  }
  return true;
}

// A defining row given transposed, e.g. a weight [K/2, N]: its own symbols make the expected
// shape look right, so they are read from the next row that has them; if the operand is the
// transpose of that (and that is not symmetric), the message says so.
bool LooksTransposed(const OperandSet& ops, int row, const OpDims& d) {
  const OperandSpec& s = Spec(row);
  const Operand& a = ops[static_cast<OperandId>(row)];
  if (Rank(s) != 2 || a.ndim != 2) return false;
  OpDims alt = d;
  bool defines = false;
  for (int p = 0; p < 2; ++p) {
    int def_row = 0, def_pos = 0;
    if (!IsSymbol(s.dims[p]) || !DefiningRow(s.dims[p], &def_row, &def_pos) || def_row != row) {
      continue;
    }
    for (int j = row + 1; j < kOperandCount; ++j) {
      const Operand& b = ops[static_cast<OperandId>(j)];
      for (int q = 0; q < Rank(Spec(j)); ++q) {
        if (Spec(j).dims[q] != s.dims[p] || b.ndim != Rank(Spec(j))) continue;
        SetSymbol(s.dims[p], b.shape[q], &alt);
        defines = true;
        j = kOperandCount;
        break;
      }
    }
  }
  if (!defines) return false;
  const int64_t e0 = ExtentValue(s.dims[0], alt), e1 = ExtentValue(s.dims[1], alt);
  return e0 != e1 && a.shape[0] == e1 && a.shape[1] == e0;
}

absl::Status CheckShape(const OperandSet& ops, int row, const OpDims& d,
                        int64_t (*flag_bytes)(int64_t)) {
  const OperandSpec& s = Spec(row);
  const Operand& a = ops[static_cast<OperandId>(row)];
  switch (s.shape) {
    case OperandShape::DIMS2:
    case OperandShape::DIMS1: {
      if (HasDims(a, s, d)) return absl::OkStatus();
      std::vector<int64_t> want;
      std::string symbols;
      for (int p = 0; p < Rank(s); ++p) {
        want.push_back(ExtentValue(s.dims[p], d));
        symbols += ExtentName(s.dims[p]);
      }
      const std::string hint =
          LooksTransposed(ops, row, d)
              ? absl::StrCat("; is it transposed? ", s.name, " is ", Symbolic(s))
              : "";
      return absl::InvalidArgumentError(absl::StrFormat(
          "minimax_h3_nvfp4_out_proj: %s must have shape %s = [%s] (%s%s), got %s", s.name,
          Symbolic(s), absl::StrJoin(want, ", "), DimensionSources(d, symbols.c_str()), hint,
          ShapeStr(a)));
    }
    case OperandShape::SCALAR:
      if (a.ndim <= 1 && a.numel() == 1) return absl::OkStatus();
      return Invalid(s.name, "one float32 ([1] or a scalar)", "shape " + ShapeStr(a));
    case OperandShape::SWIZZLED_SF: {
      const int64_t bytes = SwizzledScaleBytes(d.n, d.k / 16);
      if (a.ndim >= 1 && a.numel() == bytes) return absl::OkStatus();
      return Invalid(s.name,
                     absl::StrFormat("round_up(N,128) * round_up(K/16,4) = %d bytes (%s)", bytes,
                                     DimensionSources(d, "NK")),
                     absl::StrFormat("%d bytes (shape %s)", a.numel(), ShapeStr(a)));
    }
    case OperandShape::FLAG_BYTES: {
      if (flag_bytes == nullptr) return absl::OkStatus();
      const int64_t want = flag_bytes(d.m);
      if (a.ndim == 1 && a.shape[0] >= want) return absl::OkStatus();
      return Invalid(s.name,
                     absl::StrFormat("1-D with at least h3_ready_flag_bytes(M) = %d bytes", want),
                     ShapeStr(a));
    }
  }
  return absl::OkStatus();
}

// A symbol defined by an OPTIONAL row (R by lora_down) exists only with that row: every other
// row using it is given exactly when the defining row is (contract section 13: lora_down and
// lora_up together); R itself obeys the contract's rule (a multiple of 16 in 16..64).
absl::Status CheckOptionalSymbols(const OperandSet& ops, const OpDims& d) {
  for (int i = 0; i < kOperandCount; ++i) {
    const OperandSpec& s = Spec(i);
    for (int p = 0; p < Rank(s); ++p) {
      int row = 0, pos = 0;
      if (!IsSymbol(s.dims[p]) || !DefiningRow(s.dims[p], &row, &pos) || row == i ||
          Spec(row).presence == Presence::REQUIRED) {
        continue;
      }
      const bool here = Given(s, ops[static_cast<OperandId>(i)]);
      const bool there = Given(Spec(row), ops[static_cast<OperandId>(row)]);
      if (here == there) continue;
      const int absent = here ? row : i, given = here ? i : row;
      return Invalid(Spec(absent).name,
                     absl::StrFormat("given together with %s (%s %s uses %s %s's %s)",
                                     Spec(given).name, Spec(i).name, Symbolic(s), Spec(row).name,
                                     Symbolic(Spec(row)), ExtentName(s.dims[p])),
                     absl::StrFormat("%s alone", Spec(given).name));
    }
  }
  int row = 0, pos = 0;
  if (DefiningRow(Extent::R, &row, &pos) && Given(Spec(row), ops[static_cast<OperandId>(row)])) {
    if (d.r < kLoraRankMin || d.r > kLoraRankMax || d.r % kLoraRankStep != 0) {
      const Operand& a = ops[static_cast<OperandId>(row)];
      return Invalid(Spec(row).name,
                     absl::StrFormat("%s with R a multiple of %d in %d..%d (the branch's rank, "
                                     "contract section 13)",
                                     Symbolic(Spec(row)), kLoraRankStep, kLoraRankMin,
                                     kLoraRankMax),
                     absl::StrFormat("R = %d (shape %s)", d.r, ShapeStr(a)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

Operand Operand::Of(const void* data, std::initializer_list<int64_t> shape) {
  Operand a;
  a.data = data;
  a.ndim = static_cast<int64_t>(shape.size());
  int i = 0;
  for (int64_t d : shape) {
    if (i < 4) a.shape[i] = d;
    ++i;
  }
  return a;
}

int64_t Operand::numel() const {
  int64_t n = 1;
  for (int64_t i = 0; i < ndim && i < 4; ++i) n *= shape[i];
  return n;
}

const Operand& OperandSet::operator[](OperandId id) const {
  return this->*kMembers[static_cast<int>(id)];
}

Operand& OperandSet::operator[](OperandId id) { return this->*kMembers[static_cast<int>(id)]; }

std::string DimensionSources(const OpDims& d, const char* symbols) {
  // Grouped by defining row, in table order: "M = 37, K = 7104 from attn_out [M, K]".
  std::vector<std::string> parts;
  const std::string wanted = symbols;
  for (int i = 0; i < kOperandCount; ++i) {
    std::vector<std::string> here;
    for (int p = 0; p < Rank(Spec(i)); ++p) {
      const Extent e = Spec(i).dims[p];
      int row = 0, pos = 0;
      if (!IsSymbol(e) || wanted.find(ExtentName(e)) == std::string::npos ||
          !DefiningRow(e, &row, &pos) || row != i || pos != p) {
        continue;
      }
      here.push_back(absl::StrFormat("%s = %d", ExtentName(e), ExtentValue(e, d)));
    }
    if (!here.empty()) {
      parts.push_back(
          absl::StrCat(absl::StrJoin(here, ", "), " from ", Spec(i).name, " ", Symbolic(Spec(i))));
    }
  }
  return absl::StrJoin(parts, ", ");
}

int64_t OperandBytes(const OperandSet& ops, OperandId id, const OpDims& d,
                     int64_t (*flag_bytes)(int64_t)) {
  if (ops[id].data == nullptr) return 0;
  if (Spec(static_cast<int>(id)).shape == OperandShape::FLAG_BYTES) {
    return flag_bytes != nullptr ? flag_bytes(d.m) : 0;
  }
  return OperandTableBytes(id, d);
}

int64_t OperandTableBytes(OperandId id, const OpDims& d) {
  const OperandSpec& s = Spec(static_cast<int>(id));
  switch (s.shape) {
    case OperandShape::DIMS2:
    case OperandShape::DIMS1: {
      int64_t n = ElementBytes(s.dtype);
      for (int p = 0; p < Rank(s); ++p) n *= ExtentValue(s.dims[p], d);
      return n;
    }
    case OperandShape::SCALAR: return ElementBytes(s.dtype);
    case OperandShape::SWIZZLED_SF: return SwizzledScaleBytes(d.n, d.k / 16);
    case OperandShape::FLAG_BYTES: return 0;
  }
  return 0;
}

absl::Status ValidateOperands(const OperandSet& ops, const OperandRules& rules, OpDims* dims) {
  // H3Array carries at most 4 dimensions: any other rank is refused before a shape is read.
  for (int i = 0; i < kOperandCount; ++i) {
    const Operand& a = ops[static_cast<OperandId>(i)];
    if (a.ndim < 0 || a.ndim > 4) {
      return Invalid(Spec(i).name, "an array of 0 to 4 dimensions",
                     absl::StrFormat("ndim %d", a.ndim));
    }
  }
  // The defining rows' ranks, then the symbols they fix.
  OpDims d;
  for (const Extent e : {Extent::M, Extent::K, Extent::N, Extent::G, Extent::R}) {
    int row = 0, pos = 0;
    if (!DefiningRow(e, &row, &pos)) continue;
    const Operand& a = ops[static_cast<OperandId>(row)];
    if (!Given(Spec(row), a)) continue;  // an optional row's symbol: absent with it (R = 0)
    if (a.ndim != Rank(Spec(row))) {
      return Invalid(Spec(row).name,
                     absl::StrFormat("%d-D %s", Rank(Spec(row)), Symbolic(Spec(row))),
                     "shape " + ShapeStr(a));
    }
    SetSymbol(e, a.shape[pos], &d);
  }
  if (absl::Status s = rules.shape_rule(d); !s.ok()) return s;
  if (absl::Status s = CheckOptionalSymbols(ops, d); !s.ok()) return s;
  // Beyond M, N, K, G (the rule's): no extent of any operand may be negative, so that no
  // product of extents matches a size by two signs.
  for (int i = 0; i < kOperandCount; ++i) {
    const Operand& a = ops[static_cast<OperandId>(i)];
    for (int64_t p = 0; p < a.ndim; ++p) {
      if (a.shape[p] < 0) {
        return Invalid(Spec(i).name, "an array of non-negative dimensions",
                       "shape " + ShapeStr(a));
      }
    }
  }
  const auto skipped = [&rules](const OperandSpec& s) {
    return (rules.inputs_only && s.role != Role::IN) ||
           (s.shape == OperandShape::FLAG_BYTES && rules.flag_bytes == nullptr);
  };
  for (int i = 0; i < kOperandCount; ++i) {
    if (skipped(Spec(i)) || !Given(Spec(i), ops[static_cast<OperandId>(i)])) continue;
    if (absl::Status s = CheckShape(ops, i, d, rules.flag_bytes); !s.ok()) return s;
  }
  *dims = d;
  if (d.m == 0) return absl::OkStatus();
  for (int i = 0; i < kOperandCount; ++i) {
    const OperandSpec& s = Spec(i);
    const Operand& a = ops[static_cast<OperandId>(i)];
    if (skipped(s)) continue;
    if (a.data == nullptr) {
      if (s.presence != Presence::REQUIRED) continue;
      return Invalid(s.name, rules.memory, "null");
    }
    if (rules.check_alignment && reinterpret_cast<uintptr_t>(a.data) % s.gpu_align != 0) {
      return Invalid(s.name, absl::StrFormat("%d-byte aligned", s.gpu_align),
                     absl::StrFormat("address %p", a.data));
    }
  }
  // Section 9: outputs and workspaces overlap nothing; out may be exactly the IN_PLACE input.
  std::vector<ByteRange> inputs, outputs;
  const void* in_place = nullptr;
  for (int i = 0; i < kOperandCount; ++i) {
    const OperandSpec& s = Spec(i);
    const OperandId id = static_cast<OperandId>(i);
    if (skipped(s)) continue;
    const ByteRange r = RangeOf(s.name, ops[id].data, OperandBytes(ops, id, d, rules.flag_bytes));
    (s.role == Role::IN ? inputs : outputs).push_back(r);
    if (s.presence == Presence::IN_PLACE) in_place = ops[id].data;
  }
  return CheckAliasing(inputs, outputs, in_place != nullptr && in_place == ops.out.data);
}

}  // namespace h3
