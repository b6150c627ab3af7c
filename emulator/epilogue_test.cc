#include "emulator/epilogue.h"

#include <climits>
#include <cmath>
#include <limits>
#include <vector>

#include "emulator/formats.h"
#include "emulator/test_util.h"
#include "gtest/gtest.h"

namespace h3 {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(Epilogue, Alpha) {
  EXPECT_EQ(EpilogueAlpha(1.0f, 1.0f), 1.0f);
  EXPECT_EQ(EpilogueAlpha(448.0f, 448.0f), static_cast<float>(1.0 / 200704.0));
  EXPECT_EQ(EpilogueAlpha(3.0f, 1.0f), static_cast<float>(1.0 / 3.0));
  // act_gs * w_gs rounds first: RN(RN(1.1 * 1.3)) then 1 / that.
  const float p = 1.1f * 1.3f;
  EXPECT_EQ(EpilogueAlpha(1.1f, 1.3f), 1.0f / p);
}

struct ElementCase {
  const char* name;
  float acc, alpha;
  uint16_t gate, residual, want;
};

// Worked by hand from docs/contract.md section 6.
const ElementCase kElementCases[] = {
    {"one_plus_one", 1.0f, 1.0f, 0x3F80, 0x3F80, 0x4000},           // 1 + 1*1 = 2
    {"negative_gate_cancels", 1.0f, 1.0f, 0xBF80, 0x3F80, 0x0000},  // 1 + (-1) = +0
    {"alpha_scales", 6.0f, 0.5f, 0x4000, 0x0000, 0x40C0},           // 0 + 2*3 = 6
    // t = bf16(1 + 2^-9) = 1 (below the half ulp 2^-8); 256 + 1 = 257 ties to 256.
    {"t_rounded_then_sum_ties_even", 1.0f + 0x1p-9f, 1.0f, 0x3F80, 0x4380, 0x4380},
    // o is NOT rounded to bf16 before the gate multiply: o = 1 + 2^-8 - 2^-20 (f32; as bf16
    // it would be 1), gate 1 + 2^-7: go = 1 + 2^-7 + 2^-8 + 2^-15 - ... is above the tie ->
    // t = 1 + 2^-6 (0x3F82); with o rounded first t would be 0x3F81. Residual -0: out = t.
    {"o_kept_in_f32", 1.0f + 0x1p-8f - 0x1p-20f, 1.0f, 0x3F81, 0x8000, 0x3F82},
    {"residual_neg_zero_plus_pos_zero", 0.0f, 1.0f, 0x3F80, 0x8000, 0x0000},
    {"residual_neg_zero_plus_neg_zero", -0.0f, 1.0f, 0x3F80, 0x8000, 0x8000},
    {"gate_zero_negative_o", -5.0f, 1.0f, 0x0000, 0x8000, 0x8000},  // 0 * -5 = -0
    {"nan_acc", kNaN, 1.0f, 0x3F80, 0x3F80, 0x7FFF},
    {"nan_gate", 1.0f, 1.0f, 0x7FC1, 0x3F80, 0x7FFF},
    {"nan_residual", 1.0f, 1.0f, 0x3F80, 0xFFC1, 0x7FFF},
    {"inf_gate_times_zero", 0.0f, 1.0f, 0x7F80, 0x3F80, 0x7FFF},  // Inf * 0 = NaN
    {"overflow_to_inf", 1e38f, 100.0f, 0x3F80, 0x3F80, 0x7F80},
    {"inf_minus_inf", 1e38f, 100.0f, 0xBF80, 0x7F80, 0x7FFF},  // +Inf + -Inf
    {"subnormal_t", 0x1p-130f, 1.0f, 0x3F80, 0x0000, 0x0008},  // 2^-130 = bf16 0x0008
};

TEST(Epilogue, ElementTable) {
  for (const ElementCase& c : kElementCases) {
    EXPECT_EQ(EpilogueElement(c.acc, c.alpha, c.gate, c.residual), c.want) << c.name;
  }
  (void)kInf;
}

TEST(Epilogue, OutOfRangeRowsCopyResidualBitForBit) {
  constexpr int64_t kG = 9, kN = 6;
  std::vector<uint16_t> gate(kG * kN, 0x3F80);
  // Residual with -0, a non-canonical NaN, Inf and subnormals: all copied as they are.
  const std::vector<uint16_t> residual = {0x8000, 0x7FC1, 0xFF80, 0x0001, 0x3F80, 0xFFFF};
  const float acc[kN] = {kNaN, kInf, -kInf, 1.0f, 2.0f, 0.0f};
  for (int32_t gi : {-1, static_cast<int32_t>(kG), INT_MIN, INT_MAX, 100}) {
    std::vector<uint16_t> out(kN, 0xABCD);
    EpilogueRow(acc, 1.0f, gate, kG, kN, gi, residual.data(), out.data());
    EXPECT_EQ(out, residual) << "gate_index " << gi;
  }
  // In range (0 and G-1): the formula; NaN acc -> canonical NaN.
  for (int32_t gi : {0, static_cast<int32_t>(kG - 1)}) {
    std::vector<uint16_t> out(kN);
    EpilogueRow(acc, 1.0f, gate, kG, kN, gi, residual.data(), out.data());
    EXPECT_EQ(out[0], 0x7FFF);
    EXPECT_EQ(out[4], 0x4040);  // 1 + 2 = 3
  }
}

TEST(Epilogue, OutAliasesResidual) {
  constexpr int64_t kG = 2, kN = 4;
  const std::vector<uint16_t> gate = {0x3F80, 0x4000, 0xBF80, 0x3F00,
                                      0x3F80, 0x3F80, 0x3F80, 0x3F80};
  const float acc[kN] = {1.0f, 2.0f, 3.0f, 4.0f};
  std::vector<uint16_t> buf = {0x3F80, 0x3F80, 0x4040, 0x0000};
  std::vector<uint16_t> separate(kN);
  EpilogueRow(acc, 1.0f, gate, kG, kN, 0, buf.data(), separate.data());
  EpilogueRow(acc, 1.0f, gate, kG, kN, 0, buf.data(), buf.data());  // in place
  EXPECT_EQ(buf, separate);
  // 1+1, 1+4, 3-3, 0+2
  EXPECT_EQ(buf, (std::vector<uint16_t>{0x4000, 0x40A0, 0x0000, 0x4000}));
}

}  // namespace
}  // namespace h3
