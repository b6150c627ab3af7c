// The layout cases (probe.h MmaKind kCD, kA, kB, kSfa, kSfb): one one-hot element per case, the
// other operand encoding where the element went, so a wrong fragment position names itself.

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "harness/probe/cases_internal.h"
#include "harness/probe/probe.h"

namespace h3::probe::internal {
namespace {

// A-case B: columns 0..5 the bits of k (1.0 or 0), column 6 = 1.0, column 7 = 2.0.
uint8_t KEncodingB(int k, int n) {
  if (n < 6) return ((k >> n) & 1) ? kC1 : 0;
  return n == 6 ? kC1 : kC2;
}
// B-case A: rows 0..5 the bits of k, 6 = 1.0, 7 = 2.0, 8..13 the complemented bits, 14 = 0.5,
// 15 = 0.
uint8_t KEncodingA(int m, int k) {
  if (m < 6) return ((k >> m) & 1) ? kC1 : 0;
  if (m == 6) return kC1;
  if (m == 7) return kC2;
  if (m < 14) return ((k >> (m - 8)) & 1) ? 0 : kC1;
  return m == 14 ? kCHalf : 0;
}
// Block weights for the scale cases: block b holds 2^b ones (block sums 1, 2, 4, 8).
uint8_t BlockWeightCode(int k) { return (k % 16) < (1 << (k / 16)) ? kC1 : 0; }

}  // namespace

void AddLayoutCases(std::vector<MmaCase>& out) {
  // C/D: distinct values pass through.
  for (int variant = 0; variant < 2; ++variant) {
    Operands o = Blank();
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 8; ++n) {
        const float idx = static_cast<float>(8 * m + n + 1);
        o.C[m][n] = variant == 0 ? idx : -idx * 0.125f;
      }
    }
    out.push_back(Pack(MmaKind::kCD, absl::StrCat("C/D/distinct", variant), variant, 0, o));
  }
  // A: one-hot code per (row, k).
  for (int m0 = 0; m0 < 16; ++m0) {
    for (int k0 = 0; k0 < 64; ++k0) {
      Operands o = Blank();
      o.A[m0][k0] = kC1;
      for (int k = 0; k < 64; ++k) {
        for (int n = 0; n < 8; ++n) o.B[k][n] = KEncodingB(k, n);
      }
      out.push_back(Pack(MmaKind::kA, absl::StrFormat("A/row%d_k%d", m0, k0), m0, k0, o));
    }
  }
  // B: one-hot code per (k, column).
  for (int k0 = 0; k0 < 64; ++k0) {
    for (int n0 = 0; n0 < 8; ++n0) {
      Operands o = Blank();
      o.B[k0][n0] = kC1;
      for (int m = 0; m < 16; ++m) {
        for (int k = 0; k < 64; ++k) o.A[m][k] = KEncodingA(m, k);
      }
      out.push_back(Pack(MmaKind::kB, absl::StrFormat("B/k%d_col%d", k0, n0), k0, n0, o));
    }
  }
  // SFA: one-hot 2.0 per (row, block), ignored lanes poisoned.
  for (int r0 = 0; r0 < 16; ++r0) {
    for (int b0 = 0; b0 < 4; ++b0) {
      Operands o = Blank();
      for (int m = 0; m < 16; ++m) std::fill(std::begin(o.A[m]), std::end(o.A[m]), kC1);
      for (int k = 0; k < 64; ++k) {
        for (int n = 0; n < 8; ++n) o.B[k][n] = BlockWeightCode(k);
      }
      o.SA[r0][b0] = kTwo;
      out.push_back(Pack(MmaKind::kSfa, absl::StrFormat("SFA/row%d_block%d", r0, b0), r0, b0, o,
                         Unused::kPoison, Unused::kReplicate));
    }
  }
  // SFB: one-hot 2.0 per (column, block), ignored lanes poisoned.
  for (int n0 = 0; n0 < 8; ++n0) {
    for (int b0 = 0; b0 < 4; ++b0) {
      Operands o = Blank();
      for (int m = 0; m < 16; ++m) {
        for (int k = 0; k < 64; ++k) o.A[m][k] = BlockWeightCode(k);
      }
      for (int k = 0; k < 64; ++k) std::fill(std::begin(o.B[k]), std::end(o.B[k]), kC1);
      o.SB[n0][b0] = kTwo;
      out.push_back(Pack(MmaKind::kSfb, absl::StrFormat("SFB/col%d_block%d", n0, b0), n0, b0, o,
                         Unused::kReplicate, Unused::kPoison));
    }
  }
}

}  // namespace h3::probe::internal
