#include "harness/probe/probe.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/formats.h"
#include "emulator/formats.h"
#include "emulator/mma_model.h"
#include "harness/testbed/rng.h"

namespace h3::probe {

// ============================================================================================
// Exact
// ============================================================================================

Exact Exact::FromScaledInt(int64_t v, int exp2) {
  Exact r;
  if (v == 0) return r;
  const int shift = exp2 - kLsbExp;
  const bool neg = v < 0;
  const uint64_t mag = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  const int bits = 64 - __builtin_clzll(mag);
  if (shift < 0 || shift + bits > 64 * kLimbs - 1) std::abort();  // outside the format: a bug
  const int limb = shift / 64, bit = shift % 64;
  r.w_[limb] = mag << bit;
  if (bit != 0 && limb + 1 < kLimbs) r.w_[limb + 1] = mag >> (64 - bit);
  return neg ? -r : r;
}

Exact Exact::FromFloat(float f) {
  if (f == 0.0f) return Exact();
  int e = 0;
  const double fr = std::frexp(static_cast<double>(f), &e);
  const int64_t mant = static_cast<int64_t>(std::ldexp(fr, 24));  // exact: <= 24 bits
  return FromScaledInt(mant, e - 24);
}

Exact Exact::operator+(const Exact& o) const {
  Exact r;
  unsigned __int128 carry = 0;
  for (int i = 0; i < kLimbs; ++i) {
    const unsigned __int128 s = static_cast<unsigned __int128>(w_[i]) + o.w_[i] + carry;
    r.w_[i] = static_cast<uint64_t>(s);
    carry = s >> 64;
  }
  return r;
}

Exact Exact::operator-() const {
  Exact r;
  unsigned __int128 carry = 1;
  for (int i = 0; i < kLimbs; ++i) {
    const unsigned __int128 s = static_cast<unsigned __int128>(~w_[i]) + carry;
    r.w_[i] = static_cast<uint64_t>(s);
    carry = s >> 64;
  }
  return r;
}

Exact Exact::ShiftRight(int n) const {
  const uint64_t fill = IsNegative() ? ~uint64_t{0} : 0;
  Exact r;
  const int limbs = n / 64, bits = n % 64;
  for (int i = 0; i < kLimbs; ++i) {
    const int src = i + limbs;
    const uint64_t lo = src < kLimbs ? w_[src] : fill;
    const uint64_t hi = src + 1 < kLimbs ? w_[src + 1] : fill;
    r.w_[i] = bits == 0 ? lo : (lo >> bits) | (hi << (64 - bits));
  }
  return r;
}

bool Exact::IsZero() const {
  for (uint64_t w : w_) {
    if (w != 0) return false;
  }
  return true;
}

int Exact::Compare(const Exact& o) const {
  const Exact d = *this - o;
  if (d.IsZero()) return 0;
  return d.IsNegative() ? -1 : 1;
}

int Exact::MsbExp() const {
  const Exact m = Abs();
  for (int i = kLimbs - 1; i >= 0; --i) {
    if (m.w_[i] != 0) return i * 64 + 63 - __builtin_clzll(m.w_[i]) + kLsbExp;
  }
  return -1000;
}

int Exact::LsbExp() const {
  for (int i = 0; i < kLimbs; ++i) {
    if (w_[i] != 0) return i * 64 + __builtin_ctzll(w_[i]) + kLsbExp;
  }
  return -1000;
}

double Exact::ToDouble() const {
  const Exact m = Abs();
  double v = 0;
  for (int i = kLimbs - 1; i >= 0; --i)
    v = v * 18446744073709551616.0 + static_cast<double>(m.w_[i]);
  v = std::ldexp(v, kLsbExp);
  return IsNegative() ? -v : v;
}

float Exact::ToFloat(bool toward_zero) const {
  if (IsZero()) return 0.0f;
  const bool neg = IsNegative();
  const Exact m = Abs();
  const int e = m.MsbExp();   // value exponent of the leading bit
  const int p = e - kLsbExp;  // its bit index
  if (e >= 128) {
    const float big = toward_zero ? FLT_MAX : std::numeric_limits<float>::infinity();
    return neg ? -big : big;
  }
  const int q = e >= -126 ? p - 23 : -149 - kLsbExp;  // bit index of the result's lsb
  uint64_t mant = 0;
  for (int i = p; i >= q; --i) mant = (mant << 1) | (m.Bit(i) ? 1u : 0u);
  if (!toward_zero && q > 0) {
    const bool half = m.Bit(q - 1);
    bool sticky = false;
    const int nb = q - 1;  // bits [0, nb) are below the half bit
    for (int i = 0; i < nb / 64; ++i) sticky = sticky || m.w_[i] != 0;
    if (nb % 64 != 0) sticky = sticky || (m.w_[nb / 64] & ((uint64_t{1} << (nb % 64)) - 1)) != 0;
    if (half && (sticky || (mant & 1) != 0)) ++mant;
  }
  // mant * 2^(q + kLsbExp) is a binary32 value (or 2^128, which becomes Inf): exact in double,
  // and the conversion to float is exact.
  const float f = static_cast<float>(std::ldexp(static_cast<double>(mant), q + kLsbExp));
  return neg ? -f : f;
}

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

// ============================================================================================
// Judging helpers
// ============================================================================================

bool Same(float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }

std::string Num(double v) {
  if (std::isnan(v)) return "NaN";
  return absl::StrFormat("%.9g", v);
}

std::string Elem(int m, int n) {
  int lane, reg;
  CLocation(m, n, &lane, &reg);
  return absl::StrFormat("D[m=%d, n=%d] (lane %d d[%d])", m, n, lane, reg);
}

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

std::string DiagnoseA(const MmaCase& mc, const float D[16][8], const float E[16][8]) {
  int lane, reg, nib;
  ALocation(mc.p0, mc.p1, &lane, &reg, &nib);
  std::vector<std::string> seen, junk;
  bool only_expected = true;
  for (int m = 0; m < 16; ++m) {
    if (RowZero(D, m)) continue;
    int k;
    if (DecodeARow(D, m, &k)) {
      seen.push_back(absl::StrFormat("row %d, k %d", m, k));
      if (m != mc.p0 || k != mc.p1) only_expected = false;
    } else {
      junk.push_back(absl::StrFormat("D row %d = %s", m, RowText(D, m)));
      only_expected = false;
    }
  }
  std::string s = absl::StrFormat("A: register a[%d] lane %d nibble %d (row %d, k %d) ", reg, lane,
                                  nib, mc.p0, mc.p1);
  if (seen.empty() && junk.empty()) return s + "was not read (D is all zero)";
  if (only_expected && seen.size() == 1) return s + "read at its place, but " + FirstDiff(D, E);
  if (!seen.empty()) absl::StrAppend(&s, "read as ", absl::StrJoin(seen, " and "));
  if (!junk.empty()) {
    absl::StrAppend(&s, seen.empty() ? "" : "; ", "unrecognized: ", absl::StrJoin(junk, "; "));
  }
  return s;
}

std::string DiagnoseB(const MmaCase& mc, const float D[16][8], const float E[16][8]) {
  int lane, reg, nib;
  BLocation(mc.p0, mc.p1, &lane, &reg, &nib);
  std::vector<std::string> seen, junk;
  bool only_expected = true;
  for (int n = 0; n < 8; ++n) {
    if (ColZero(D, n)) continue;
    int k;
    if (DecodeBCol(D, n, &k)) {
      seen.push_back(absl::StrFormat("k %d, column %d", k, n));
      if (n != mc.p1 || k != mc.p0) only_expected = false;
    } else {
      junk.push_back(absl::StrFormat("D column %d = %s", n, ColText(D, n)));
      only_expected = false;
    }
  }
  std::string s = absl::StrFormat("B: register b[%d] lane %d nibble %d (k %d, column %d) ", reg,
                                  lane, nib, mc.p0, mc.p1);
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

// ---- precision ----

struct Terms {
  bool nan = false;
  Exact c;
  float cf = 0;
  Exact p[64];
};

Terms MakeTerms(const Operands& o, int m, int n) {
  Terms t;
  t.cf = o.C[m][n];
  for (int b = 0; b < 4; ++b) t.nan = t.nan || E4M3IsNaN(o.SA[m][b]) || E4M3IsNaN(o.SB[n][b]);
  if (std::isnan(t.cf)) t.nan = true;
  if (t.nan) return t;
  t.c = Exact::FromFloat(t.cf);
  for (int k = 0; k < 64; ++k) {
    const int b = k / 16;
    const int64_t v = int64_t{E2M1TimesTwo(o.A[m][k])} * E2M1TimesTwo(o.B[k][n]) *
                      int64_t{E4M3Times512(o.SA[m][b])} * E4M3Times512(o.SB[n][b]);
    t.p[k] = Exact::FromScaledInt(v, -20);  // (2a)(2b)(512 sa)(512 sb) = 2^20 a b sa sb
  }
  return t;
}

struct ElemVerdict {
  bool ok = true;
  bool exact_case = false;
  Exact s, a, bound;
};

// Section 8 for one instruction: the 64 products and C are 65 terms, so B = 64 * 2^-24 * A.
ElemVerdict JudgeValue(const Terms& t, float got) {
  ElemVerdict v;
  if (t.nan) {
    v.ok = std::isnan(got);
    return v;
  }
  v.s = t.c;
  v.a = t.c.Abs();
  int e = t.c.IsZero() ? 1000 : t.c.LsbExp();
  for (const Exact& p : t.p) {
    v.s = v.s + p;
    v.a = v.a + p.Abs();
    if (!p.IsZero()) e = std::min(e, p.LsbExp());
  }
  v.exact_case = v.a.IsZero() || v.a.MsbExp() < e + 24;
  v.bound = v.a.ShiftRight(18);
  if (!std::isfinite(got)) {
    v.ok = false;
  } else if (v.exact_case) {
    v.ok = Exact::FromFloat(got) == v.s;  // +-0 both admissible when S = 0
  } else {
    v.ok = (Exact::FromFloat(got) - v.s).Abs() <= v.bound;
  }
  return v;
}

// Candidate accumulation models for the measurement.
constexpr int kModels = 6;
const char* const kModelNames[kModels] = {
    "exact sum rounded once to nearest (the emulator's model)",
    "exact sum truncated once",
    "sequential round-to-nearest adds in k order",
    "sequential truncating adds in k order",
    "exact 16-block sums, round-to-nearest adds",
    "exact 16-block sums, truncating adds",
};
const char* const kModelShort[kModels] = {"exact-then-RN", "exact-then-RZ", "sequential-RN",
                                          "sequential-RZ", "block-RN",      "block-RZ"};

std::array<float, kModels> Models(const Terms& t) {
  Exact s = t.c;
  for (const Exact& p : t.p) s = s + p;
  float seq_rn = t.cf, seq_rz = t.cf, blk_rn = t.cf, blk_rz = t.cf;
  for (int k = 0; k < 64; ++k) {
    seq_rn = (Exact::FromFloat(seq_rn) + t.p[k]).ToFloatRN();
    seq_rz = (Exact::FromFloat(seq_rz) + t.p[k]).ToFloatRZ();
  }
  for (int b = 0; b < 4; ++b) {
    Exact blk;
    for (int k = 16 * b; k < 16 * b + 16; ++k) blk = blk + t.p[k];
    blk_rn = (Exact::FromFloat(blk_rn) + blk).ToFloatRN();
    blk_rz = (Exact::FromFloat(blk_rz) + blk).ToFloatRZ();
  }
  return {s.ToFloatRN(), s.ToFloatRZ(), seq_rn, seq_rz, blk_rn, blk_rz};
}

std::string MatchText(const std::array<float, kModels>& models, float got) {
  std::vector<std::string> hits;
  for (int i = 0; i < kModels; ++i) {
    if (Same(models[i], got)) hits.push_back(kModelShort[i]);
  }
  return hits.empty() ? "matches none of the candidate models"
                      : absl::StrCat("consistent with ", absl::StrJoin(hits, ", "));
}

// Subnormal cases: the scale a row / column with one uniform scale byte acted as.
std::string SubnormalHint(const MmaCase& mc, const Operands& o, const float D[16][8], int m,
                          int n) {
  uint8_t byte = 0;
  double implied = 0;
  const char* which = nullptr;
  if (mc.name == "subnormal/sfa" && m < 7) {
    byte = o.SA[m][0];
    implied = D[m][7] / (64.0 * 6.0);  // column 7: B = 6.0 everywhere
    which = "SFA";
  } else if (mc.name == "subnormal/sfb" && n < 7) {
    byte = o.SB[n][0];
    implied = D[7][n] / (64.0 * 6.0);  // row 7: A = 6.0 everywhere
    which = "SFB";
  } else {
    return "";
  }
  const double exact = Ue4m3ToF32(byte);
  std::string how;
  if (implied == 0) {
    how = " (flushed to zero)";
  } else if (implied == std::ldexp(1.0 + (byte & 7) / 8.0, -6)) {
    how = " (exponent field 0 read as a normal: 2^-6 * (1 + m/8))";
  }
  return absl::StrFormat("; %s 0x%02X (= %d * 2^-9 = %s) acted as %s%s", which, byte, byte & 7,
                         Num(exact), Num(implied), how);
}

std::string NanNote(const MmaCase& mc) {
  if (mc.name == "nan/sfa_zero_codes") {
    return "SFA 0x7F at row 3 block 1 (lane 12 byte 1), that block's A codes zero";
  }
  if (mc.name == "nan/sfb_codes") return "SFB 0x7F at column 5 block 2 (lane 20 byte 2)";
  if (mc.name == "nan/all_codes_zero") {
    return "A = B = C = 0, SFA 0x7F at row 0 block 0 (lane 0 byte 0), SFB 0x7F at column 7 "
           "block 3 (lane 28 byte 3)";
  }
  if (mc.name == "nan/ignored_lanes") return "0x7F only in the ignored scale lanes";
  if (mc.name == "nan/c_nan") return "C NaN at D[m, 3m mod 8]";
  return "";
}

const char* E2m1Category(float v) {
  const float a = std::fabs(v);
  if (std::isnan(v)) return "NaN";
  if (a <= 0.25f) return "zero sign";
  if (a > 6.0f) return "saturation";
  for (float t : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f}) {
    if (a == t) return "tie";
  }
  return "rounding";
}

GroupResult& Group(std::vector<GroupResult>& groups, const std::string& name) {
  for (GroupResult& g : groups) {
    if (g.name == name) return g;
  }
  std::abort();
}

void AddFailure(GroupResult& g, const JudgeOptions& opt, std::string text) {
  ++g.failed;
  if (static_cast<int>(g.failures.size()) < opt.max_failures) g.failures.push_back(std::move(text));
}

}  // namespace

// ============================================================================================
// Public
// ============================================================================================

const char* AreaName(Area a) {
  switch (a) {
    case Area::kLayout:
      return "layout";
    case Area::kPrecision:
      return "precision";
    case Area::kConversion:
      return "conversion";
  }
  return "?";
}

const char* GroupName(MmaKind k) {
  switch (k) {
    case MmaKind::kCD:
      return "C/D";
    case MmaKind::kA:
      return "A";
    case MmaKind::kB:
      return "B";
    case MmaKind::kSfa:
      return "SFA";
    case MmaKind::kSfb:
      return "SFB";
    case MmaKind::kExact:
      return "exact";
    case MmaKind::kBound:
      return "bound";
    case MmaKind::kSubnormal:
      return "subnormal";
    case MmaKind::kNan:
      return "nan";
  }
  return "?";
}

Area AreaOf(MmaKind k) {
  switch (k) {
    case MmaKind::kCD:
    case MmaKind::kA:
    case MmaKind::kB:
    case MmaKind::kSfa:
    case MmaKind::kSfb:
      return Area::kLayout;
    default:
      return Area::kPrecision;
  }
}

DeviceResults RunModelDevice(const ProbeCases& cases) {
  DeviceResults r;
  r.device = "CPU model (no device)";
  r.device_code =
      "the contract's CPU model: emulator/mma_model.h (exact sum rounded once), "
      "emulator/formats.h F32ToE2M1";
  r.native = false;
  r.d.resize(cases.mma.size() * 128);
  for (size_t i = 0; i < cases.mma.size(); ++i) {
    const MmaCase& mc = cases.mma[i];
    MmaM16N8K64BlockScaled(mc.a, mc.b, mc.c, mc.sfa, mc.sfb,
                           reinterpret_cast<float(*)[4]>(r.d.data() + 128 * i));
  }
  r.e2m1.resize(cases.e2m1.even.size());
  for (size_t i = 0; i < r.e2m1.size(); ++i) {
    r.e2m1[i] =
        static_cast<uint8_t>(F32ToE2M1(cases.e2m1.even[i]) | (F32ToE2M1(cases.e2m1.odd[i]) << 4));
  }
  return r;
}

Report Judge(const ProbeCases& cases, const DeviceResults& results, const JudgeOptions& opt) {
  Report rep;
  rep.device_info.device = results.device;
  rep.device_info.device_code = results.device_code;
  rep.device_info.native = results.native;
  auto add_group = [&rep](Area area, const char* name, const char* unit, const char* what) {
    GroupResult g;
    g.area = area;
    g.name = name;
    g.unit = unit;
    g.what = what;
    rep.groups.push_back(std::move(g));
  };
  add_group(
      Area::kLayout, "C/D", "cases",
      "C passes through to D (A = B = 0), 128 distinct values: C and D fragments as section 7");
  add_group(Area::kLayout, "A", "cases",
            "one-hot A code per (row, k), 16 x 64; B spells k in binary across its columns, so D "
            "names the (row, k) the hardware used");
  add_group(Area::kLayout, "B", "cases",
            "one-hot B code per (k, column), 64 x 8; A spells k in binary down its rows");
  add_group(Area::kLayout, "SFA", "cases",
            "one 2.0 scale byte per (row, k-block), the rest 1.0; B's blocks weigh 1, 2, 4, 8; "
            "ignored lanes (l % 4 = 2, 3) hold distinct poison scales");
  add_group(Area::kLayout, "SFB", "cases",
            "one 2.0 scale byte per (column, k-block), the rest 1.0; A's blocks weigh 1, 2, 4, 8; "
            "ignored lanes (l % 4 != 0) hold distinct poison scales");
  add_group(Area::kPrecision, "exact", "elements",
            "exact data whose sums need all 24 bits (section 8 exact case): bit for bit");
  add_group(Area::kPrecision, "bound", "elements",
            "partial sums beyond 24 bits (guard ladder at C = +-2^24, cancellation of "
            "+-6*448*448, wide random scales, large C, k-permutations): |D - (C + sum p)| <= "
            "64 * 2^-24 * (|C| + sum |p|); elements whose data is exact: bit for bit");
  add_group(Area::kPrecision, "subnormal", "elements",
            "UE4M3 scales 0x01-0x07 (m * 2^-9) and 0x00 on SFA, SFB and both: bit for bit");
  add_group(Area::kPrecision, "nan", "elements",
            "scale 0x7F makes its row / column NaN (also over zero codes); a NaN C stays NaN; 0x7F "
            "in ignored lanes has no effect");
  add_group(Area::kConversion, "e2m1", "values",
            "F32x2ToE2m1Byte (the kernels' conversion) against F32ToE2M1: NaN -> 0x7, -0 and tiny "
            "negatives -> 0x8, ties to even, saturation to +-6, both nibbles");

  const size_t ncases = cases.mma.size();
  if (results.d.size() != ncases * 128) {
    GroupResult& g = Group(rep.groups, "C/D");
    AddFailure(g, opt,
               absl::StrFormat("the device returned %d D values, expected %d", results.d.size(),
                               ncases * 128));
  }

  // Measurement tallies.
  int64_t discriminating = 0, none = 0;
  std::array<int64_t, kModels> hits{};
  double worst_ratio = 0;
  std::string worst_where;
  std::map<std::string, std::array<int, 3>> cancel;  // kept / lost / other
  std::map<std::string, std::vector<float>> order;   // case -> D
  std::string ladder;
  struct CaseTally {
    std::string name;
    int64_t disc = 0, none = 0;
    std::array<int64_t, kModels> hits{};
  };
  std::vector<CaseTally> by_case;

  for (size_t ci = 0; ci < ncases && results.d.size() == ncases * 128; ++ci) {
    const MmaCase& mc = cases.mma[ci];
    float D[16][8], E[16][8], e_frag[32][4];
    UnpackD(results.d.data() + 128 * ci, D);
    MmaM16N8K64BlockScaled(mc.a, mc.b, mc.c, mc.sfa, mc.sfb, e_frag);
    UnpackD(&e_frag[0][0], E);
    GroupResult& g = Group(rep.groups, GroupName(mc.kind));
    if (AreaOf(mc.kind) == Area::kLayout) {
      ++g.checked;
      bool ok = true;
      for (int m = 0; m < 16; ++m) {
        for (int n = 0; n < 8; ++n) ok = ok && Same(D[m][n], E[m][n]);
      }
      if (ok) continue;
      std::string why;
      switch (mc.kind) {
        case MmaKind::kCD:
          why = DiagnoseCD(mc, D, E);
          break;
        case MmaKind::kA:
          why = DiagnoseA(mc, D, E);
          break;
        case MmaKind::kB:
          why = DiagnoseB(mc, D, E);
          break;
        case MmaKind::kSfa:
          why = DiagnoseScale(mc, D, E, true);
          break;
        case MmaKind::kSfb:
          why = DiagnoseScale(mc, D, E, false);
          break;
        default:
          break;
      }
      AddFailure(g, opt, why);
      continue;
    }
    // Precision: element by element.
    const Operands o = Unpack(mc);
    const bool measure = mc.kind == MmaKind::kBound || mc.kind == MmaKind::kExact;
    if (measure) by_case.push_back(CaseTally{mc.name});
    if (mc.name.rfind("bound/order_", 0) == 0) {
      order[mc.name].assign(&D[0][0], &D[0][0] + 128);
    }
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 8; ++n) {
        const Terms t = MakeTerms(o, m, n);
        const float got = D[m][n];
        const ElemVerdict v = JudgeValue(t, got);
        ++g.checked;
        std::array<float, kModels> models{};
        if (measure && !t.nan) {
          models = Models(t);
          bool all_same = true;
          for (int i = 1; i < kModels; ++i) all_same = all_same && Same(models[i], models[0]);
          if (!all_same) {
            ++discriminating;
            ++by_case.back().disc;
            bool any = false;
            for (int i = 0; i < kModels; ++i) {
              if (Same(models[i], got)) {
                ++hits[i];
                ++by_case.back().hits[i];
                any = true;
              }
            }
            if (!any) {
              ++none;
              ++by_case.back().none;
            }
          }
          if (!v.exact_case && std::isfinite(got)) {
            const double err = (Exact::FromFloat(got) - v.s).Abs().ToDouble();
            const double ratio = err / v.bound.ToDouble();
            if (ratio > worst_ratio) {
              worst_ratio = ratio;
              worst_where = absl::StrFormat("%s %s", mc.name, Elem(m, n));
            }
          }
          if (mc.name.rfind("bound/cancel_", 0) == 0) {
            auto& tally = cancel[mc.name];
            if (Same(got, models[0])) {
              ++tally[0];
            } else if (got == 0.0f) {
              ++tally[1];
            } else {
              ++tally[2];
            }
          }
          if (mc.name == "bound/guard_ladder" && n <= 1) {
            // Columns 0 and 1: C = +2^24 and -2^24; row m: 64 terms t.
            static const char* const kT[16] = {"1",     "2^-1",  "2^-2",  "2^-3", "2^-4", "2^-5",
                                               "2^-6",  "2^-7",  "1.5",   "1.75", "1.25", "1.875",
                                               "1.125", "1.625", "1.375", "3"};
            const double inc = static_cast<double>(got) - t.cf;
            if (n == 0) {
              absl::StrAppend(&ladder, ladder.empty() ? "" : ", ", "t=", kT[m], ": ", Num(inc));
            } else {
              absl::StrAppend(&ladder, "/", Num(inc), " (", Num(v.s.ToDouble() - t.cf), ")");
            }
          }
        }
        if (v.ok) continue;
        std::string text;
        if (t.nan) {
          text = absl::StrFormat("%s %s = %s, expected NaN (%s)", mc.name, Elem(m, n), Num(got),
                                 NanNote(mc));
        } else if (mc.kind == MmaKind::kNan && std::isnan(got)) {
          text = absl::StrFormat("%s %s = NaN, expected %s (%s)", mc.name, Elem(m, n),
                                 Num(v.s.ToFloatRN()), NanNote(mc));
        } else if (v.exact_case) {
          text = absl::StrFormat(
              "%s %s: got %s, exact %s (exact data: every partial sum fits 24 "
              "bits, bit for bit required)",
              mc.name, Elem(m, n), Num(got), Num(v.s.ToDouble()));
        } else {
          const double err =
              std::isfinite(got) ? (Exact::FromFloat(got) - v.s).Abs().ToDouble() : INFINITY;
          text =
              absl::StrFormat("%s %s: got %s, exact %s, |err| %s > bound %s", mc.name, Elem(m, n),
                              Num(got), Num(v.s.ToDouble()), Num(err), Num(v.bound.ToDouble()));
        }
        if (measure && !t.nan) absl::StrAppend(&text, " [", MatchText(models, got), "]");
        if (mc.kind == MmaKind::kSubnormal) absl::StrAppend(&text, SubnormalHint(mc, o, D, m, n));
        if (mc.kind == MmaKind::kNan && !t.nan && !std::isnan(got) && NanNote(mc).size()) {
          absl::StrAppend(&text, " (", NanNote(mc), ")");
        }
        AddFailure(g, opt, text);
      }
    }
  }

  // e2m1.
  {
    GroupResult& g = Group(rep.groups, "e2m1");
    const size_t n = cases.e2m1.even.size();
    if (results.e2m1.size() != n) {
      AddFailure(g, opt,
                 absl::StrFormat("the device returned %d conversions, expected %d",
                                 results.e2m1.size(), n));
    } else {
      for (size_t i = 0; i < n; ++i) {
        for (int half = 0; half < 2; ++half) {
          const float v = half ? cases.e2m1.odd[i] : cases.e2m1.even[i];
          const uint8_t want = F32ToE2M1(v);
          const uint8_t got = (results.e2m1[i] >> (4 * half)) & 0xF;
          ++g.checked;
          if (got == want) continue;
          AddFailure(g, opt,
                     absl::StrFormat("e2m1: %s nibble (%s element) %s (0x%08X): got 0x%X, "
                                     "contract 0x%X [%s]",
                                     half ? "high" : "low", half ? "odd" : "even", Num(v),
                                     F32Bits(v), got, want, E2m1Category(v)));
        }
      }
    }
  }

  // Measurements.
  if (discriminating > 0) {
    std::vector<std::string> parts;
    for (int i = 0; i < kModels; ++i) {
      parts.push_back(absl::StrFormat("%s %d", kModelShort[i], hits[i]));
    }
    rep.measurements.push_back(absl::StrFormat(
        "accumulation: of %d elements (exact and bound groups) where the candidate models "
        "differ, D equals: %s; none of them: %d (RN = round to nearest even, RZ = truncation; "
        "an element can match several). By case:",
        discriminating, absl::StrJoin(parts, ", "), none));
  }
  for (const CaseTally& ct : by_case) {
    if (ct.disc == 0) continue;
    // RN-consistent: one round-to-nearest model explains every element; truncation-consistent:
    // one truncating model does; else neither.
    std::string label = "neither RN- nor truncation-consistent";
    for (int i : {0, 2, 4, 1, 3, 5}) {
      if (ct.hits[i] == ct.disc) {
        label = absl::StrCat(i % 2 == 0 ? "RN-consistent (" : "truncation-consistent (",
                             kModelShort[i], ")");
        break;
      }
    }
    std::vector<std::string> parts;
    for (int i = 0; i < kModels; ++i) {
      parts.push_back(absl::StrFormat("%s %d", kModelShort[i], ct.hits[i]));
    }
    rep.measurements.push_back(absl::StrFormat("  %s: %s; of %d elements: %s, none %d", ct.name,
                                               label, ct.disc, absl::StrJoin(parts, ", "),
                                               ct.none));
  }
  if (!ladder.empty()) {
    rep.measurements.push_back(
        absl::StrCat("guard ladder, D - C for C = +2^24 / C = -2^24 (exact) and 64 equal terms t "
                     "(ulp(2^24) = 2: terms of 1 and below need guard bits or exact grouping): ",
                     ladder));
  }
  for (const auto& [name, tally] : cancel) {
    rep.measurements.push_back(absl::StrFormat(
        "%s: D = the exact small-term sum (rounded once) in %d/128, 0 (small terms lost) in "
        "%d/128, other in %d/128",
        name, tally[0], tally[1], tally[2]));
  }
  if (order.count("bound/order_base")) {
    const std::vector<float>& base = order["bound/order_base"];
    std::vector<std::string> parts;
    for (const auto& [name, d] : order) {
      if (name == "bound/order_base") continue;
      int diff = 0;
      for (int i = 0; i < 128; ++i) diff += F32Bits(d[i]) != F32Bits(base[i]);
      parts.push_back(absl::StrFormat("%s %d/128", name.substr(12), diff));
    }
    rep.measurements.push_back(
        absl::StrCat("order: elements whose D changes when the same 64 products are k-permuted: ",
                     absl::StrJoin(parts, ", ")));
  }
  if (worst_ratio > 0) {
    rep.measurements.push_back(
        absl::StrFormat("largest |D - exact| / bound over the non-exact elements: %.4f (%s)",
                        worst_ratio, worst_where));
  }
  if (!results.raw_cvt.empty() && results.raw_cvt.size() == cases.e2m1.even.size()) {
    std::map<std::string, int> diffs;
    std::map<std::string, std::string> example;
    int64_t total = 0;
    for (size_t i = 0; i < results.raw_cvt.size(); ++i) {
      for (int half = 0; half < 2; ++half) {
        const float v = half ? cases.e2m1.odd[i] : cases.e2m1.even[i];
        const uint8_t want = F32ToE2M1(v);
        const uint8_t got = (results.raw_cvt[i] >> (4 * half)) & 0xF;
        ++total;
        if (got == want) continue;
        const std::string cat = E2m1Category(v);
        if (diffs[cat]++ == 0) {
          example[cat] =
              absl::StrFormat("%s (0x%08X) -> 0x%X, contract 0x%X", Num(v), F32Bits(v), got, want);
        }
      }
    }
    if (diffs.empty()) {
      rep.measurements.push_back(absl::StrFormat(
          "raw cvt.rn.satfinite.e2m1x2.f32 equals the contract on all %d values (NaN -> 0x7, "
          "the sign of a zero result kept)",
          total));
    } else {
      std::vector<std::string> parts;
      for (const auto& [cat, count] : diffs) {
        parts.push_back(absl::StrFormat("%s %d (e.g. %s)", cat, count, example[cat]));
      }
      rep.measurements.push_back(absl::StrFormat(
          "raw cvt.rn.satfinite.e2m1x2.f32 differs from the contract on: %s; "
          "F32x2ToE2m1Byte forces NaN -> 0x7 and the zero sign after it (judged above)",
          absl::StrJoin(parts, "; ")));
    }
  } else {
    rep.measurements.push_back(
        "raw cvt.rn.satfinite.e2m1x2.f32: not measured (no SM12x instruction on this device)");
  }

  // Verdict.
  std::vector<std::string> bad[3];
  for (const GroupResult& g : rep.groups) {
    if (!g.ok()) bad[static_cast<int>(g.area)].push_back(g.name);
  }
  rep.layout_ok = bad[0].empty();
  rep.precision_ok = bad[1].empty();
  rep.conversion_ok = bad[2].empty();
  std::vector<std::string> v;
  if (!rep.layout_ok) {
    v.push_back(absl::StrCat("LAYOUT BUG in ", absl::StrJoin(bad[0], ", "),
                             ": the instruction does not read/write these operands where "
                             "docs/contract.md section 7 says (see the failures above); fix "
                             "kernels/fragment_math.h / the contract's table before reading the "
                             "precision results, which assume the layout"));
    const bool a_bad = !Group(rep.groups, "A").ok(), b_bad = !Group(rep.groups, "B").ok();
    if (a_bad && b_bad) {
      v.push_back(
          "A and B are located through each other (an A case finds its k through B's "
          "pattern and vice versa): a row / column move names the operand at fault, but a "
          "k mismatch seen in both groups only says that A's and B's k orders disagree");
    }
  }
  if (!rep.precision_ok) {
    v.push_back(absl::StrCat(
        rep.layout_ok ? "ACCUMULATION DEVIATION" : "also precision failures", " in ",
        absl::StrJoin(bad[1], ", "),
        rep.layout_ok ? ": the layout is right, but the device's arithmetic is not the "
                        "contract's (section 8 bound / exact case, subnormal or NaN scales)"
                      : " (possibly consequences of the layout bug)"));
  }
  if (!rep.conversion_ok) {
    v.push_back(
        absl::StrCat("E2M1 CONVERSION DIFFERENCE in F32x2ToE2m1Byte (section 2): act_q "
                     "will differ from the emulator"));
  }
  if (v.empty()) {
    v.push_back(
        "layout as section 7 (A, B, SFA, SFB, C/D), accumulation within section 8 (exact sums "
        "bit for bit, the rest within the bound), subnormal and NaN scales as sections 2 and 6, "
        "e2m1 as section 2: a sweep failure on this device is neither the instruction's layout, "
        "its accumulation nor the e2m1 conversion");
  }
  rep.verdict = absl::StrJoin(v, ". ");
  if (!results.native) {
    absl::StrAppend(&rep.verdict,
                    ". NOTE: the block-scaled MMA here is not the SM120 hardware instruction (",
                    results.device_code, ")");
  }
  return rep;
}

std::string FormatReport(const Report& r) {
  std::string s;
  absl::StrAppend(&s,
                  "minimax_h3_nvfp4_out_proj probe: the block-scaled mma.sync m16n8k64 "
                  "kind::mxf4nvf4 scale_vec::4X ue4m3 and the e2m1 conversion against "
                  "docs/contract.md sections 2, 6, 7, 8\n");
  absl::StrAppend(&s, "device: ", r.device_info.device, "\n");
  absl::StrAppend(&s, "device code: ", r.device_info.device_code, "\n");
  const char* headers[3] = {"layout (section 7)", "precision (sections 2, 6, 8)",
                            "conversion (section 2)"};
  for (int area = 0; area < 3; ++area) {
    absl::StrAppend(&s, headers[area], "\n");
    for (const GroupResult& g : r.groups) {
      if (static_cast<int>(g.area) != area) continue;
      absl::StrAppend(
          &s, absl::StrFormat("  %s  %-10s %6d/%-6d %-11s %s\n", g.ok() ? "PASS" : "FAIL", g.name,
                              g.checked - g.failed, g.checked, g.unit + " ok", g.what));
      for (const std::string& f : g.failures) absl::StrAppend(&s, "        ", f, "\n");
      if (g.failed > static_cast<int64_t>(g.failures.size())) {
        absl::StrAppend(&s, absl::StrFormat("        ... and %d more\n",
                                            g.failed - static_cast<int64_t>(g.failures.size())));
      }
    }
  }
  absl::StrAppend(&s, "measured (observations, not judged):\n");
  for (const std::string& m : r.measurements) absl::StrAppend(&s, "  ", m, "\n");
  absl::StrAppend(&s, "verdict: ", r.verdict, "\n");
  absl::StrAppend(&s, r.passed() ? "PROBE PASSED\n" : "PROBE FAILED\n");
  return s;
}

std::string ReportJson(const Report& r) {
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const GroupResult& g : r.groups) {
    groups.push_back({{"area", AreaName(g.area)},
                      {"name", g.name},
                      {"what", g.what},
                      {"unit", g.unit},
                      {"checked", g.checked},
                      {"failed", g.failed},
                      {"pass", g.ok()},
                      {"failures", g.failures}});
  }
  const nlohmann::ordered_json j = {
      {"device", r.device_info.device},
      {"device_code", r.device_info.device_code},
      {"native", r.device_info.native},
      {"layout_ok", r.layout_ok},
      {"precision_ok", r.precision_ok},
      {"conversion_ok", r.conversion_ok},
      {"passed", r.passed()},
      {"verdict", r.verdict},
      {"groups", groups},
      {"measurements", r.measurements},
  };
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace h3::probe
