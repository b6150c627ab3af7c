#ifndef EMULATOR_GEMM_H_
#define EMULATOR_GEMM_H_

// The block-scaled GEMM of docs/contract.md section 6, two ways:
//  - fast: Eigen f32 GEMM on dequantized operands. Every dequantized value
//    e2m1 * ue4m3 is exact in f32 (2 + 4 significant bits) and so is every
//    product of two of them (12 bits), so only the summation order differs
//    from the tensor cores, which the section-6 bound covers.
//  - exact: each dequantized value is an integer multiple of 2^-10 (e2m1 is a
//    multiple of 2^-1, ue4m3 of 2^-9) with |int| <= 12 * 229376 < 2^22, so each
//    product is an int64 multiple of 2^-20 (< 2^44) and a dot product is summed
//    exactly in integers (int64 chunks of 2^18 products, folded into __int128).

#include <cstdint>
#include <vector>

#include "Eigen/Core"
#include "absl/types/span.h"

namespace h3 {

using MatrixF32 = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

enum class ScaleLayout { kLinear, kSwizzled128x4 };

// An NVFP4 matrix of `rows` x `k` values: codes [rows, k/2] (low nibble =
// even k), scales [rows, k/16] linear or in the 128x4 swizzled layout.
// Scale bytes are decoded as E4M3 (0x7F/0xFF = NaN); the quantizers only
// produce UE4M3 bytes (sign 0).
struct BlockScaledMatrix {
  int64_t rows = 0;
  int64_t k = 0;
  absl::Span<const uint8_t> codes;
  absl::Span<const uint8_t> scales;
  ScaleLayout layout = ScaleLayout::kLinear;

  uint8_t Scale(int64_t row, int64_t block) const;
  uint8_t Code(int64_t row, int64_t kk) const {
    const uint8_t byte = codes[row * (k / 2) + kk / 2];
    return (kk & 1) ? (byte >> 4) : (byte & 0xF);
  }
};

// Dequantized values (exact in f32; NaN where the block scale is NaN).
MatrixF32 Dequantize(const BlockScaledMatrix& x);
// Same into caller memory: out[r * k + i], rows * k floats.
void DequantizeInto(const BlockScaledMatrix& x, float* out);

// acc[m, n] = sum_k a[m, k] * w[n, k] in f32 (Eigen; multithreaded when built
// with OpenMP). a_deq: [M, K], w_deq: [N, K].
MatrixF32 GemmFastF32(const MatrixF32& a_deq, const MatrixF32& w_deq);
MatrixF32 GemmFastF32(const BlockScaledMatrix& a, const BlockScaledMatrix& w);
// Same on caller memory (row-major a_deq [m, k], w_deq [n, k], acc [m, n]): lets a caller
// reuse its buffers (first touch of fresh pages is expensive on the dev machine).
void GemmFastF32Into(const float* a_deq, int64_t m, const float* w_deq, int64_t n, int64_t k,
                     float* acc);

// Operand converted for exact integer dot products: v[r*k + i] = value * 2^10.
struct IntOperand {
  int64_t rows = 0;
  int64_t k = 0;
  std::vector<int32_t> v;
  std::vector<uint8_t> row_nan;  // 1 when any block scale of the row is NaN
};
IntOperand ToIntOperand(const BlockScaledMatrix& x);

// One exact accumulator acc[m, n].
struct ExactAcc {
  bool nan = false;
  __int128 sum = 0;      // acc = sum * 2^-20
  __int128 abs_sum = 0;  // sum |products|, units of 2^-20
  int min_tz = 128;      // min trailing zeros of the nonzero products (units
                         // of 2^-20); 128 when every product is zero
};
ExactAcc ExactDot(const IntOperand& a, int64_t a_row, const IntOperand& w, int64_t w_row);

// Correctly rounded f32 of the exact accumulator (NaN when nan; +0 for an
// exact zero, as an f32 sum started from +0 gives).
float ExactToF32(const ExactAcc& acc);

// The f32 values the hardware's accumulation may return, per docs/contract.md section
// 6: every f32 in [acc - B, acc + B] with B = (K-1) 2^-24 sum|products|,
// except B = 0 when all products are multiples of 2^e and sum|products| <
// 2^(e+24) (then every partial sum, in any order, is exactly representable).
// An exact zero gives [-0, +0] (the sign of a zero sum depends on the
// accumulator's start value, which the contract does not fix).
struct AccInterval {
  float lo = 0.0f, hi = 0.0f;  // lo = ceil_f32(acc - B), hi = floor_f32(acc + B)
  bool exact = false;          // B == 0
  bool nan = false;
};
AccInterval AccBound(const ExactAcc& acc, int64_t k);

// Exact GEMM, each element rounded once to f32.
MatrixF32 GemmExactF32(const BlockScaledMatrix& a, const BlockScaledMatrix& w);
MatrixF32 GemmExactF32(const IntOperand& a, const IntOperand& w);

// Directed conversions of v * 2^exp2 to f32 (normal range assumed).
enum class RoundMode { kNearestEven, kTowardPositive, kTowardNegative };
float ScaledInt128ToF32(__int128 v, int exp2, RoundMode mode);

}  // namespace h3

#endif  // EMULATOR_GEMM_H_
