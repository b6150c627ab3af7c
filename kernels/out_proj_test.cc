// The GPU op against the emulator (contract): act_q/act_sf bit-exact, out bit-exact on exact
// data and inside the section-6 envelope on full-entropy data, plus the API's edge cases.

#include "kernels/out_proj.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "emulator/check.h"
#include "emulator/op.h"
#include "emulator/quantize.h"
#include "kernels/test_problem.h"
#include "tools/cuda/gpu_test.h"

namespace h3 {
namespace {

using kernels::testing::ArgsFor;
using kernels::testing::Data;
using kernels::testing::DeviceProblem;
using kernels::testing::MakeProblem;
using kernels::testing::Problem;
using kernels::testing::ToHost;

// Rows to check: all when few, else a sample including the first and last ones.
std::vector<int64_t> SampleRows(int64_t m, int64_t max_rows) {
  std::vector<int64_t> rows;
  if (m <= max_rows) {
    for (int64_t r = 0; r < m; ++r) rows.push_back(r);
    return rows;
  }
  for (int64_t r = 0; r < max_rows / 4; ++r) rows.push_back(r);
  const int64_t mid = max_rows / 2, stride = m / (mid + 1);
  for (int64_t i = 1; i <= mid; ++i) rows.push_back(i * stride);
  for (int64_t r = m - (max_rows - max_rows / 4 - mid); r < m; ++r) rows.push_back(r);
  return rows;
}

// Checks act_q/act_sf (bit-exact, sampled rows) and out (envelope) of a finished run.
void ExpectMatchesEmulator(const Problem& p, const DeviceProblem& d, bool expect_exact,
                           int64_t max_rows, bool check_act = true) {
  const int64_t m = p.shape.m, n = p.shape.n, k = p.shape.k;
  const std::vector<int64_t> rows = SampleRows(m, max_rows);
  if (check_act) {
    std::vector<uint8_t> want_q(rows.size() * k / 2), want_sf(rows.size() * k / 16);
    QuantizeSelectedRows(p.attn, k, p.act_gs, rows, absl::MakeSpan(want_q),
                         absl::MakeSpan(want_sf));
    const std::vector<uint8_t> all_q = ToHost(d.act_q, m * k / 2);
    const std::vector<uint8_t> all_sf = ToHost(d.act_sf, m * k / 16);
    std::vector<uint8_t> got_q, got_sf;
    for (int64_t r : rows) {
      got_q.insert(got_q.end(), all_q.begin() + r * k / 2, all_q.begin() + (r + 1) * k / 2);
      got_sf.insert(got_sf.end(), all_sf.begin() + r * k / 16, all_sf.begin() + (r + 1) * k / 16);
    }
    const CompareReport rq = CompareBytes("act_q", want_q, got_q, k / 2);
    EXPECT_TRUE(rq.pass) << rq.first_mismatch << " (" << rq.mismatches << " mismatches)";
    const CompareReport rs = CompareBytes("act_sf", want_sf, got_sf, k / 16);
    EXPECT_TRUE(rs.pass) << rs.first_mismatch << " (" << rs.mismatches << " mismatches)";
  }
  absl::StatusOr<OutEnvelope> env = ComputeOutEnvelope(p.Inputs(), rows);
  ASSERT_TRUE(env.ok()) << env.status();
  if (expect_exact) {
    int64_t inexact = 0;
    for (uint8_t e : env->exact) inexact += e == 0;
    EXPECT_EQ(inexact, 0) << "test data is not exact";
  }
  const std::vector<uint16_t> got = ToHost(d.out, m * n);
  const CompareReport r = CompareOut(*env, got, rows);
  EXPECT_TRUE(r.pass) << r.first_mismatch << " (" << r.mismatches << " of " << r.checked
                      << " mismatch, max ulp " << r.max_ulp << ")";
}

struct Case {
  const char* name;
  int64_t m, n, k, g;
  Data data;
  bool in_place;       // out == residual
  bool own_workspace;  // act_q/act_sf null: the op allocates
  bool weight_scale_on_device;
};

// Each case runs with both sm_90 emulations (on sm_120 both select the native kernel).
class OutProjCaseTest : public ::testing::TestWithParam<std::tuple<Case, Sm90Emulation>> {};

TEST_P(OutProjCaseTest, MatchesEmulator) {
  H3_SKIP_WITHOUT_GPU();
  const Case& c = std::get<0>(GetParam());
  Problem p = MakeProblem(c.m, c.n, c.k, c.g, c.data, 1234 + c.m);
  // Out-of-range gate indices on some rows (they copy residual bit for bit).
  const int32_t kSpecial[] = {-1, static_cast<int32_t>(c.g), INT_MIN, INT_MAX};
  for (int64_t r = 5; r < c.m; r += 7) p.gate_index[r] = kSpecial[(r / 7) % 4];
  DeviceProblem d(p);
  OutProjArgs a = ArgsFor(p, d);
  if (c.in_place) a.out = const_cast<uint16_t*>(a.residual);
  if (c.own_workspace) a.act_q = nullptr, a.act_sf = nullptr;
  a.sm90_emulation = std::get<1>(GetParam());
  if (c.weight_scale_on_device)
    a.o_weight_global_scale_dev = d.w_gs, a.o_weight_global_scale = -1.f;
  ASSERT_TRUE(MinimaxH3Nvfp4OutProj(a, nullptr, CheckMode::kChecked).ok());
  if (c.in_place) {
    // Compare from the aliased buffer: copy it to d.out's place for the checker.
    cudaMemcpy(d.out, d.residual, c.m * c.n * 2, cudaMemcpyDeviceToDevice);
  }
  ExpectMatchesEmulator(p, d, c.data == Data::kExact, 512, !c.own_workspace);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, OutProjCaseTest,
    ::testing::Combine(
        ::testing::Values(
            // name, m, n, k, g, data, in_place, own_workspace, w_gs on device
            Case{"exact_m1", 1, 256, 512, 9, Data::kExact, false, false, false},
            Case{"exact_m127", 127, 256, 512, 9, Data::kExact, false, false, false},
            Case{"exact_m128", 128, 256, 512, 9, Data::kExact, false, false, false},
            Case{"exact_m129", 129, 384, 1024, 9, Data::kExact, false, false, true},
            Case{"exact_m387", 387, 256, 768, 3, Data::kExact, false, false, false},
            Case{"exact_inplace", 200, 256, 512, 9, Data::kExact, true, false, false},
            Case{"entropy_m129", 129, 384, 1024, 9, Data::kEntropy, false, false, false},
            Case{"entropy_m1000", 1000, 512, 2048, 9, Data::kEntropy, false, false, true},
            Case{"entropy_inplace_noworkspace", 300, 256, 512, 9, Data::kEntropy, true, true,
                 false},
            Case{"minimax_m259", 259, 5376, 7168, 9, Data::kEntropy, false, false, false}),
        ::testing::Values(Sm90Emulation::kFaithful, Sm90Emulation::kFast)),
    [](const ::testing::TestParamInfo<std::tuple<Case, Sm90Emulation>>& i) {
      return std::string(std::get<0>(i.param).name) +
             (std::get<1>(i.param) == Sm90Emulation::kFast ? "_fast" : "_faithful");
    });

// NaN / Inf / subnormal / zero / -0 activations.
TEST(OutProjTest, SpecialActivations) {
  H3_SKIP_WITHOUT_GPU();
  Problem p = MakeProblem(130, 256, 512, 9, Data::kEntropy, 77);
  // 0x7F81 / 0xFF81 are signalling NaNs: the block max must skip them too (contract 3.1).
  const uint16_t kSpecials[] = {0x7FC0, 0xFFC1, 0x7F81, 0xFF81, 0x7F80, 0xFF80,
                                0x0001, 0x8003, 0x007F, 0x0000, 0x8000};
  constexpr int kNumSpecials = sizeof(kSpecials) / sizeof(kSpecials[0]);
  for (int64_t r = 0; r < 130; ++r) {
    for (int i = 0; i < 4; ++i) {
      p.attn[r * 512 + (r * 37 + i * 101) % 512] = kSpecials[(r + i) % kNumSpecials];
    }
  }
  // Whole blocks: all NaN, all zero, all -0, all subnormal, all Inf, sNaN but one.
  for (int i = 0; i < 16; ++i) {
    p.attn[0 * 512 + 32 + i] = 0x7FC0;
    p.attn[1 * 512 + 64 + i] = 0x0000;
    p.attn[2 * 512 + 64 + i] = 0x8000;
    p.attn[3 * 512 + 16 + i] = static_cast<uint16_t>(0x0001 + i);
    p.attn[4 * 512 + 48 + i] = (i & 1) ? 0xFF80 : 0x7F80;
    p.attn[5 * 512 + 80 + i] = i == 7 ? 0x3F80 : 0x7F81;  // 15 sNaN + 1.0: amax = 1
  }
  DeviceProblem d(p);
  for (Sm90Emulation e : {Sm90Emulation::kFaithful, Sm90Emulation::kFast}) {
    d.Poison();
    OutProjArgs a = ArgsFor(p, d);
    a.sm90_emulation = e;
    ASSERT_TRUE(MinimaxH3Nvfp4OutProj(a, nullptr, CheckMode::kChecked).ok());
    ExpectMatchesEmulator(p, d, false, 512);
  }
}

// Two runs bitwise identical; a captured graph replayed three times equals the eager run.
TEST(OutProjTest, DeterministicAndGraphReplay) {
  H3_SKIP_WITHOUT_GPU();
  Problem p = MakeProblem(515, 512, 1024, 9, Data::kEntropy, 99);
  DeviceProblem d(p);
  const OutProjArgs a = ArgsFor(p, d);
  ASSERT_TRUE(MinimaxH3Nvfp4OutProj(a, nullptr, CheckMode::kChecked).ok());
  const auto out1 = ToHost(d.out, p.shape.m * p.shape.n);
  const auto q1 = ToHost(d.act_q, p.shape.m * p.shape.k / 2);
  d.Poison();
  ASSERT_TRUE(MinimaxH3Nvfp4OutProj(a, nullptr, CheckMode::kChecked).ok());
  EXPECT_EQ(out1, ToHost(d.out, p.shape.m * p.shape.n));
  EXPECT_EQ(q1, ToHost(d.act_q, p.shape.m * p.shape.k / 2));

  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  for (bool own_ws : {true, false}) {  // caller workspace last: act_q checked below
    OutProjArgs ga = a;
    if (own_ws) ga.act_q = nullptr, ga.act_sf = nullptr;
    cudaGraph_t graph;
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    const absl::Status st = MinimaxH3Nvfp4OutProj(ga, s);
    ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
    ASSERT_TRUE(st.ok()) << st;
    cudaGraphExec_t exec;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    d.Poison();
    for (int rep = 0; rep < 3; ++rep) {
      ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      EXPECT_EQ(out1, ToHost(d.out, p.shape.m * p.shape.n)) << "replay " << rep;
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
  cudaStreamDestroy(s);
  ExpectMatchesEmulator(p, d, false, 128);
}

// Back-to-back launches of different M on one stream with no host sync in between: the
// flags/counters must be back at zero after every launch.
TEST(OutProjTest, BackToBackDifferentM) {
  H3_SKIP_WITHOUT_GPU();
  Problem p1 = MakeProblem(700, 256, 512, 9, Data::kExact, 5);
  Problem p2 = MakeProblem(33, 256, 512, 9, Data::kExact, 6);
  DeviceProblem d1(p1), d2(p2);
  for (int rep = 0; rep < 3; ++rep) {
    ASSERT_TRUE(MinimaxH3Nvfp4OutProj(ArgsFor(p1, d1), nullptr).ok());
    ASSERT_TRUE(MinimaxH3Nvfp4OutProj(ArgsFor(p2, d2), nullptr).ok());
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ExpectMatchesEmulator(p1, d1, true, 1024);
  ExpectMatchesEmulator(p2, d2, true, 1024);
}

// M = 300000 at K = 7168: M*K > 2^31, so 32-bit offsets would fail on the last rows.
TEST(OutProjTest, HugeM) {
  H3_SKIP_WITHOUT_GPU();
  const int64_t m = 300000, n = 128, k = 7168;
  ASSERT_GT(m * k, int64_t{1} << 31);
  Problem p = MakeProblem(m, n, k, 9, Data::kEntropy, 300000, /*pool_rows=*/251);
  DeviceProblem d(p);
  ASSERT_TRUE(MinimaxH3Nvfp4OutProj(ArgsFor(p, d), nullptr, CheckMode::kChecked).ok());
  ExpectMatchesEmulator(p, d, false, 64);
}

TEST(OutProjTest, MZeroIsNoOp) {
  H3_SKIP_WITHOUT_GPU();
  Problem p = MakeProblem(4, 256, 512, 9, Data::kExact, 1);
  DeviceProblem d(p);
  OutProjArgs a = ArgsFor(p, d);
  a.m = 0;
  ASSERT_TRUE(MinimaxH3Nvfp4OutProj(a, nullptr, CheckMode::kChecked).ok());
  for (uint16_t v : ToHost(d.out, 4 * 256)) ASSERT_EQ(v, 0x7FC1);
}

TEST(OutProjTest, BackendName) {
  H3_SKIP_WITHOUT_GPU();
  absl::StatusOr<std::string> name = OutProjBackendName();
  ASSERT_TRUE(name.ok()) << name.status();
  std::printf("backend: %s\n", name->c_str());
}

// Every error path: the status names the argument, nothing is written.
TEST(OutProjTest, ErrorPaths) {
  H3_SKIP_WITHOUT_GPU();
  Problem p = MakeProblem(64, 256, 512, 9, Data::kExact, 3);
  DeviceProblem d(p);
  const OutProjArgs good = ArgsFor(p, d);
  float* bad_scale = nullptr;
  cudaMalloc(&bad_scale, 4 * sizeof(float));
  const float kBad[4] = {0.0f, -1.0f, NAN, INFINITY};
  cudaMemcpy(bad_scale, kBad, sizeof(kBad), cudaMemcpyHostToDevice);
  struct ErrCase {
    const char* name;
    std::function<void(OutProjArgs&)> mutate;
    CheckMode mode;
    absl::StatusCode code;
    const char* mentions;
  };
  const std::vector<ErrCase> cases = {
      {"m<0", [](OutProjArgs& a) { a.m = -1; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "m must"},
      {"m near INT64_MAX", [](OutProjArgs& a) { a.m = INT64_MAX - 5; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "m must be <="},
      {"n", [](OutProjArgs& a) { a.n = 200; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "n must"},
      {"n0", [](OutProjArgs& a) { a.n = 0; }, CheckMode::kAsync, absl::StatusCode::kInvalidArgument,
       "n must"},
      {"k", [](OutProjArgs& a) { a.k = 320; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "k must"},
      {"g", [](OutProjArgs& a) { a.g = 0; }, CheckMode::kAsync, absl::StatusCode::kInvalidArgument,
       "g must"},
      {"null attn", [](OutProjArgs& a) { a.attn_out = nullptr; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "attn_out"},
      {"null wq", [](OutProjArgs& a) { a.o_weight_q = nullptr; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "o_weight_q"},
      {"null wsf", [](OutProjArgs& a) { a.o_weight_sf = nullptr; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "o_weight_sf"},
      {"null act_gs", [](OutProjArgs& a) { a.act_global_scale = nullptr; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "act_global_scale"},
      {"null gate", [](OutProjArgs& a) { a.gate = nullptr; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "gate"},
      {"null gate_index", [](OutProjArgs& a) { a.gate_index = nullptr; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "gate_index"},
      {"null residual", [](OutProjArgs& a) { a.residual = nullptr; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "residual"},
      {"null out", [](OutProjArgs& a) { a.out = nullptr; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "out"},
      {"half workspace", [](OutProjArgs& a) { a.act_sf = nullptr; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "act_q and act_sf"},
      {"misaligned attn", [](OutProjArgs& a) { a.attn_out += 1; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "attn_out must be 16-byte"},
      {"misaligned act_q", [](OutProjArgs& a) { a.act_q += 8; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "act_q must be 16-byte"},
      {"misaligned wsf", [](OutProjArgs& a) { a.o_weight_sf += 4; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "o_weight_sf must be 16-byte"},
      {"misaligned out",
       [](OutProjArgs& a) {
         a.out = reinterpret_cast<uint16_t*>(reinterpret_cast<uint8_t*>(a.out) + 2);
       },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument, "out must be 4-byte"},
      {"out overlaps residual",
       [](OutProjArgs& a) { a.out = const_cast<uint16_t*>(a.residual) + 2; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "out must not overlap"},
      {"out overlaps attn",
       [](OutProjArgs& a) {
         a.out = reinterpret_cast<uint16_t*>(const_cast<uint16_t*>(a.attn_out));
       },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument, "out must not overlap attn_out"},
      {"act_q overlaps out", [](OutProjArgs& a) { a.act_q = reinterpret_cast<uint8_t*>(a.out); },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument, "must not overlap"},
      {"act_sf overlaps act_q", [](OutProjArgs& a) { a.act_sf = a.act_q + 16; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "act_q must not overlap act_sf"},
      {"act_sf overlaps gate",
       [](OutProjArgs& a) { a.act_sf = reinterpret_cast<uint8_t*>(const_cast<uint16_t*>(a.gate)); },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument, "act_sf must not overlap gate"},
      {"act_gs 0", [&](OutProjArgs& a) { a.act_global_scale = bad_scale; }, CheckMode::kChecked,
       absl::StatusCode::kInvalidArgument, "act_global_scale must be finite and > 0"},
      {"act_gs -1", [&](OutProjArgs& a) { a.act_global_scale = bad_scale + 1; },
       CheckMode::kChecked, absl::StatusCode::kInvalidArgument, "act_global_scale"},
      {"act_gs nan", [&](OutProjArgs& a) { a.act_global_scale = bad_scale + 2; },
       CheckMode::kChecked, absl::StatusCode::kInvalidArgument, "act_global_scale"},
      {"act_gs inf", [&](OutProjArgs& a) { a.act_global_scale = bad_scale + 3; },
       CheckMode::kChecked, absl::StatusCode::kInvalidArgument, "act_global_scale"},
      {"w_gs host 0", [](OutProjArgs& a) { a.o_weight_global_scale = 0.f; }, CheckMode::kChecked,
       absl::StatusCode::kInvalidArgument, "o_weight_global_scale must"},
      {"w_gs host inf", [](OutProjArgs& a) { a.o_weight_global_scale = INFINITY; },
       CheckMode::kChecked, absl::StatusCode::kInvalidArgument, "o_weight_global_scale must"},
      {"w_gs dev nan", [&](OutProjArgs& a) { a.o_weight_global_scale_dev = bad_scale + 2; },
       CheckMode::kChecked, absl::StatusCode::kInvalidArgument, "o_weight_global_scale_dev"},
  };
  for (const ErrCase& c : cases) {
    OutProjArgs a = good;
    c.mutate(a);
    const absl::Status s = MinimaxH3Nvfp4OutProj(a, nullptr, c.mode);
    EXPECT_EQ(s.code(), c.code) << c.name << ": " << s;
    EXPECT_NE(std::string(s.message()).find(c.mentions), std::string::npos) << c.name << ": " << s;
  }
  // kChecked synchronizes, so it refuses a capturing stream (and leaves the capture usable).
  {
    cudaStream_t s;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    const absl::Status st = MinimaxH3Nvfp4OutProj(good, s, CheckMode::kChecked);
    cudaGraph_t graph = nullptr;
    EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess) << "the capture was invalidated";
    EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaStreamDestroy(s);
  }
  cudaDeviceSynchronize();
  for (uint16_t v : ToHost(d.out, 64 * 256)) ASSERT_EQ(v, 0x7FC1) << "something was written";
  for (uint8_t v : ToHost(d.act_q, 64 * 256)) ASSERT_EQ(v, 0xFF) << "something was written";
  cudaFree(bad_scale);
}

// An unrelated, earlier error of the caller's (here a failed allocation) is not reported as the
// op's own failure.
TEST(OutProjTest, EarlierUnrelatedErrorIsNotTheOps) {
  H3_SKIP_WITHOUT_GPU();
  Problem p = MakeProblem(129, 256, 512, 9, Data::kExact, 8);
  DeviceProblem d(p);
  void* huge = nullptr;
  ASSERT_NE(cudaMalloc(&huge, size_t{1} << 62), cudaSuccess);
  const absl::Status st = MinimaxH3Nvfp4OutProj(ArgsFor(p, d), nullptr, CheckMode::kChecked);
  EXPECT_TRUE(st.ok()) << st;
  (void)cudaGetLastError();  // the caller's own error, consumed here
  ExpectMatchesEmulator(p, d, true, 129);
}

// After cudaDeviceReset the device has a new context; the op must not reuse the old context's
// (freed) synchronization buffer.
TEST(OutProjTest, WorksAfterDeviceReset) {
  H3_SKIP_WITHOUT_GPU();
  Problem p = MakeProblem(200, 256, 512, 9, Data::kExact, 9);
  {
    DeviceProblem d(p);
    ASSERT_TRUE(MinimaxH3Nvfp4OutProj(ArgsFor(p, d), nullptr, CheckMode::kChecked).ok());
  }
  ASSERT_EQ(cudaDeviceReset(), cudaSuccess);
  DeviceProblem d(p);
  const absl::Status st = MinimaxH3Nvfp4OutProj(ArgsFor(p, d), nullptr, CheckMode::kChecked);
  ASSERT_TRUE(st.ok()) << st;
  ExpectMatchesEmulator(p, d, true, 200);
}

}  // namespace
}  // namespace h3
