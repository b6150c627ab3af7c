// The GPU weight quantizer's argument errors (kernels/weight_quant/weight_quant.h): each names the argument,
// what was expected and what was given, and comes before any CUDA call, so this runs without a
// GPU (the pointers below are never dereferenced).

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "kernels/weight_quant/weight_quant.h"

namespace h3 {
namespace {

uint8_t* At(uintptr_t address) { return reinterpret_cast<uint8_t*>(address); }

WeightQuantArgs Good() {  // a legal [128, 64] bf16 call at made-up, disjoint addresses
  WeightQuantArgs a;
  a.n = 128;
  a.k = 64;
  a.weight = At(0x100000);  // 16 KiB
  a.q = At(0x200000);       // 4 KiB
  a.sf = At(0x300000);      // 512 bytes
  return a;
}

struct Case {
  const char* name;
  void (*edit)(WeightQuantArgs&);
  absl::StatusCode code;
  std::string message;
};

TEST(WeightQuantArgs, RejectedBeforeAnyCudaCall) {
  const std::string f = "quantize_minimax_h3_o_weight_nvfp4: ";
  const Case cases[] = {
      {"n zero", [](WeightQuantArgs& a) { a.n = 0; }, absl::StatusCode::kInvalidArgument,
       f + "weight n: expected >= 1, got 0"},
      {"n negative", [](WeightQuantArgs& a) { a.n = -3; }, absl::StatusCode::kInvalidArgument,
       f + "weight n: expected >= 1, got -3"},
      {"k zero", [](WeightQuantArgs& a) { a.k = 0; }, absl::StatusCode::kInvalidArgument,
       f + "weight k: expected a positive multiple of 16, got 0"},
      {"k 40", [](WeightQuantArgs& a) { a.k = 40; }, absl::StatusCode::kInvalidArgument,
       f + "weight k: expected a positive multiple of 16, got 40"},
      {"k negative", [](WeightQuantArgs& a) { a.k = -16; }, absl::StatusCode::kInvalidArgument,
       f + "weight k: expected a positive multiple of 16, got -16"},
      {"n * k overflows", [](WeightQuantArgs& a) { a.n = int64_t{1} << 60; },
       absl::StatusCode::kInvalidArgument,
       f + "weight: expected n * k * 4 bytes to fit in int64, got n = 1152921504606846976, "
           "k = 64"},
      {"weight null", [](WeightQuantArgs& a) { a.weight = nullptr; },
       absl::StatusCode::kInvalidArgument, f + "weight must be a device pointer, got null"},
      {"q null", [](WeightQuantArgs& a) { a.q = nullptr; }, absl::StatusCode::kInvalidArgument,
       f + "q must be a device pointer, got null"},
      {"sf null", [](WeightQuantArgs& a) { a.sf = nullptr; }, absl::StatusCode::kInvalidArgument,
       f + "sf must be a device pointer, got null"},
      {"weight misaligned", [](WeightQuantArgs& a) { a.weight = At(0x100008); },
       absl::StatusCode::kInvalidArgument,
       f + "weight must be 16-byte aligned, got address 0x100008"},
      {"q misaligned", [](WeightQuantArgs& a) { a.q = At(0x200004); },
       absl::StatusCode::kInvalidArgument, f + "q must be 8-byte aligned, got address 0x200004"},
      {"sf misaligned", [](WeightQuantArgs& a) { a.sf = At(0x300002); },
       absl::StatusCode::kInvalidArgument, f + "sf must be 4-byte aligned, got address 0x300002"},
      {"q inside weight", [](WeightQuantArgs& a) { a.q = At(0x100000 + 16 * 1024 - 8); },
       absl::StatusCode::kInvalidArgument,
       f + "q must not overlap weight, got [0x103ff8, 0x104ff8) and [0x100000, 0x104000)"},
      {"sf inside an f32 weight", [](WeightQuantArgs& a) {
         a.weight_is_f32 = true;  // 32 KiB: its end reaches 0x108000
         a.sf = At(0x107000);
       },
       absl::StatusCode::kInvalidArgument,
       f + "sf must not overlap weight, got [0x107000, 0x107200) and [0x100000, 0x108000)"},
      {"sf overlaps q", [](WeightQuantArgs& a) { a.sf = At(0x200ffc); },
       absl::StatusCode::kInvalidArgument,
       f + "sf must not overlap q, got [0x200ffc, 0x2011fc) and [0x200000, 0x201000)"},
  };
  for (const Case& c : cases) {
    WeightQuantArgs a = Good();
    c.edit(a);
    const absl::StatusOr<float> r = QuantizeWeightNvfp4Gpu(a, nullptr);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), c.code) << c.name;
    EXPECT_EQ(std::string(r.status().message()), c.message) << c.name;
  }
}

}  // namespace
}  // namespace h3
