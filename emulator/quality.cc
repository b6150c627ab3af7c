#include "emulator/quality.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_format.h"
#include "emulator/exact_sum.h"
#include "emulator/formats.h"
#include "emulator/gemm.h"

// Compiled with -ffp-contract=off: each f32 operation below is one rounding (contract
// sections 12, 13).

namespace h3 {
namespace {

bool Bf16Finite(uint16_t b) { return (b & 0x7F80) != 0x7F80; }

absl::Status FirstNonFiniteBf16(const char* name, absl::Span<const uint16_t> v, int64_t cols) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (!Bf16Finite(v[i])) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: expected finite values, got %g at [%d, %d]", name,
                          static_cast<double>(Bf16ToF32(v[i])), static_cast<int64_t>(i) / cols,
                          static_cast<int64_t>(i) % cols));
    }
  }
  return absl::OkStatus();
}

bool RowFinite(const uint16_t* row, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (!Bf16Finite(row[i])) return false;
  }
  return true;
}

void ToF32(const uint16_t* x, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = Bf16ToF32(x[i]);
}

}  // namespace

absl::Status ValidateQualityInputs(const OpShape& s, const QualityInputs& q, int64_t* rank) {
  *rank = 0;
  if (!q.act_smooth.empty()) {
    if (static_cast<int64_t>(q.act_smooth.size()) != s.k) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "act_smooth: expected %d elements (k), got %d", s.k, q.act_smooth.size()));
    }
    for (size_t i = 0; i < q.act_smooth.size(); ++i) {
      if (!std::isfinite(q.act_smooth[i])) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "act_smooth: expected finite factors, got %g at [%d]", q.act_smooth[i], i));
      }
    }
  }
  if (q.lora_down.empty() != q.lora_up.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: expected given together with %s (the low-rank branch needs both), got %s alone",
        q.lora_down.empty() ? "lora_down" : "lora_up",
        q.lora_down.empty() ? "lora_up" : "lora_down",
        q.lora_down.empty() ? "lora_up" : "lora_down"));
  }
  if (q.lora_down.empty()) return absl::OkStatus();
  const int64_t down = static_cast<int64_t>(q.lora_down.size());
  const int64_t r = s.k > 0 ? down / s.k : 0;
  if (s.k <= 0 || down % s.k != 0 || r < kLoraRankMin || r > kLoraRankMax ||
      r % kLoraRankStep != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "lora_down: expected r*k elements with r a multiple of 16 in 16..64 (k = %d), got %d", s.k,
        down));
  }
  if (static_cast<int64_t>(q.lora_up.size()) != s.n * r) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "lora_up: expected %d elements (n*r, n = %d, r = %d from lora_down), got %d", s.n * r, s.n,
        r, q.lora_up.size()));
  }
  if (absl::Status st = FirstNonFiniteBf16("lora_down", q.lora_down, s.k); !st.ok()) return st;
  if (absl::Status st = FirstNonFiniteBf16("lora_up", q.lora_up, r); !st.ok()) return st;
  *rank = r;
  return absl::OkStatus();
}

uint16_t SmoothElement(uint16_t x, float s) {
  volatile float p = Bf16ToF32(x) * s;  // binary32 rounding
  return F32ToBf16(p);                  // bf16 rounding
}

void SmoothRows(const uint16_t* x, int64_t rows, int64_t k, absl::Span<const float> smooth,
                uint16_t* out) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < k; ++i) out[r * k + i] = SmoothElement(x[r * k + i], smooth[i]);
  }
}

void LowRankDown(const uint16_t* xs, int64_t rows, int64_t k, absl::Span<const uint16_t> down,
                 int64_t rank, GemmPath path, uint16_t* l) {
  auto exact_row = [&](int64_t r) {
    for (int64_t j = 0; j < rank; ++j) {
      ExactSum sum;
      for (int64_t i = 0; i < k; ++i) {
        sum.AddProduct(Bf16ToF32(xs[r * k + i]), Bf16ToF32(down[j * k + i]));
      }
      l[r * rank + j] = F32ToBf16(sum.RoundToF32());
    }
  };
  if (path == GemmPath::kExact) {
#pragma omp parallel for schedule(dynamic)
    for (int64_t r = 0; r < rows; ++r) exact_row(r);
    return;
  }
  std::vector<float> a(rows * k), w(rank * k), lam(rows * rank);
  ToF32(xs, rows * k, a.data());
  ToF32(down.data(), rank * k, w.data());
  GemmFastF32Into(a.data(), rows, w.data(), rank, k, lam.data());
  for (int64_t r = 0; r < rows; ++r) {
    if (!RowFinite(xs + r * k, k)) {
      exact_row(r);  // IEEE's NaN / Inf rule, independent of Eigen's kernel
      continue;
    }
    for (int64_t j = 0; j < rank; ++j) l[r * rank + j] = F32ToBf16(lam[r * rank + j]);
  }
}

void LowRankUpInto(const uint16_t* l, int64_t rows, int64_t rank, absl::Span<const uint16_t> up,
                   int64_t n, GemmPath path, float* o) {
  auto exact_row = [&](int64_t r) {
    for (int64_t c = 0; c < n; ++c) {
      ExactSum sum;
      sum.Add(o[r * n + c]);
      for (int64_t j = 0; j < rank; ++j) {
        sum.AddProduct(Bf16ToF32(l[r * rank + j]), Bf16ToF32(up[c * rank + j]));
      }
      o[r * n + c] = sum.RoundToF32();
    }
  };
  if (path == GemmPath::kExact) {
#pragma omp parallel for schedule(dynamic)
    for (int64_t r = 0; r < rows; ++r) exact_row(r);
    return;
  }
  std::vector<float> a(rows * rank), w(n * rank), u(rows * n);
  ToF32(l, rows * rank, a.data());
  ToF32(up.data(), n * rank, w.data());
  GemmFastF32Into(a.data(), rows, w.data(), n, rank, u.data());
  for (int64_t r = 0; r < rows; ++r) {
    if (!RowFinite(l + r * rank, rank)) {
      exact_row(r);
      continue;
    }
    for (int64_t c = 0; c < n; ++c) {
      volatile float v = o[r * n + c] + u[r * n + c];  // one rounding; o may be NaN / Inf
      o[r * n + c] = v;
    }
  }
}

}  // namespace h3
