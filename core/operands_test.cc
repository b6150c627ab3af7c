#include "core/operands.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace h3 {
namespace {

// m = 4, n = 128, k = 256, g = 3 in one host buffer, each operand 64-byte aligned and apart.
struct Fixture {
  static constexpr int64_t m = 4, n = 128, k = 256, g = 3;
  std::vector<uint8_t> mem = std::vector<uint8_t>(1 << 20);
  int64_t next = 0;
  const void* Take(int64_t bytes) {
    const void* p = mem.data() + next;
    next += (bytes + 63) / 64 * 64 + 64;
    return p;
  }
  OperandSet Valid() {
    next = 64 - reinterpret_cast<uintptr_t>(mem.data()) % 64;
    OperandSet s;
    s.attn_out = Operand::Of(Take(m * k * 2), {m, k});
    s.o_weight_q = Operand::Of(Take(n * k / 2), {n, k / 2});
    s.o_weight_sf = Operand::Of(Take(128 * 16), {128, 16});
    s.o_weight_global_scale_value = 1.f;
    s.act_global_scale = Operand::Of(Take(4), {1});
    s.gate = Operand::Of(Take(g * n * 2), {g, n});
    s.gate_index = Operand::Of(Take(m * 4), {m});
    s.residual = Operand::Of(Take(m * n * 2), {m, n});
    s.out = Operand::Of(Take(m * n * 2), {m, n});
    return s;
  }
};

int64_t FlagBytes(int64_t m) { return (m + 127) / 128 * 16; }

absl::Status GpuRule(const OpDims& d) {
  if (d.n % 128 != 0 || d.k % 256 != 0) return absl::InvalidArgumentError("gpu rule");
  return absl::OkStatus();
}

absl::Status Validate(const OperandSet& s, bool gpu, OpDims* d) {
  const OperandRules rules{gpu ? GpuRule : [](const OpDims&) { return absl::OkStatus(); },
                           gpu ? "a device pointer" : "host memory", gpu,
                           gpu ? FlagBytes : nullptr};
  return ValidateOperands(s, rules, d);
}

TEST(OperandsTest, TableDefinesEachSymbolOnce) {
  EXPECT_STREQ(kOperands[0].name, "attn_out");
  EXPECT_EQ(kOperandCount, 15);
  // The quality rows come after the seed's, so the earlier C ABI fields keep their offsets.
  EXPECT_STREQ(kOperands[11].name, "ready_flags");
  EXPECT_STREQ(kOperands[12].name, "act_smooth");
  EXPECT_STREQ(kOperands[14].name, "lora_up");
  OpDims d{37, 128, 7104, 9, 32};
  EXPECT_EQ(DimensionSources(d, "R"), "R = 32 from lora_down [R, K]");
  EXPECT_EQ(DimensionSources(d, "MNKG"),
            "M = 37, K = 7104 from attn_out [M, K], N = 128 from o_weight_q [N, K/2], G = 9 "
            "from gate [G, N]");
  EXPECT_EQ(DimensionSources(d, "N"), "N = 128 from o_weight_q [N, K/2]");
}

TEST(OperandsTest, ValidSetsPass) {
  Fixture f;
  for (const bool gpu : {false, true}) {
    OpDims d;
    OperandSet s = f.Valid();
    ASSERT_TRUE(Validate(s, gpu, &d).ok()) << Validate(s, gpu, &d);
    EXPECT_EQ(d.m, 4);
    EXPECT_EQ(d.n, 128);
    EXPECT_EQ(d.k, 256);
    EXPECT_EQ(d.g, 3);
    s.residual = Operand();  // in place
    s.out.data = s.out.data;
    EXPECT_TRUE(Validate(s, gpu, &d).ok()) << Validate(s, gpu, &d);
  }
}

struct Row {
  const char* name;
  bool gpu;
  std::function<void(OperandSet&, Fixture&)> mutate;
  const char* error;  // a substring of the message; "" = OK
};

TEST(OperandsTest, Table) {
  const Row rows[] = {
      {"5-D", false, [](OperandSet& s, Fixture&) { s.gate.ndim = 5; },
       "gate must be an array of 0 to 4 dimensions, got ndim 5"},
      {"attn_out 1-D", false, [](OperandSet& s, Fixture&) { s.attn_out.ndim = 1; },
       "attn_out must be 2-D [M, K], got shape [4]"},
      {"gate 1-D", false, [](OperandSet& s, Fixture&) { s.gate.ndim = 1; },
       "gate must be 2-D [G, N], got shape [3]"},
      {"backend rule", true, [](OperandSet& s, Fixture&) { s.attn_out.shape[1] = 192; },
       "gpu rule"},
      {"weight K", false, [](OperandSet& s, Fixture&) { s.o_weight_q.shape[1] = 64; },
       "o_weight_q must have shape [N, K/2] = [128, 128] (K = 256 from attn_out [M, K], N = 128 "
       "from o_weight_q [N, K/2]), got [128, 64]"},
      {"weight transposed", false,
       [](OperandSet& s, Fixture&) {
         s.o_weight_q.shape[0] = 128;  // [K/2, N'] with N' = 256 from the gate
         s.o_weight_q.shape[1] = 256;
         s.gate.shape[1] = 256;
       },
       "; is it transposed? o_weight_q is [N, K/2]), got [128, 256]"},
      {"sf bytes", false, [](OperandSet& s, Fixture&) { s.o_weight_sf.shape[1] = 8; },
       "o_weight_sf must be round_up(N,128) * round_up(K/16,4) = 2048 bytes (K = 256 from "
       "attn_out [M, K], N = 128 from o_weight_q [N, K/2]), got 1024 bytes (shape [128, 8])"},
      {"negative extents whose product matches", false,
       [](OperandSet& s, Fixture&) {
         s.o_weight_sf.shape[0] = -128;
         s.o_weight_sf.shape[1] = -16;
       },
       "o_weight_sf must be an array of non-negative dimensions, got shape [-128, -16]"},
      {"scale 2 elements", false, [](OperandSet& s, Fixture&) { s.act_global_scale.shape[0] = 2; },
       "act_global_scale must be one float32 ([1] or a scalar), got shape [2]"},
      {"scale 0-D", false, [](OperandSet& s, Fixture&) { s.act_global_scale.ndim = 0; }, ""},
      {"weight scale absent", false,
       [](OperandSet& s, Fixture&) { s.o_weight_global_scale = Operand(); }, ""},
      {"weight scale given", false,
       [](OperandSet& s, Fixture& f) { s.o_weight_global_scale = Operand::Of(f.Take(4), {1}); },
       ""},
      {"gate N", false, [](OperandSet& s, Fixture&) { s.gate.shape[1] = 64; },
       "gate must have shape [G, N] = [3, 128] (N = 128 from o_weight_q [N, K/2], G = 3 from "
       "gate [G, N]), got [3, 64]"},
      {"gate_index M", false, [](OperandSet& s, Fixture&) { s.gate_index.shape[0] = 5; },
       "gate_index must have shape [M] = [4] (M = 4 from attn_out [M, K]), got [5]"},
      {"residual", false, [](OperandSet& s, Fixture&) { s.residual.shape[1] = 64; },
       "residual must have shape [M, N] = [4, 128] (M = 4 from attn_out [M, K], N = 128 from "
       "o_weight_q [N, K/2]), got [4, 64]"},
      {"out", false, [](OperandSet& s, Fixture&) { s.out.ndim = 1; },
       "out must have shape [M, N] = [4, 128]"},
      {"act_q shape", false,
       [](OperandSet& s, Fixture& f) {
         s.act_q = Operand::Of(f.Take(4 * 64), {4, 64});
       },
       "act_q must have shape [M, K/2] = [4, 128]"},
      {"act_sf shape", false,
       [](OperandSet& s, Fixture& f) {
         s.act_sf = Operand::Of(f.Take(64), {4, 8});
       },
       "act_sf must have shape [M, K/16] = [4, 16]"},
      {"flags too small", true,
       [](OperandSet& s, Fixture& f) { s.ready_flags = Operand::Of(f.Take(16), {8}); },
       "ready_flags must be 1-D with at least h3_ready_flag_bytes(M) = 16 bytes, got [8]"},
      {"flags ignored on the CPU", false,
       [](OperandSet& s, Fixture& f) { s.ready_flags = Operand::Of(f.Take(16), {8}); }, ""},
      {"null gate (GPU)", true, [](OperandSet& s, Fixture&) { s.gate.data = nullptr; },
       "gate must be a device pointer, got null"},
      {"null gate (CPU)", false, [](OperandSet& s, Fixture&) { s.gate.data = nullptr; },
       "gate must be host memory, got null"},
      {"null at M = 0", false,
       [](OperandSet& s, Fixture&) {
         s.attn_out.shape[0] = s.gate_index.shape[0] = s.residual.shape[0] = s.out.shape[0] = 0;
         s.gate.data = nullptr;
       },
       ""},
      {"misaligned (GPU)", true,
       [](OperandSet& s, Fixture&) {
         s.attn_out.data = static_cast<const char*>(s.attn_out.data) + 4;
       },
       "attn_out must be 16-byte aligned, got address"},
      {"misaligned (CPU): fine", false,
       [](OperandSet& s, Fixture&) { s.gate.data = static_cast<const char*>(s.gate.data) + 2; },
       ""},
      {"out on residual exactly", false,
       [](OperandSet& s, Fixture&) { s.out.data = s.residual.data; }, ""},
      {"out overlapping residual", false,
       [](OperandSet& s, Fixture&) { s.out.data = static_cast<const char*>(s.residual.data) + 2; },
       "out must not overlap residual (only out == residual exactly)"},
      {"act_q on attn_out", false,
       [](OperandSet& s, Fixture&) {
         s.act_q = Operand::Of(s.attn_out.data, {4, 128});
       },
       "act_q must not overlap attn_out"},
      {"flags on out (GPU)", true,
       [](OperandSet& s, Fixture&) { s.ready_flags = Operand::Of(s.out.data, {16}); },
       "out must not overlap ready_flags"},
      // The quality rows (contract sections 12, 13): R from lora_down, a multiple of 16 in
      // 16..64, lora_down and lora_up together.
      {"act_smooth [K]", false,
       [](OperandSet& s, Fixture& f) { s.act_smooth = Operand::Of(f.Take(256 * 4), {256}); }, ""},
      {"act_smooth [K+1]", false,
       [](OperandSet& s, Fixture& f) { s.act_smooth = Operand::Of(f.Take(257 * 4), {257}); },
       "act_smooth must have shape [K] = [256] (K = 256 from attn_out [M, K]), got [257]"},
      {"act_smooth [1, K]", false,
       [](OperandSet& s, Fixture& f) { s.act_smooth = Operand::Of(f.Take(256 * 4), {1, 256}); },
       "act_smooth must have shape [K] = [256]"},
      {"branch r = 16, 32, 48, 64", false,
       [](OperandSet& s, Fixture& f) {
         for (const int64_t r : {16, 32, 48, 64}) {
           s.lora_down = Operand::Of(f.Take(r * 256 * 2), {r, 256});
           s.lora_up = Operand::Of(f.Take(128 * r * 2), {128, r});
         }
       },
       ""},
      {"r = 0", false,
       [](OperandSet& s, Fixture& f) {
         s.lora_down = Operand::Of(f.Take(16), {0, 256});
         s.lora_up = Operand::Of(f.Take(16), {128, 0});
       },
       "lora_down must be [R, K] with R a multiple of 16 in 16..64 (the branch's rank, contract "
       "section 13), got R = 0 (shape [0, 256])"},
      {"r = 8", false,
       [](OperandSet& s, Fixture& f) {
         s.lora_down = Operand::Of(f.Take(8 * 256 * 2), {8, 256});
         s.lora_up = Operand::Of(f.Take(128 * 8 * 2), {128, 8});
       },
       "got R = 8 (shape [8, 256])"},
      {"r = 24", false,
       [](OperandSet& s, Fixture& f) {
         s.lora_down = Operand::Of(f.Take(24 * 256 * 2), {24, 256});
         s.lora_up = Operand::Of(f.Take(128 * 24 * 2), {128, 24});
       },
       "got R = 24 (shape [24, 256])"},
      {"r = 80", false,
       [](OperandSet& s, Fixture& f) {
         s.lora_down = Operand::Of(f.Take(80 * 256 * 2), {80, 256});
         s.lora_up = Operand::Of(f.Take(128 * 80 * 2), {128, 80});
       },
       "got R = 80 (shape [80, 256])"},
      {"lora_down transposed", false,
       [](OperandSet& s, Fixture& f) {
         s.lora_down = Operand::Of(f.Take(32 * 256 * 2), {256, 32});
         s.lora_up = Operand::Of(f.Take(128 * 32 * 2), {128, 32});
       },
       "got R = 256 (shape [256, 32])"},
      {"lora_down alone", false,
       [](OperandSet& s, Fixture& f) { s.lora_down = Operand::Of(f.Take(32 * 256 * 2), {32, 256}); },
       "lora_up must be given together with lora_down (lora_up [N, R] uses lora_down [R, K]'s "
       "R), got lora_down alone"},
      {"lora_up alone", false,
       [](OperandSet& s, Fixture& f) { s.lora_up = Operand::Of(f.Take(128 * 32 * 2), {128, 32}); },
       "lora_down must be given together with lora_up (lora_up [N, R] uses lora_down [R, K]'s "
       "R), got lora_up alone"},
      {"lora_down 1-D", false,
       [](OperandSet& s, Fixture& f) {
         s.lora_down = Operand::Of(f.Take(32 * 256 * 2), {32 * 256});
         s.lora_up = Operand::Of(f.Take(128 * 32 * 2), {128, 32});
       },
       "lora_down must be 2-D [R, K], got shape [8192]"},
      {"lora_down K", false,
       [](OperandSet& s, Fixture& f) {
         s.lora_down = Operand::Of(f.Take(32 * 512 * 2), {32, 512});
         s.lora_up = Operand::Of(f.Take(128 * 32 * 2), {128, 32});
       },
       "lora_down must have shape [R, K] = [32, 256] (K = 256 from attn_out [M, K], R = 32 from "
       "lora_down [R, K]), got [32, 512]"},
      {"lora_up R", false,
       [](OperandSet& s, Fixture& f) {
         s.lora_down = Operand::Of(f.Take(32 * 256 * 2), {32, 256});
         s.lora_up = Operand::Of(f.Take(128 * 16 * 2), {128, 16});
       },
       "lora_up must have shape [N, R] = [128, 32] (N = 128 from o_weight_q [N, K/2], R = 32 "
       "from lora_down [R, K]), got [128, 16]"},
      {"lora_up transposed", false,
       [](OperandSet& s, Fixture& f) {
         s.lora_down = Operand::Of(f.Take(32 * 256 * 2), {32, 256});
         s.lora_up = Operand::Of(f.Take(128 * 32 * 2), {32, 128});
       },
       "lora_up must have shape [N, R] = [128, 32]"},
      {"lora_up misaligned (GPU)", true,
       [](OperandSet& s, Fixture& f) {
         s.lora_down = Operand::Of(f.Take(32 * 256 * 2), {32, 256});
         s.lora_up = Operand::Of(static_cast<const char*>(f.Take(128 * 32 * 2 + 16)) + 8,
                                 {128, 32});
       },
       "lora_up must be 16-byte aligned"},
      {"out over lora_up", false,
       [](OperandSet& s, Fixture& f) {
         s.lora_down = Operand::Of(f.Take(32 * 256 * 2), {32, 256});
         s.lora_up = Operand::Of(s.out.data, {128, 32});
       },
       "out must not overlap lora_up"},
      {"options on an input (reads only)", false,
       [](OperandSet& s, Fixture&) { s.act_smooth = Operand::Of(s.attn_out.data, {256}); }, ""},
  };
  Fixture f;
  for (const Row& r : rows) {
    OperandSet s = f.Valid();
    r.mutate(s, f);
    OpDims d;
    const absl::Status st = Validate(s, r.gpu, &d);
    if (r.error[0] == '\0') {
      EXPECT_TRUE(st.ok()) << r.name << ": " << st;
    } else {
      EXPECT_FALSE(st.ok()) << r.name;
      EXPECT_TRUE(absl::StrContains(st.message(), r.error)) << r.name << ": " << st.message();
    }
  }
}

TEST(OperandsTest, InputsOnlySkipsOutputs) {
  Fixture f;
  OperandSet s = f.Valid();
  s.out = Operand();
  OpDims d;
  const OperandRules rules{[](const OpDims&) { return absl::OkStatus(); }, "host memory", false,
                           nullptr, /*inputs_only=*/true};
  EXPECT_TRUE(ValidateOperands(s, rules, &d).ok());
  const OperandRules all{[](const OpDims&) { return absl::OkStatus(); }, "host memory", false,
                         nullptr};
  EXPECT_FALSE(ValidateOperands(s, all, &d).ok());
}

}  // namespace
}  // namespace h3
