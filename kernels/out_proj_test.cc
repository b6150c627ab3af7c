// The GPU op against the emulator (contract): act_q/act_sf bit-exact, out bit-exact on exact
// data and inside the section-6 envelope on full-entropy data, plus the API's edge cases.

#include "kernels/out_proj.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "harness/testbed/compare.h"
#include "harness/testbed/cuda.h"
#include "harness/testbed/gpu_run.h"
#include "harness/testbed/problem.h"
#include "harness/testbed/rows.h"
#include "kernels/out_proj_test_util.h"
#include "tools/cuda/gpu_test.h"

namespace h3 {
namespace {

using testbed::DataKind;
using testbed::DeviceProblem;
using testbed::Problem;
using testbed::RunOptions;
using out_proj_test::EveryTile;
using out_proj_test::ExpectMatchesEmulator;

// Every row of a problem from the testbed's generator (gate_index all valid).
absl::StatusOr<Problem> MakeProblem(int64_t m, int64_t n, int64_t k, int64_t g, DataKind data,
                                    uint64_t seed) {
  testbed::ProblemSpec spec;
  spec.shape = OpShape{m, n, k, g};
  spec.data = data;
  spec.gate = testbed::GatePattern::kAllValid;
  return testbed::GenerateProblem(spec, seed);
}

absl::StatusOr<DeviceProblem> Upload(const Problem& p) {
  return testbed::UploadProblem(testbed::InputsOf(p));
}

// A whole device buffer on the host (empty, and a test failure, when the copy fails).
template <typename T>
std::vector<T> Host(const testbed::DeviceBuffer<T>& buffer) {
  absl::StatusOr<std::vector<T>> host = buffer.Download();
  EXPECT_TRUE(host.ok()) << host.status();
  return host.ok() ? *std::move(host) : std::vector<T>();
}

struct Case {
  const char* name;
  int64_t m, n, k, g;
  DataKind data;
  bool in_place;       // out == residual
  bool own_workspace;  // act_q/act_sf null: the op allocates
  bool weight_scale_on_device;
};

// Each case runs with every config of the SM120 kernel and, on sm_90, with both emulations (the
// fast one has a single config of its own: run once; on sm_120 both emulations select the native
// kernel).
class OutProjCaseTest
    : public ::testing::TestWithParam<std::tuple<Case, Sm90Emulation, OutProjTile>> {};

TEST_P(OutProjCaseTest, MatchesEmulator) {
  H3_SKIP_WITHOUT_GPU();
  const Case& c = std::get<0>(GetParam());
  if (std::get<1>(GetParam()) == Sm90Emulation::kFast &&
      std::get<2>(GetParam()) != OutProjTile::kAuto) {
    GTEST_SKIP() << "the fast sm_90 build has one tile";
  }
  absl::StatusOr<Problem> p = MakeProblem(c.m, c.n, c.k, c.g, c.data, 1234 + c.m);
  ASSERT_TRUE(p.ok()) << p.status();
  // Out-of-range gate indices on some rows (they copy residual bit for bit).
  const int32_t kSpecial[] = {-1, static_cast<int32_t>(c.g), INT_MIN, INT_MAX};
  for (int64_t r = 5; r < c.m; r += 7) p->gate_index[r] = kSpecial[(r / 7) % 4];
  absl::StatusOr<DeviceProblem> d = Upload(*p);
  ASSERT_TRUE(d.ok()) << d.status();
  RunOptions o;
  o.out_is_residual = c.in_place;                       // out = residual; compared from residual
  o.caller_workspace = !c.own_workspace;                // else act_q/act_sf null: the op allocates
  o.weight_scale_on_device = c.weight_scale_on_device;  // the host value is then -1
  o.sm90_emulation = std::get<1>(GetParam());
  o.tile = std::get<2>(GetParam());
  const absl::Status st =
      MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d, o), nullptr, CheckMode::kChecked);
  ASSERT_TRUE(st.ok()) << st;
  ExpectMatchesEmulator(*p, *d, o, c.data == DataKind::kExact, 512);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, OutProjCaseTest,
    ::testing::Combine(
        ::testing::Values(
            // name, m, n, k, g, data, in_place, own_workspace, w_gs on device
            Case{"exact_m1", 1, 256, 512, 9, DataKind::kExact, false, false, false},
            Case{"exact_m127", 127, 256, 512, 9, DataKind::kExact, false, false, false},
            Case{"exact_m128", 128, 256, 512, 9, DataKind::kExact, false, false, false},
            Case{"exact_m129", 129, 384, 1024, 9, DataKind::kExact, false, false, true},
            Case{"exact_m387", 387, 256, 768, 3, DataKind::kExact, false, false, false},
            Case{"exact_inplace", 200, 256, 512, 9, DataKind::kExact, true, false, false},
            Case{"entropy_m129", 129, 384, 1024, 9, DataKind::kGaussian, false, false, false},
            Case{"entropy_m1000", 1000, 512, 2048, 9, DataKind::kGaussian, false, false, true},
            Case{"entropy_inplace_noworkspace", 300, 256, 512, 9, DataKind::kGaussian, true, true,
                 false},
            // n = 128: only half of a 128 x 256 tile exists (its other warps idle).
            Case{"exact_n128", 130, 128, 512, 9, DataKind::kExact, false, false, false},
            Case{"entropy_n640", 257, 640, 2304, 9, DataKind::kGaussian, false, false, false},
            Case{"minimax_m259", 259, 5376, 7168, 9, DataKind::kGaussian, false, false, false},
            // More tiles than an H200 has SMs (140 of 128 x 256, 280 of 128 x 128): CTAs run
            // a second tile (ring wrap-around across tiles, the skewed groups' gate at a tile
            // start), half tiles among them.
            Case{"entropy_two_tiles_per_cta", 8955, 384, 512, 9, DataKind::kGaussian, false, false,
                 false},
            // 33 x 12 tiles of 128 x 128 on 132 SMs: 3 per CTA, K = 2 stages each (the staged
            // config's one t buffer through both parities and back, its drain under little main
            // loop), in place, the last m-tile partial.
            Case{"entropy_k256_three_tiles_per_cta", 4100, 1536, 256, 9, DataKind::kGaussian, true,
                 false, false}),
        ::testing::Values(Sm90Emulation::kFaithful, Sm90Emulation::kFast),
        ::testing::ValuesIn(EveryTile())),
    [](const ::testing::TestParamInfo<std::tuple<Case, Sm90Emulation, OutProjTile>>& i) {
      return std::string(std::get<0>(i.param).name) +
             out_proj_test::ParamSuffix(std::get<1>(i.param), std::get<2>(i.param));
    });

// NaN / Inf / subnormal / zero / -0 activations.
TEST(OutProjTest, SpecialActivations) {
  H3_SKIP_WITHOUT_GPU();
  absl::StatusOr<Problem> p = MakeProblem(130, 256, 512, 9, DataKind::kGaussian, 77);
  ASSERT_TRUE(p.ok()) << p.status();
  // 0x7F81 / 0xFF81 are signalling NaNs: the block max must skip them too (contract 3.1).
  const uint16_t kSpecials[] = {0x7FC0, 0xFFC1, 0x7F81, 0xFF81, 0x7F80, 0xFF80,
                                0x0001, 0x8003, 0x007F, 0x0000, 0x8000};
  constexpr int kNumSpecials = sizeof(kSpecials) / sizeof(kSpecials[0]);
  for (int64_t r = 0; r < 130; ++r) {
    for (int i = 0; i < 4; ++i) {
      p->attn_out[r * 512 + (r * 37 + i * 101) % 512] = kSpecials[(r + i) % kNumSpecials];
    }
  }
  // Whole blocks: all NaN, all zero, all -0, all subnormal, all Inf, sNaN but one.
  for (int i = 0; i < 16; ++i) {
    p->attn_out[0 * 512 + 32 + i] = 0x7FC0;
    p->attn_out[1 * 512 + 64 + i] = 0x0000;
    p->attn_out[2 * 512 + 64 + i] = 0x8000;
    p->attn_out[3 * 512 + 16 + i] = static_cast<uint16_t>(0x0001 + i);
    p->attn_out[4 * 512 + 48 + i] = (i & 1) ? 0xFF80 : 0x7F80;
    p->attn_out[5 * 512 + 80 + i] = i == 7 ? 0x3F80 : 0x7F81;  // 15 sNaN + 1.0: amax = 1
  }
  absl::StatusOr<DeviceProblem> d = Upload(*p);
  ASSERT_TRUE(d.ok()) << d.status();
  for (Sm90Emulation e : {Sm90Emulation::kFaithful, Sm90Emulation::kFast}) {
    ASSERT_TRUE(testbed::Poison(*d).ok());
    RunOptions o;
    o.sm90_emulation = e;
    ASSERT_TRUE(MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d, o), nullptr, CheckMode::kChecked).ok());
    ExpectMatchesEmulator(*p, *d, o, false, 512);
  }
}

// Two runs bitwise identical; a captured graph replayed three times equals the eager run.
TEST(OutProjTest, DeterministicAndGraphReplay) {
  H3_SKIP_WITHOUT_GPU();
  absl::StatusOr<Problem> p = MakeProblem(515, 512, 1024, 9, DataKind::kGaussian, 99);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<DeviceProblem> d = Upload(*p);
  ASSERT_TRUE(d.ok()) << d.status();
  const OutProjArgs a = testbed::ArgsFor(*d);
  ASSERT_TRUE(MinimaxH3Nvfp4OutProj(a, nullptr, CheckMode::kChecked).ok());
  const std::vector<uint16_t> out1 = Host(d->out);
  const std::vector<uint8_t> q1 = Host(d->act_q);
  ASSERT_TRUE(testbed::Poison(*d).ok());
  ASSERT_TRUE(MinimaxH3Nvfp4OutProj(a, nullptr, CheckMode::kChecked).ok());
  EXPECT_EQ(out1, Host(d->out));
  EXPECT_EQ(q1, Host(d->act_q));

  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  for (bool own_ws : {true, false}) {  // caller workspace last: act_q checked below
    OutProjArgs ga = a;
    if (own_ws) ga.act_q = ga.act_sf = Operand();
    cudaGraph_t graph;
    ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    const absl::Status st = MinimaxH3Nvfp4OutProj(ga, s);
    ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
    ASSERT_TRUE(st.ok()) << st;
    cudaGraphExec_t exec;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    ASSERT_TRUE(testbed::Poison(*d).ok());
    for (int rep = 0; rep < 3; ++rep) {
      ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      EXPECT_EQ(out1, Host(d->out)) << "replay " << rep;
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }
  cudaStreamDestroy(s);
  ExpectMatchesEmulator(*p, *d, RunOptions(), false, 128);
}

// Back-to-back launches of different M on one stream with no host sync in between: the
// flags/counters must be back at zero after every launch.
TEST(OutProjTest, BackToBackDifferentM) {
  H3_SKIP_WITHOUT_GPU();
  absl::StatusOr<Problem> p1 = MakeProblem(700, 256, 512, 9, DataKind::kExact, 5);
  absl::StatusOr<Problem> p2 = MakeProblem(33, 256, 512, 9, DataKind::kExact, 6);
  ASSERT_TRUE(p1.ok() && p2.ok());
  absl::StatusOr<DeviceProblem> d1 = Upload(*p1), d2 = Upload(*p2);
  ASSERT_TRUE(d1.ok() && d2.ok());
  for (int rep = 0; rep < 3; ++rep) {
    ASSERT_TRUE(MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d1), nullptr).ok());
    ASSERT_TRUE(MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d2), nullptr).ok());
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ExpectMatchesEmulator(*p1, *d1, RunOptions(), true, 1024);
  ExpectMatchesEmulator(*p2, *d2, RunOptions(), true, 1024);
}

// M = 300000 at K = 7168: M*K > 2^31, so 32-bit offsets would fail on the last rows.
TEST(OutProjTest, HugeM) {
  H3_SKIP_WITHOUT_GPU();
  const int64_t m = 300000, n = 128, k = 7168;
  ASSERT_GT(m * k, int64_t{1} << 31);
  // Every row generated (in parallel): rows are pure functions of (seed, row), so the sampled
  // rows the emulator checks are those rows of the full problem.
  absl::StatusOr<Problem> p = MakeProblem(m, n, k, 9, DataKind::kGaussian, 300000);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<DeviceProblem> d = Upload(*p);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_TRUE(MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d), nullptr, CheckMode::kChecked).ok());
  ExpectMatchesEmulator(*p, *d, RunOptions(), false, 64);
}

// Runs `body` once per build (both sm_90 emulations) and SM120 tile.
void ForEachBuildAndTile(const std::function<void(const RunOptions&)>& body) {
  for (Sm90Emulation e : {Sm90Emulation::kFaithful, Sm90Emulation::kFast}) {
    for (OutProjTile tile : EveryTile()) {
      RunOptions o;
      o.sm90_emulation = e;
      o.tile = tile;
      SCOPED_TRACE(::testing::Message()
                   << "emulation " << static_cast<int>(e) << " tile " << static_cast<int>(tile));
      body(o);
    }
  }
}

// gate, residual and out only 4-byte aligned take the epilogue's 4-byte path; it must equal the
// 16-byte path bit for bit (the same operations in the same order), with every build and tile.
TEST(OutProjTest, FourByteAlignedEpilogueEqualsVec16) {
  H3_SKIP_WITHOUT_GPU();
  absl::StatusOr<Problem> p = MakeProblem(300, 640, 1024, 9, DataKind::kGaussian, 21);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<DeviceProblem> d = Upload(*p);
  ASSERT_TRUE(d.ok()) << d.status();
  const OpShape& s = p->shape;
  // Copies of gate and residual, and an out, 4 bytes (2 elements) past a 256-byte boundary.
  testbed::DeviceBuffer<uint16_t> gate4, res4, out4;
  ASSERT_TRUE(gate4.Alloc(s.g * s.n + 2).ok() && res4.Alloc(s.m * s.n + 2).ok() &&
              out4.Alloc(s.m * s.n + 2).ok());
  ASSERT_EQ(cudaMemcpy(gate4.get() + 2, d->gate.get(), s.g * s.n * 2, cudaMemcpyDeviceToDevice),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpy(res4.get() + 2, d->residual.get(), s.m * s.n * 2, cudaMemcpyDeviceToDevice),
            cudaSuccess);
  ForEachBuildAndTile([&](const RunOptions& o) {
    ASSERT_TRUE(testbed::Poison(*d).ok());
    ASSERT_TRUE(MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d, o), nullptr, CheckMode::kChecked).ok());
    const std::vector<uint16_t> want = Host(d->out);
    ASSERT_TRUE(out4.Fill(0xFF).ok());
    OutProjArgs a = testbed::ArgsFor(*d, o);
    a.gate.data = gate4.get() + 2;
    a.residual.data = res4.get() + 2;
    a.out.data = out4.get() + 2;
    ASSERT_TRUE(MinimaxH3Nvfp4OutProj(a, nullptr, CheckMode::kChecked).ok());
    const std::vector<uint16_t> got4 = Host(out4);
    ASSERT_EQ(got4.size(), want.size() + 2);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), got4.begin() + 2));
  });
}

TEST(OutProjTest, MZeroIsNoOp) {
  H3_SKIP_WITHOUT_GPU();
  absl::StatusOr<Problem> p = MakeProblem(4, 256, 512, 9, DataKind::kExact, 1);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<DeviceProblem> d = Upload(*p);
  ASSERT_TRUE(d.ok()) << d.status();
  OutProjArgs a = testbed::ArgsFor(*d);
  for (Operand* o : {&a.attn_out, &a.gate_index, &a.residual, &a.out, &a.act_q, &a.act_sf}) {
    o->shape[0] = 0;  // M = 0 everywhere
  }
  ASSERT_TRUE(MinimaxH3Nvfp4OutProj(a, nullptr, CheckMode::kChecked).ok());
  const std::vector<uint16_t> out = Host(d->out);
  ASSERT_EQ(out.size(), 4u * 256);
  for (uint16_t v : out) ASSERT_EQ(v, testbed::kOutPoison);
}

TEST(OutProjTest, BackendName) {
  H3_SKIP_WITHOUT_GPU();
  absl::StatusOr<std::string> name = OutProjBackendName();
  ASSERT_TRUE(name.ok()) << name.status();
  std::printf("backend: %s\n", name->c_str());
}

const void* Shift(const void* p, int bytes) { return static_cast<const uint8_t*>(p) + bytes; }

// Every error path: the status names the argument, nothing is written.
TEST(OutProjTest, ErrorPaths) {
  H3_SKIP_WITHOUT_GPU();
  absl::StatusOr<Problem> p = MakeProblem(64, 256, 512, 9, DataKind::kExact, 3);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<DeviceProblem> d = Upload(*p);
  ASSERT_TRUE(d.ok()) << d.status();
  const OutProjArgs good = testbed::ArgsFor(*d);
  const float kBad[4] = {0.0f, -1.0f, NAN, INFINITY};
  testbed::DeviceBuffer<float> bad_scales;
  ASSERT_TRUE(bad_scales.Upload(kBad).ok());
  const float* bad_scale = bad_scales.get();
  struct ErrCase {
    const char* name;
    std::function<void(OutProjArgs&)> mutate;
    CheckMode mode;
    absl::StatusCode code;
    const char* mentions;
  };
  const std::vector<ErrCase> cases = {
      {"m<0", [](OutProjArgs& a) { a.attn_out.shape[0] = -1; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "m must"},
      {"m near INT64_MAX", [](OutProjArgs& a) { a.attn_out.shape[0] = INT64_MAX - 5; },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument, "m must be <="},
      {"m = 2^31", [](OutProjArgs& a) { a.attn_out.shape[0] = int64_t{1} << 31; },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument,
       "m must be <= 2147483647, got 2147483648"},
      {"misaligned ready_flags",
       [](OutProjArgs& a) { a.ready_flags = Operand::Of(Shift(a.act_sf.data, 4), {4096}); },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument, "ready_flags must be 16-byte"},
      {"ready_flags over act_sf",
       [](OutProjArgs& a) { a.ready_flags = Operand::Of(a.act_sf.data, {4096}); },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument, "must not overlap"},
      {"ready_flags too small",
       [](OutProjArgs& a) { a.ready_flags = Operand::Of(a.act_sf.data, {8}); }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "ready_flags must be 1-D with at least"},
      {"ready_flags_zeroed without ready_flags",
       [](OutProjArgs& a) {
         a.ready_flags = Operand();
         a.ready_flags_zeroed = true;
       },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument,
       "ready_flags_zeroed must be false where ready_flags is null"},
      {"n", [](OutProjArgs& a) { a.o_weight_q.shape[0] = 200; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "n must"},
      {"n0", [](OutProjArgs& a) { a.o_weight_q.shape[0] = 0; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "n must"},
      {"tile", [](OutProjArgs& a) { a.tile = static_cast<OutProjTile>(77); }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument,
       "tile must be a registered tile config: 0 (auto), 3 (128x256_lockstep), 1 (128x256), 2 "
       "(128x128), 4 (128x128_staged), got 77"},
      {"sm90_emulation", [](OutProjArgs& a) { a.sm90_emulation = static_cast<Sm90Emulation>(-1); },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument, "sm90_emulation must be"},
      {"k", [](OutProjArgs& a) { a.attn_out.shape[1] = 320; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "k must"},
      {"g", [](OutProjArgs& a) { a.gate.shape[0] = 0; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "g must"},
      {"residual shape", [](OutProjArgs& a) { a.residual.shape[1] = 128; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "residual must have shape [M, N] = [64, 256]"},
      {"null attn", [](OutProjArgs& a) { a.attn_out.data = nullptr; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "attn_out must be a device pointer, got null"},
      {"null wq", [](OutProjArgs& a) { a.o_weight_q.data = nullptr; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "o_weight_q"},
      {"null wsf", [](OutProjArgs& a) { a.o_weight_sf.data = nullptr; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "o_weight_sf"},
      {"null act_gs", [](OutProjArgs& a) { a.act_global_scale.data = nullptr; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "act_global_scale"},
      {"null gate", [](OutProjArgs& a) { a.gate.data = nullptr; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "gate"},
      {"null gate_index", [](OutProjArgs& a) { a.gate_index.data = nullptr; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "gate_index"},
      {"null out", [](OutProjArgs& a) { a.out.data = nullptr; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "out"},
      {"half workspace", [](OutProjArgs& a) { a.act_sf = Operand(); }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "act_q and act_sf"},
      {"misaligned attn", [](OutProjArgs& a) { a.attn_out.data = Shift(a.attn_out.data, 2); },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument, "attn_out must be 16-byte"},
      {"misaligned act_q", [](OutProjArgs& a) { a.act_q.data = Shift(a.act_q.data, 8); },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument, "act_q must be 16-byte"},
      {"misaligned wsf", [](OutProjArgs& a) { a.o_weight_sf.data = Shift(a.o_weight_sf.data, 4); },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument, "o_weight_sf must be 16-byte"},
      {"misaligned out", [](OutProjArgs& a) { a.out.data = Shift(a.out.data, 2); },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument, "out must be 4-byte"},
      {"out overlaps residual", [](OutProjArgs& a) { a.out.data = Shift(a.residual.data, 4); },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument, "out must not overlap"},
      {"out overlaps attn", [](OutProjArgs& a) { a.out.data = a.attn_out.data; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "out must not overlap attn_out"},
      {"act_q overlaps out", [](OutProjArgs& a) { a.act_q.data = a.out.data; }, CheckMode::kAsync,
       absl::StatusCode::kInvalidArgument, "must not overlap"},
      {"act_sf overlaps act_q", [](OutProjArgs& a) { a.act_sf.data = Shift(a.act_q.data, 16); },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument, "act_q must not overlap act_sf"},
      {"act_sf overlaps gate", [](OutProjArgs& a) { a.act_sf.data = a.gate.data; },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument, "act_sf must not overlap gate"},
      {"act_gs 0", [&](OutProjArgs& a) { a.act_global_scale.data = bad_scale; },
       CheckMode::kChecked, absl::StatusCode::kInvalidArgument,
       "act_global_scale must be a finite value > 0"},
      {"act_gs -1", [&](OutProjArgs& a) { a.act_global_scale.data = bad_scale + 1; },
       CheckMode::kChecked, absl::StatusCode::kInvalidArgument, "act_global_scale"},
      {"act_gs nan", [&](OutProjArgs& a) { a.act_global_scale.data = bad_scale + 2; },
       CheckMode::kChecked, absl::StatusCode::kInvalidArgument, "act_global_scale"},
      {"act_gs inf", [&](OutProjArgs& a) { a.act_global_scale.data = bad_scale + 3; },
       CheckMode::kChecked, absl::StatusCode::kInvalidArgument, "act_global_scale"},
      {"w_gs host 0", [](OutProjArgs& a) { a.o_weight_global_scale_value = 0.f; },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument, "o_weight_global_scale must"},
      {"w_gs host inf", [](OutProjArgs& a) { a.o_weight_global_scale_value = INFINITY; },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument, "o_weight_global_scale must"},
      {"w_gs dev nan",
       [&](OutProjArgs& a) { a.o_weight_global_scale = Operand::Of(bad_scale + 2, {1}); },
       CheckMode::kChecked, absl::StatusCode::kInvalidArgument, "o_weight_global_scale must"},
      {"w_gs dev 2 elements",
       [&](OutProjArgs& a) { a.o_weight_global_scale = Operand::Of(bad_scale, {2}); },
       CheckMode::kAsync, absl::StatusCode::kInvalidArgument,
       "o_weight_global_scale must be one float32 ([1] or a scalar), got shape [2]"},
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
  const std::vector<uint16_t> out = Host(d->out);
  const std::vector<uint8_t> act_q = Host(d->act_q);
  ASSERT_EQ(out.size(), 64u * 256);
  ASSERT_EQ(act_q.size(), 64u * 256);
  for (uint16_t v : out) ASSERT_EQ(v, testbed::kOutPoison) << "something was written";
  for (uint8_t v : act_q) ASSERT_EQ(v, testbed::kPoisonByte) << "something was written";
}

// An unrelated, earlier error of the caller's (here a failed allocation) is not reported as the
// op's own failure.
TEST(OutProjTest, EarlierUnrelatedErrorIsNotTheOps) {
  H3_SKIP_WITHOUT_GPU();
  absl::StatusOr<Problem> p = MakeProblem(129, 256, 512, 9, DataKind::kExact, 8);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<DeviceProblem> d = Upload(*p);
  ASSERT_TRUE(d.ok()) << d.status();
  testbed::DeviceBuffer<uint8_t> huge;
  ASSERT_FALSE(huge.Alloc(size_t{1} << 62).ok());  // leaves cudaErrorMemoryAllocation behind
  const absl::Status st = MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d), nullptr, CheckMode::kChecked);
  EXPECT_TRUE(st.ok()) << st;
  (void)cudaGetLastError();  // the caller's own error, consumed here
  ExpectMatchesEmulator(*p, *d, RunOptions(), true, 129);
}

// After cudaDeviceReset the device has a new context; the op must configure the kernel there
// again (shared-memory limit, launch geometry) instead of trusting the old context's.
TEST(OutProjTest, WorksAfterDeviceReset) {
  H3_SKIP_WITHOUT_GPU();
  absl::StatusOr<Problem> p = MakeProblem(200, 256, 512, 9, DataKind::kExact, 9);
  ASSERT_TRUE(p.ok()) << p.status();
  {
    absl::StatusOr<DeviceProblem> d = Upload(*p);  // freed before the reset
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_TRUE(MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d), nullptr, CheckMode::kChecked).ok());
  }
  ASSERT_EQ(cudaDeviceReset(), cudaSuccess);
  absl::StatusOr<DeviceProblem> d = Upload(*p);
  ASSERT_TRUE(d.ok()) << d.status();
  const absl::Status st = MinimaxH3Nvfp4OutProj(testbed::ArgsFor(*d), nullptr, CheckMode::kChecked);
  ASSERT_TRUE(st.ok()) << st;
  ExpectMatchesEmulator(*p, *d, RunOptions(), true, 200);
}

// Two streams at once, each call with its own ready flags (nothing shared): different problems,
// launches interleaved with no host synchronization, both results bit-exact.
TEST(OutProjTest, TwoStreamsConcurrently) {
  H3_SKIP_WITHOUT_GPU();
  absl::StatusOr<Problem> p1 = MakeProblem(1100, 512, 1024, 9, DataKind::kExact, 21);
  absl::StatusOr<Problem> p2 = MakeProblem(700, 512, 1024, 9, DataKind::kExact, 22);
  ASSERT_TRUE(p1.ok() && p2.ok());
  absl::StatusOr<DeviceProblem> d1 = Upload(*p1), d2 = Upload(*p2);
  ASSERT_TRUE(d1.ok() && d2.ok());
  cudaStream_t s1, s2;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
  for (bool caller_flags : {false, true}) {
    ASSERT_TRUE(testbed::Poison(*d1).ok() && testbed::Poison(*d2).ok());
    testbed::DeviceBuffer<uint8_t> f1, f2;
    OutProjArgs a1 = testbed::ArgsFor(*d1), a2 = testbed::ArgsFor(*d2);
    if (caller_flags) {  // garbage on entry: the op zeroes them on its stream
      const int64_t b1 = OutProjReadyFlagBytes(p1->shape.m),
                    b2 = OutProjReadyFlagBytes(p2->shape.m);
      ASSERT_TRUE(f1.Alloc(b1).ok() && f1.Fill(0xA5).ok());
      ASSERT_TRUE(f2.Alloc(b2).ok() && f2.Fill(0x5A).ok());
      a1.ready_flags = Operand::Of(f1.get(), {b1});
      a2.ready_flags = Operand::Of(f2.get(), {b2});
    }
    for (int rep = 0; rep < 4; ++rep) {
      ASSERT_TRUE(MinimaxH3Nvfp4OutProj(a1, s1).ok());
      ASSERT_TRUE(MinimaxH3Nvfp4OutProj(a2, s2).ok());
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ExpectMatchesEmulator(*p1, *d1, RunOptions(), true, 1100);
    ExpectMatchesEmulator(*p2, *d2, RunOptions(), true, 700);
  }
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

// Every kernel leaves its ready flags all zero (ready_flags.h ResetAtExit), so calls that reuse
// one buffer on one stream may skip the memset (ready_flags_zeroed): garbage zeroed by the first
// call, then calls of two M values alternating on that buffer without a memset or a host sync,
// with every config and both sm_90 emulations; the buffer read back all zero, results exact.
TEST(OutProjTest, ReusedFlagsLeftZero) {
  H3_SKIP_WITHOUT_GPU();
  absl::StatusOr<Problem> p1 = MakeProblem(300, 512, 1024, 9, DataKind::kExact, 31);
  absl::StatusOr<Problem> p2 = MakeProblem(33, 512, 1024, 9, DataKind::kExact, 32);
  ASSERT_TRUE(p1.ok() && p2.ok());
  absl::StatusOr<DeviceProblem> d1 = Upload(*p1), d2 = Upload(*p2);
  ASSERT_TRUE(d1.ok() && d2.ok());
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  testbed::DeviceBuffer<uint8_t> flags;
  ASSERT_TRUE(flags.Alloc(OutProjReadyFlagBytes(p1->shape.m)).ok());
  for (Sm90Emulation emu : {Sm90Emulation::kFaithful, Sm90Emulation::kFast}) {
    for (OutProjTile tile : EveryTile()) {
      if (emu == Sm90Emulation::kFast && tile != OutProjTile::kAuto) continue;  // one tile
      SCOPED_TRACE(out_proj_test::ParamSuffix(emu, tile));
      ASSERT_TRUE(flags.Fill(0xA5).ok());
      ASSERT_TRUE(testbed::Poison(*d1).ok() && testbed::Poison(*d2).ok());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the fills ran on the legacy stream
      OutProjArgs a1 = testbed::ArgsFor(*d1), a2 = testbed::ArgsFor(*d2);
      for (OutProjArgs* a : {&a1, &a2}) {
        a->sm90_emulation = emu;
        a->tile = tile;
        a->ready_flags = Operand::Of(flags.get(), {static_cast<int64_t>(flags.count())});
      }
      ASSERT_TRUE(MinimaxH3Nvfp4OutProj(a1, s).ok());  // zeroes the garbage
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      const std::vector<uint8_t> zeros(flags.count(), 0);
      EXPECT_EQ(Host(flags), zeros) << "after the first call";
      a1.ready_flags_zeroed = a2.ready_flags_zeroed = true;
      for (int rep = 0; rep < 3; ++rep) {
        ASSERT_TRUE(MinimaxH3Nvfp4OutProj(a2, s).ok());
        ASSERT_TRUE(MinimaxH3Nvfp4OutProj(a1, s).ok());
      }
      ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
      EXPECT_EQ(Host(flags), zeros) << "after the calls without a memset";
      ExpectMatchesEmulator(*p1, *d1, RunOptions(), true, 300);
      ExpectMatchesEmulator(*p2, *d2, RunOptions(), true, 33);
    }
  }
  cudaStreamDestroy(s);
}

TEST(OutProjTest, ReadyFlagBytes) {
  const auto up16 = [](int64_t b) { return (b + 15) / 16 * 16; };
  EXPECT_EQ(OutProjReadyFlagBytes(0), 128);  // the claim counter's own 128-byte line
  // + per m-tile 8 k-chunk flags and the branch's l-ready word, + the branch's counter per 8-row
  // group (ready_flags.h), to 16 bytes
  EXPECT_EQ(OutProjReadyFlagBytes(1), up16(128 + 32 + 4 + 4));
  EXPECT_EQ(OutProjReadyFlagBytes(128 * 4), 128 + 4 * (32 + 4) + 64 * 4);
  EXPECT_EQ(OutProjReadyFlagBytes(128 * 4 + 1), up16(128 + 5 * (32 + 4) + 65 * 4));
  EXPECT_EQ(OutProjReadyFlagBytes(kOutProjMaxM),
            up16(128 + ((kOutProjMaxM + 127) / 128) * (32 + 4) + ((kOutProjMaxM + 7) / 8) * 4));
}

}  // namespace
}  // namespace h3
