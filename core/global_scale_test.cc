// WeightGlobalScale (core/global_scale.h, contract section 5): w_gs = RN(RN(1 / amax) * 2688),
// as PyTorch evaluates FlashInfer's `(448 * 6) / amax`, on a table of amax where that differs
// from the one division RN(2688 / amax) (found by search with NumPy float32, both forms), where
// the two agree, and at the edges; and CheckGlobalScale's wording.

#include "core/global_scale.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace h3 {
namespace {

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

struct Case {
  uint32_t amax;  // f32 bits
  uint32_t rcp;   // RN(RN(1/amax) * 2688): the contract
  uint32_t div;   // RN(2688/amax): the earlier contract, which FlashInfer's Python does not give
  const char* why;
};

// Each row's two columns were computed with NumPy float32 scalars ((f32(1)/a)*f32(2688) and
// f32(2688)/a) and are checked against the C++ division below too.
constexpr Case kDiffer[] = {
    {0x3FA00000, 0x45066667, 0x45066666, "1.25: one of the 30 of 128 bf16 significands"},
    {0x3FE00000, 0x44C00001, 0x44C00000, "1.75: DIV exact (1536), RCP not"},
    {0x3E200000, 0x46866667, 0x46866666, "0.15625: 0.47% of a weight's scale bytes change"},
    {0x3E300000, 0x46745D18, 0x46745D17, "0.171875: 0.95% of a weight's scale bytes change"},
    {0x3DF50000, 0x46AF8AF8, 0x46AF8AF9, "0.11962890625: RCP below DIV"},
    {0x3E500000, 0x464EC4ED, 0x464EC4EC, "0.203125"},
    {0x40E00000, 0x43C00001, 0x43C00000, "7: DIV exact (384)"},
    {0x41200000, 0x43866667, 0x43866666, "10"},
    {0x41300000, 0x43745D18, 0x43745D17, "11"},
    {0x3F830000, 0x45242716, 0x45242715, "1.0234375: smallest differing bf16 significand"},
    {0x3FFA0000, 0x44AC0832, 0x44AC0831, "1.953125: largest differing bf16 significand"},
    {0x4CE6C891, 0x37BA5B45, 0x37BA5B44, "random f32 1.20997e8"},
    {0x32852D2A, 0x52217854, 0x52217853, "random f32 1.55038e-8"},
    {0x05280001, 0x7F7FFFFF, 0x7F7FFFFE, "smallest amax with a finite scale: RCP gives FLT_MAX"},
    {0x7F418280, 0x055E409C, 0x055E409A, "2.57e38: 1/amax subnormal, 2 ulp"},
    {0x7F47B01D, 0x05576042, 0x05576045, "2.65e38: 1/amax subnormal, 3 ulp"},
    {0x7F7FFFFF, 0x05280000, 0x05280001, "FLT_MAX"},
};

constexpr Case kAgree[] = {
    {0x40C00000, 0x43E00000, 0x43E00000, "6 -> 448"},
    {0x40400000, 0x44600000, 0x44600000, "3 -> 896"},
    {0x45280000, 0x3F800000, 0x3F800000, "2688 -> 1"},
    {0x3F800000, 0x45280000, 0x45280000, "1 -> 2688"},
    {0x7E800000, 0x06280000, 0x06280000, "2^126: 1/amax = 2^-126, the smallest normal"},
};

TEST(WeightGlobalScale, DiffersFromOneDivisionTable) {
  for (const Case& c : kDiffer) {
    const float amax = FromBits(c.amax);
    volatile float d = 2688.0f / amax;  // the one-division form, to show the rows really differ
    ASSERT_EQ(Bits(d), c.div) << c.why;
    ASSERT_NE(c.rcp, c.div) << c.why;
    const absl::StatusOr<float> gs = WeightGlobalScale(amax);
    ASSERT_TRUE(gs.ok()) << c.why << ": " << gs.status();
    EXPECT_EQ(Bits(*gs), c.rcp) << c.why;
    EXPECT_NE(Bits(*gs), c.div) << c.why;
  }
}

TEST(WeightGlobalScale, AgreesTable) {
  for (const Case& c : kAgree) {
    const absl::StatusOr<float> gs = WeightGlobalScale(FromBits(c.amax));
    ASSERT_TRUE(gs.ok()) << c.why << ": " << gs.status();
    EXPECT_EQ(Bits(*gs), c.rcp) << c.why;
  }
}

TEST(WeightGlobalScale, EdgesTable) {
  const float kInf = std::numeric_limits<float>::infinity();
  struct Edge {
    float amax;
    absl::StatusCode code;
    const char* needle;  // in the message; "" when OK
    float want;          // when OK
  };
  const Edge kEdges[] = {
      {0.0f, absl::StatusCode::kOk, "", 1.0f},  // the stated departure: FlashInfer gives +Inf
      {FromBits(0x05280000), absl::StatusCode::kOutOfRange,
       "weight: amax = 7.89932e-36 makes the global scale 2688/amax overflow f32", 0},
      {FromBits(0x00000001), absl::StatusCode::kOutOfRange, "overflow f32", 0},  // subnormal
      {1e-38f, absl::StatusCode::kOutOfRange, "overflow f32", 0},
      {-1.0f, absl::StatusCode::kInvalidArgument, "amax must be finite and >= 0, got -1", 0},
      {kInf, absl::StatusCode::kInvalidArgument, "got inf", 0},
      {std::nanf(""), absl::StatusCode::kInvalidArgument, "got nan", 0},
  };
  for (const Edge& e : kEdges) {
    const absl::StatusOr<float> gs = WeightGlobalScale(e.amax);
    EXPECT_EQ(gs.status().code(), e.code) << e.amax;
    if (gs.ok()) {
      EXPECT_EQ(Bits(*gs), Bits(e.want)) << e.amax;
    } else {
      EXPECT_TRUE(absl::StrContains(gs.status().message(), e.needle)) << gs.status();
    }
  }
}

TEST(CheckGlobalScale, Wording) {
  EXPECT_TRUE(CheckGlobalScale("w_gs", 1.0f).ok());
  const absl::Status s = CheckGlobalScale("w_gs", -0.0f);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "w_gs must be a finite value > 0, got -0 (bits 0x80000000)");
}

}  // namespace
}  // namespace h3
