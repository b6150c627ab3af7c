// The GPU host API's checks of the quality options before any CUDA call: a malformed low-rank
// branch (contract section 13: one factor alone, r outside {16, 32, 48, 64}, ranks that differ)
// or act_smooth (section 12) is refused by name. Host pointers stand in for device memory; they
// are never read, so no GPU is needed.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "kernels/out_proj.h"

namespace h3 {
namespace {

constexpr int64_t kM = 4, kN = 128, kK = 256, kG = 3;

// A valid call's operands in one 256-byte aligned host buffer, each apart.
struct Fixture {
  std::vector<uint8_t> mem = std::vector<uint8_t>(1 << 20);
  uint8_t* next = nullptr;
  const void* Take(int64_t bytes) {
    const void* p = next;
    next += (bytes + 255) / 256 * 256 + 256;
    return p;
  }
  OutProjArgs Valid() {
    next = mem.data() + (256 - reinterpret_cast<uintptr_t>(mem.data()) % 256);
    OutProjArgs a;
    a.attn_out = Operand::Of(Take(kM * kK * 2), {kM, kK});
    a.o_weight_q = Operand::Of(Take(kN * kK / 2), {kN, kK / 2});
    a.o_weight_sf = Operand::Of(Take(128 * 16), {128, 16});
    a.o_weight_global_scale_value = 1.f;
    a.act_global_scale = Operand::Of(Take(4), {1});
    a.gate = Operand::Of(Take(kG * kN * 2), {kG, kN});
    a.gate_index = Operand::Of(Take(kM * 4), {kM});
    a.residual = Operand::Of(Take(kM * kN * 2), {kM, kN});
    a.out = Operand::Of(Take(kM * kN * 2), {kM, kN});
    return a;
  }
};

TEST(OutProjOptionsTest, RefusedBeforeAnyCudaCall) {
  Fixture f;
  struct Case {
    const char* name;
    std::function<void(Fixture&, OutProjArgs&)> set;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"lora_up alone", [](Fixture& f, OutProjArgs& a) {
         a.lora_up = Operand::Of(f.Take(kN * 16 * 2), {kN, 16});
       },
       "minimax_h3_nvfp4_out_proj: lora_down must be given together with lora_up (lora_up [N, R] "
       "uses lora_down [R, K]'s R), got lora_up alone"},
      {"lora_down alone", [](Fixture& f, OutProjArgs& a) {
         a.lora_down = Operand::Of(f.Take(16 * kK * 2), {16, kK});
       },
       "lora_up must be given together with lora_down (lora_up [N, R] uses lora_down [R, K]'s "
       "R), got lora_down alone"},
      {"rank 24", [](Fixture& f, OutProjArgs& a) {
         a.lora_down = Operand::Of(f.Take(24 * kK * 2), {24, kK});
         a.lora_up = Operand::Of(f.Take(kN * 24 * 2), {kN, 24});
       },
       "lora_down must be [R, K] with R a multiple of 16 in 16..64 (the branch's rank, contract "
       "section 13), got R = 24 (shape [24, 256])"},
      {"rank 80", [](Fixture& f, OutProjArgs& a) {
         a.lora_down = Operand::Of(f.Take(80 * kK * 2), {80, kK});
         a.lora_up = Operand::Of(f.Take(kN * 80 * 2), {kN, 80});
       },
       "got R = 80 (shape [80, 256])"},
      {"lora_up's rank differs", [](Fixture& f, OutProjArgs& a) {
         a.lora_down = Operand::Of(f.Take(32 * kK * 2), {32, kK});
         a.lora_up = Operand::Of(f.Take(kN * 16 * 2), {kN, 16});
       },
       "lora_up"},
      // At M = 0 too: the same call with rows would be refused.
      {"lora_up alone at M = 0", [](Fixture& f, OutProjArgs& a) {
         a.attn_out.shape[0] = a.residual.shape[0] = a.out.shape[0] = a.gate_index.shape[0] = 0;
         a.lora_up = Operand::Of(f.Take(kN * 16 * 2), {kN, 16});
       },
       "lora_down must be given together with lora_up"},
      // act_smooth is the kernel's (contract section 12): its operand checks, before any CUDA call.
      {"act_smooth wrong shape", [](Fixture& f, OutProjArgs& a) {
         a.act_smooth = Operand::Of(f.Take(kK * 4), {kK + 1});
       },
       "act_smooth"},
      {"act_smooth 2-D", [](Fixture& f, OutProjArgs& a) {
         a.act_smooth = Operand::Of(f.Take(kK * 4), {1, kK});
       },
       "act_smooth"},
      {"act_smooth misaligned", [](Fixture& f, OutProjArgs& a) {
         a.act_smooth = Operand::Of(static_cast<const uint8_t*>(f.Take(kK * 4 + 16)) + 4, {kK});
       },
       "act_smooth"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    OutProjArgs a = f.Valid();
    c.set(f, a);
    for (CheckMode mode : {CheckMode::kAsync, CheckMode::kChecked}) {
      const absl::Status s = MinimaxH3Nvfp4OutProj(a, /*stream=*/nullptr, mode);
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
      EXPECT_TRUE(absl::StrContains(s.message(), c.message)) << s;
    }
  }
}

}  // namespace
}  // namespace h3
