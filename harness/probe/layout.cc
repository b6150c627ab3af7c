// The layout half of the probe's judgement: the contract's fragment index math (section 7) and
// the diagnosis of a layout case whose D differs from the model, in the contract's terms
// (register, lane, nibble, scale byte).
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/formats.h"
#include "emulator/formats.h"
#include "harness/probe/judge_internal.h"
#include "harness/probe/probe.h"

namespace h3::probe {

// ============================================================================================
// Fragment index math (contract section 7)
// ============================================================================================

void ALocation(int row, int k, int* lane, int* reg, int* nibble) {
  const int g = row % 8, t = (k % 32) / 8;
  *lane = 4 * g + t;
  *reg = 2 * (k / 32) + row / 8;
  *nibble = k % 8;
}

void BLocation(int k, int col, int* lane, int* reg, int* nibble) {
  const int t = (k % 32) / 8;
  *lane = 4 * col + t;
  *reg = k / 32;
  *nibble = k % 8;
}

void CLocation(int row, int col, int* lane, int* reg) {
  *lane = 4 * (row % 8) + col / 2;
  *reg = 2 * (row / 8) + col % 2;
}

Operands Unpack(const MmaCase& mc) {
  Operands o{};
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 8; ++j) {
        o.A[g + 8 * (i & 1)][8 * t + j + 32 * (i >> 1)] = (mc.a[lane][i] >> (4 * j)) & 0xF;
      }
      o.C[g + 8 * (i >> 1)][2 * t + (i & 1)] = mc.c[lane][i];
    }
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 8; ++j) o.B[8 * t + j + 32 * i][g] = (mc.b[lane][i] >> (4 * j)) & 0xF;
    }
    for (int b = 0; b < 4; ++b) {
      if (t == 0) {
        o.SA[g][b] = (mc.sfa[lane] >> (8 * b)) & 0xFF;
        o.SB[g][b] = (mc.sfb[lane] >> (8 * b)) & 0xFF;
      } else if (t == 1) {
        o.SA[g + 8][b] = (mc.sfa[lane] >> (8 * b)) & 0xFF;
      }
    }
  }
  return o;
}

void UnpackD(const float* d, float D[16][8]) {
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) D[g + 8 * (i >> 1)][2 * t + (i & 1)] = d[4 * lane + i];
  }
}

namespace {

// ---- layout diagnosis ----

std::string FirstDiff(const float D[16][8], const float E[16][8]) {
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 8; ++n) {
      if (!Same(D[m][n], E[m][n])) {
        return absl::StrFormat("%s = %s, expected %s", Elem(m, n), Num(D[m][n]), Num(E[m][n]));
      }
    }
  }
  return "no difference";
}

bool RowZero(const float D[16][8], int m) {
  for (int n = 0; n < 8; ++n) {
    if (D[m][n] != 0.0f) return false;
  }
  return true;
}
bool ColZero(const float D[16][8], int n) {
  for (int m = 0; m < 16; ++m) {
    if (D[m][n] != 0.0f) return false;
  }
  return true;
}
std::string RowText(const float D[16][8], int m) {
  std::vector<std::string> v;
  for (int n = 0; n < 8; ++n) v.push_back(Num(D[m][n]));
  return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
}
std::string ColText(const float D[16][8], int n) {
  std::vector<std::string> v;
  for (int m = 0; m < 16; ++m) v.push_back(Num(D[m][n]));
  return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
}

// A case: D row m decoded through B's k encoding.
bool DecodeARow(const float D[16][8], int m, int* k) {
  if (D[m][6] != 1.0f || D[m][7] != 2.0f) return false;
  int v = 0;
  for (int n = 0; n < 6; ++n) {
    if (D[m][n] == 1.0f) {
      v |= 1 << n;
    } else if (D[m][n] != 0.0f) {
      return false;
    }
  }
  *k = v;
  return true;
}

// B case: D column n decoded through A's k encoding.
bool DecodeBCol(const float D[16][8], int n, int* k) {
  if (D[6][n] != 1.0f || D[7][n] != 2.0f || D[14][n] != 0.5f || D[15][n] != 0.0f) return false;
  int v = 0;
  for (int m = 0; m < 6; ++m) {
    const float bit = D[m][n], inv = D[m + 8][n];
    if (bit == 1.0f && inv == 0.0f) {
      v |= 1 << m;
    } else if (!(bit == 0.0f && inv == 1.0f)) {
      return false;
    }
  }
  *k = v;
  return true;
}

std::string DiagnoseCD(const MmaCase& mc, const float D[16][8], const float E[16][8]) {
  std::vector<std::string> out;
  for (int m = 0; m < 16 && out.size() < 3; ++m) {
    for (int n = 0; n < 8 && out.size() < 3; ++n) {
      if (Same(D[m][n], E[m][n])) continue;
      const double v = D[m][n];
      const double idx = mc.p0 == 0 ? v - 1 : -v * 8 - 1;
      if (idx >= 0 && idx < 128 && idx == std::floor(idx)) {
        const int sm = static_cast<int>(idx) / 8, sn = static_cast<int>(idx) % 8;
        int sl, sr, dl, dr;
        CLocation(sm, sn, &sl, &sr);
        CLocation(m, n, &dl, &dr);
        out.push_back(absl::StrFormat(
            "C/D: c[%d] of lane %d (row %d, col %d) came back as d[%d] of lane %d (row %d, col %d)",
            sr, sl, sm, sn, dr, dl, m, n));
      } else {
        out.push_back(absl::StrFormat("C/D: %s = %s is no C element (expected %s)", Elem(m, n),
                                      Num(v), Num(E[m][n])));
      }
    }
  }
  return absl::StrJoin(out, "; ");
}

// One-hot A (rows of D, a = true) or B (columns of D) case: the lines of D that lit up, decoded
// through the other operand's k encoding to the (row or column, k) the hardware used.
std::string DiagnoseOneHot(const MmaCase& mc, const float D[16][8], const float E[16][8], bool a) {
  int lane, reg, nib;
  // A: (p0, p1) = (row, k); B: (k, column).
  const int want_line = a ? mc.p0 : mc.p1, want_k = a ? mc.p1 : mc.p0;
  std::string s;
  if (a) {
    ALocation(mc.p0, mc.p1, &lane, &reg, &nib);
    s = absl::StrFormat("A: register a[%d] lane %d nibble %d (row %d, k %d) ", reg, lane, nib,
                        mc.p0, mc.p1);
  } else {
    BLocation(mc.p0, mc.p1, &lane, &reg, &nib);
    s = absl::StrFormat("B: register b[%d] lane %d nibble %d (k %d, column %d) ", reg, lane, nib,
                        mc.p0, mc.p1);
  }
  std::vector<std::string> seen, junk;
  bool only_expected = true;
  for (int line = 0; line < (a ? 16 : 8); ++line) {
    if (a ? RowZero(D, line) : ColZero(D, line)) continue;
    int k;
    if (a ? DecodeARow(D, line, &k) : DecodeBCol(D, line, &k)) {
      seen.push_back(a ? absl::StrFormat("row %d, k %d", line, k)
                       : absl::StrFormat("k %d, column %d", k, line));
      if (line != want_line || k != want_k) only_expected = false;
    } else {
      junk.push_back(a ? absl::StrFormat("D row %d = %s", line, RowText(D, line))
                       : absl::StrFormat("D column %d = %s", line, ColText(D, line)));
      only_expected = false;
    }
  }
  if (seen.empty() && junk.empty()) return s + "was not read (D is all zero)";
  if (only_expected && seen.size() == 1) return s + "read at its place, but " + FirstDiff(D, E);
  if (!seen.empty()) absl::StrAppend(&s, "read as ", absl::StrJoin(seen, " and "));
  if (!junk.empty()) {
    absl::StrAppend(&s, seen.empty() ? "" : "; ", "unrecognized: ", absl::StrJoin(junk, "; "));
  }
  return s;
}

// Scale cases: the value of one D row (SFA) / column (SFB) names what the hardware used: 15 =
// all four blocks at 1.0; 15 + 2^b = the 2.0 byte as block b; 15 * P = ignored lane's poison P.
std::string DecodeScaleLine(float v, bool sfa, int* block) {
  *block = -1;
  if (v == 15.0f) return "";
  for (int b = 0; b < 4; ++b) {
    if (v == 15.0f + static_cast<float>(1 << b)) {
      *block = b;
      return "";
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    const int t = lane % 4;
    if (sfa ? t < 2 : t == 0) continue;
    if (v == 15.0f * Ue4m3ToF32(PoisonByte(lane))) {
      return absl::StrFormat("its scales from ignored lane %d", lane);
    }
  }
  return absl::StrFormat("an unrecognized value %s", Num(v));
}

std::string DiagnoseScale(const MmaCase& mc, const float D[16][8], const float E[16][8], bool sfa) {
  const int lane = sfa ? 4 * (mc.p0 % 8) + mc.p0 / 8 : 4 * mc.p0;
  const char* what = sfa ? "row" : "column";
  std::vector<std::string> seen, other;
  bool only_expected = true;
  const int lines = sfa ? 16 : 8;
  for (int x = 0; x < lines; ++x) {
    const float v = sfa ? D[x][0] : D[0][x];
    bool uniform = true;
    for (int y = 0; y < (sfa ? 8 : 16); ++y) uniform = uniform && Same(sfa ? D[x][y] : D[y][x], v);
    if (!uniform) {
      other.push_back(absl::StrFormat("%s %d is not uniform: %s", what, x,
                                      sfa ? RowText(D, x) : ColText(D, x)));
      only_expected = false;
      continue;
    }
    int block;
    const std::string odd = DecodeScaleLine(v, sfa, &block);
    if (!odd.empty()) {
      other.push_back(absl::StrFormat("%s %d used %s", what, x, odd));
      only_expected = false;
    } else if (block >= 0) {
      seen.push_back(absl::StrFormat("%s %d / block %d", what, x, block));
      if (x != mc.p0 || block != mc.p1) only_expected = false;
    }
  }
  std::string s = absl::StrFormat("%s: lane %d byte %d (%s %d, k-block %d) ", sfa ? "SFA" : "SFB",
                                  lane, mc.p1, what, mc.p0, mc.p1);
  if (only_expected && seen.size() == 1) return s + "read at its place, but " + FirstDiff(D, E);
  absl::StrAppend(&s, seen.empty() ? "was not read" : "read as " + absl::StrJoin(seen, " and "));
  if (!other.empty()) absl::StrAppend(&s, "; ", absl::StrJoin(other, "; "));
  return s;
}

}  // namespace

std::string DiagnoseLayout(const MmaCase& mc, const float D[16][8], const float E[16][8]) {
  switch (mc.kind) {
    case MmaKind::kCD:
      return DiagnoseCD(mc, D, E);
    case MmaKind::kA:
      return DiagnoseOneHot(mc, D, E, true);
    case MmaKind::kB:
      return DiagnoseOneHot(mc, D, E, false);
    case MmaKind::kSfa:
      return DiagnoseScale(mc, D, E, true);
    case MmaKind::kSfb:
      return DiagnoseScale(mc, D, E, false);
    default:
      return "";
  }
}

}  // namespace h3::probe
