// The C++ emulator against the independent golden vectors of testdata/
// (made by make_goldens.py with PyTorch and ml_dtypes; see README.md), bit for
// bit. MANIFEST.txt lists the cases as "kind name" lines.

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "emulator/check.h"
#include "emulator/formats.h"
#include "emulator/gemm.h"
#include "emulator/op.h"
#include "emulator/quantize.h"
#include "emulator/swizzle.h"
#include "emulator/weight.h"
#include "gtest/gtest.h"
#include "harness/npy.h"

namespace h3 {
namespace {

std::string DataDir() {
  if (const char* d = std::getenv("H3_TESTDATA_DIR")) return d;
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && ws != nullptr) {
    return absl::StrCat(srcdir, "/", ws, "/testdata");
  }
  return "testdata";
}

std::string Path(const std::string& file) { return DataDir() + "/" + file; }

template <typename T>
TypedArray<T> Load(const std::string& file) {
  absl::StatusOr<TypedArray<T>> a = ReadNpyAs<T>(Path(file));
  if (!a.ok()) {
    ADD_FAILURE() << a.status();
    return {};
  }
  return *std::move(a);
}

std::vector<std::pair<std::string, std::string>> Manifest() {
  std::ifstream in(Path("MANIFEST.txt"));
  EXPECT_TRUE(in.good()) << "cannot open " << Path("MANIFEST.txt");
  std::vector<std::pair<std::string, std::string>> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string kind, name;
    ls >> kind >> name;
    cases.emplace_back(kind, name);
  }
  return cases;
}

std::vector<std::string> CasesOf(const std::string& kind) {
  std::vector<std::string> names;
  for (const auto& [k, n] : Manifest()) {
    if (k == kind) names.push_back(n);
  }
  return names;
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Bit-exact comparison of two equally long arrays; reports the first
// difference as (row, col) for rows of `row_len` elements.
template <typename T>
void ExpectSame(const std::string& what, absl::Span<const T> want, absl::Span<const T> got,
                int64_t row_len) {
  ASSERT_EQ(want.size(), got.size()) << what;
  int64_t bad = 0, first = -1;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::memcmp(&want[i], &got[i], sizeof(T)) != 0) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  if (bad > 0) {
    const int64_t rl = row_len > 0 ? row_len : 1;
    uint64_t w = 0, g = 0;
    std::memcpy(&w, &want[first], sizeof(T));
    std::memcpy(&g, &got[first], sizeof(T));
    ADD_FAILURE() << what << ": " << bad << " of " << want.size() << " differ; first at ["
                  << first / rl << ", " << first % rl << "]: golden 0x" << std::hex << w
                  << ", emulator 0x" << g;
  }
}

TEST(GoldenTest, ManifestCoversEveryFile) {
  const auto cases = Manifest();
  ASSERT_GE(cases.size(), 30u);
  std::set<std::string> names;
  for (const auto& c : cases) names.insert(c.second);
  int64_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(DataDir())) {
    const std::string f = entry.path().filename().string();
    if (entry.path().extension() != ".npy") continue;
    ++files;
    bool covered = false;
    for (const std::string& n : names) {
      covered |= f.rfind(n + "_", 0) == 0;
    }
    // formats_* files are named by their format, not a case name.
    covered |= f.rfind("formats_", 0) == 0;
    EXPECT_TRUE(covered) << f << " belongs to no MANIFEST.txt case";
  }
  EXPECT_GE(files, 100);
}

TEST(GoldenTest, Formats) {
  auto e4_in = Load<float>("formats_e4m3_in.npy");
  auto e4_out = Load<uint8_t>("formats_e4m3_out.npy");
  ASSERT_EQ(e4_in.data.size(), e4_out.data.size());
  std::vector<uint8_t> got(e4_in.data.size());
  for (size_t i = 0; i < got.size(); ++i) got[i] = F32ToE4M3(e4_in.data[i]);
  ExpectSame<uint8_t>("e4m3", e4_out.data, got, 0);

  auto e2_in = Load<float>("formats_e2m1_in.npy");
  auto e2_out = Load<uint8_t>("formats_e2m1_out.npy");
  got.assign(e2_in.data.size(), 0);
  for (size_t i = 0; i < got.size(); ++i) got[i] = F32ToE2M1(e2_in.data[i]);
  ExpectSame<uint8_t>("e2m1", e2_out.data, got, 0);

  auto bf_in = Load<float>("formats_bf16_in.npy");
  auto bf_out = Load<uint16_t>("formats_bf16_out.npy");
  std::vector<uint16_t> got16(bf_in.data.size());
  for (size_t i = 0; i < got16.size(); ++i) got16[i] = F32ToBf16(bf_in.data[i]);
  ExpectSame<uint16_t>("bf16", bf_out.data, got16, 0);

  // Decoders: NaN compares as NaN (payloads differ between libraries).
  auto e4_dec = Load<float>("formats_e4m3_decode.npy");
  ASSERT_EQ(e4_dec.data.size(), 256u);
  for (int b = 0; b < 256; ++b) {
    const float want = e4_dec.data[b], have = E4M3ToF32(b);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(have)) << b;
    } else {
      EXPECT_EQ(Bits(want), Bits(have)) << "e4m3 byte " << b;
    }
  }
  auto e2_dec = Load<float>("formats_e2m1_decode.npy");
  ASSERT_EQ(e2_dec.data.size(), 16u);
  for (int c = 0; c < 16; ++c) {
    EXPECT_EQ(Bits(e2_dec.data[c]), Bits(E2M1ToF32(c))) << "e2m1 code " << c;
  }
}

TEST(GoldenTest, Quantizer) {
  const auto cases = CasesOf("quant");
  ASSERT_GE(cases.size(), 10u);
  for (const std::string& name : cases) {
    SCOPED_TRACE(name);
    auto x = Load<uint16_t>(name + "_x.npy");
    auto gs = Load<float>(name + "_gs.npy");
    auto codes = Load<uint8_t>(name + "_codes.npy");
    auto scales = Load<uint8_t>(name + "_scales.npy");
    ASSERT_EQ(x.shape.size(), 2u);
    ASSERT_EQ(gs.data.size(), 1u);
    const int64_t rows = x.shape[0], cols = x.shape[1];
    ASSERT_EQ(codes.shape, (std::vector<int64_t>{rows, cols / 2}));
    ASSERT_EQ(scales.shape, (std::vector<int64_t>{rows, cols / 16}));
    std::vector<uint8_t> q(rows * cols / 2, 0xAA), s(rows * cols / 16, 0xAA);
    QuantizeRows(x.data, rows, cols, gs.data[0], absl::MakeSpan(q), absl::MakeSpan(s));
    ExpectSame<uint8_t>("scales", scales.data, s, cols / 16);
    ExpectSame<uint8_t>("codes", codes.data, q, cols / 2);
  }
}

TEST(GoldenTest, Swizzle) {
  const auto cases = CasesOf("swizzle");
  ASSERT_GE(cases.size(), 5u);
  for (const std::string& name : cases) {
    SCOPED_TRACE(name);
    auto lin = Load<uint8_t>(name + "_linear.npy");
    auto sw = Load<uint8_t>(name + "_swizzled.npy");
    ASSERT_EQ(lin.shape.size(), 2u);
    const int64_t rows = lin.shape[0], cols = lin.shape[1];
    ASSERT_EQ(sw.shape, (std::vector<int64_t>{(rows + 127) / 128 * 128, (cols + 3) / 4 * 4}));
    EXPECT_EQ(SwizzledScaleBytes(rows, cols), static_cast<int64_t>(sw.data.size()));
    ExpectSame<uint8_t>("swizzled", sw.data, SwizzleScales(lin.data, rows, cols), 0);
    ExpectSame<uint8_t>("unswizzled", lin.data, UnswizzleScales(sw.data, rows, cols), cols);
  }
}

template <typename T>
absl::StatusOr<QuantizedWeight> QuantizeWeight(absl::Span<const T> w, int64_t n, int64_t k);
template <>
absl::StatusOr<QuantizedWeight> QuantizeWeight(absl::Span<const uint16_t> w, int64_t n, int64_t k) {
  return QuantizeWeightBf16(w, n, k);
}
template <>
absl::StatusOr<QuantizedWeight> QuantizeWeight(absl::Span<const float> w, int64_t n, int64_t k) {
  return QuantizeWeightF32(w, n, k);
}

template <typename T>
void CheckWeight(const std::string& name) {
  SCOPED_TRACE(name);
  auto w = Load<T>(name + "_w.npy");
  auto q = Load<uint8_t>(name + "_q.npy");
  auto sf = Load<uint8_t>(name + "_sf.npy");
  auto gs = Load<float>(name + "_gs.npy");
  ASSERT_EQ(w.shape.size(), 2u);
  const int64_t n = w.shape[0], k = w.shape[1];
  absl::StatusOr<QuantizedWeight> got = QuantizeWeight<T>(absl::MakeConstSpan(w.data), n, k);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(gs.data.size(), 1u);
  EXPECT_EQ(Bits(gs.data[0]), Bits(got->global_scale)) << gs.data[0] << " vs " << got->global_scale;
  ExpectSame<uint8_t>("o_weight_q", q.data, got->q, k / 2);
  ExpectSame<uint8_t>("o_weight_sf", sf.data, got->sf, 0);
}

TEST(GoldenTest, WeightQuantizer) {
  const auto bf = CasesOf("weight_bf16");
  const auto f32 = CasesOf("weight_f32");
  ASSERT_GE(bf.size() + f32.size(), 4u);
  for (const std::string& name : bf) CheckWeight<uint16_t>(name);
  for (const std::string& name : f32) CheckWeight<float>(name);
}

struct OpCase {
  OpShape shape;
  TypedArray<uint16_t> attn_out, gate, residual, out;
  TypedArray<uint8_t> wq, wsf, act_q, act_sf;
  TypedArray<float> w_gs, act_gs;
  TypedArray<int32_t> gate_index;
  OpInputs Inputs() const {
    OpInputs in;
    in.shape = shape;
    in.attn_out = attn_out.data;
    in.o_weight_q = wq.data;
    in.o_weight_sf = wsf.data;
    in.o_weight_global_scale = w_gs.data.at(0);
    in.act_global_scale = act_gs.data.at(0);
    in.gate = gate.data;
    in.gate_index = gate_index.data;
    in.residual = residual.data;
    return in;
  }
};

OpCase LoadOp(const std::string& name) {
  OpCase c;
  c.attn_out = Load<uint16_t>(name + "_attn_out.npy");
  c.wq = Load<uint8_t>(name + "_o_weight_q.npy");
  c.wsf = Load<uint8_t>(name + "_o_weight_sf.npy");
  c.w_gs = Load<float>(name + "_o_weight_global_scale.npy");
  c.act_gs = Load<float>(name + "_act_global_scale.npy");
  c.gate = Load<uint16_t>(name + "_gate.npy");
  c.gate_index = Load<int32_t>(name + "_gate_index.npy");
  c.residual = Load<uint16_t>(name + "_residual.npy");
  c.out = Load<uint16_t>(name + "_out.npy");
  c.act_q = Load<uint8_t>(name + "_act_q.npy");
  c.act_sf = Load<uint8_t>(name + "_act_sf.npy");
  c.shape.m = c.attn_out.shape.at(0);
  c.shape.k = c.attn_out.shape.at(1);
  c.shape.n = c.wq.shape.at(0);
  c.shape.g = c.gate.shape.at(0);
  return c;
}

TEST(GoldenTest, WholeOp) {
  const auto cases = CasesOf("op");
  ASSERT_GE(cases.size(), 2u);
  for (const std::string& name : cases) {
    SCOPED_TRACE(name);
    const OpCase c = LoadOp(name);
    const OpShape& s = c.shape;
    const OpInputs in = c.Inputs();
    // The exact path reproduces the golden (RN of the exact accumulator) on
    // every case; the fast path on exact data (op_exact) too.
    for (GemmPath path : {GemmPath::kExact, GemmPath::kFastF32}) {
      SCOPED_TRACE(path == GemmPath::kExact ? "exact" : "fast");
      std::vector<uint16_t> out(s.m * s.n, 0xFFFF);
      std::vector<uint8_t> act_q(s.m * s.k / 2, 0xAA), act_sf(s.m * s.k / 16);
      ASSERT_TRUE(
          RunOp(in, {absl::MakeSpan(out), absl::MakeSpan(act_q), absl::MakeSpan(act_sf)}, path)
              .ok());
      ExpectSame<uint8_t>("act_q", c.act_q.data, act_q, s.k / 2);
      ExpectSame<uint8_t>("act_sf", c.act_sf.data, act_sf, s.k / 16);
      if (path == GemmPath::kExact || name == "op_exact") {
        ExpectSame<uint16_t>("out", c.out.data, out, s.n);
      }
    }
    // In place (out is residual), exact path.
    std::vector<uint16_t> buf = c.residual.data;
    OpInputs in_place = in;
    in_place.residual = buf;
    ASSERT_TRUE(RunOp(in_place, {absl::MakeSpan(buf), {}, {}}, GemmPath::kExact).ok());
    ExpectSame<uint16_t>("out in place", c.out.data, buf, s.n);
    // The golden out lies inside the contract's envelope.
    absl::StatusOr<OutEnvelope> env = ComputeOutEnvelope(in, {});
    ASSERT_TRUE(env.ok()) << env.status();
    const CompareReport r = CompareOut(*env, c.out.data, {});
    EXPECT_TRUE(r.pass) << r.first_mismatch;
  }
}

TEST(GoldenTest, ExactAccumulator) {
  const OpCase c = LoadOp("op_entropy");
  auto acc = Load<double>("op_entropy_acc_exact.npy");
  const OpShape& s = c.shape;
  ASSERT_EQ(acc.shape, (std::vector<int64_t>{s.m, s.n}));
  BlockScaledMatrix a{s.m, s.k, c.act_q.data, c.act_sf.data, ScaleLayout::kLinear};
  BlockScaledMatrix w{s.n, s.k, c.wq.data, c.wsf.data, ScaleLayout::kSwizzled128x4};
  const IntOperand ai = ToIntOperand(a), wi = ToIntOperand(w);
  const MatrixF32 f32 = GemmExactF32(ai, wi);
  int64_t bad = 0;
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      const ExactAcc e = ExactDot(ai, i, wi, j);
      ASSERT_FALSE(e.nan);
      // The golden is exact in float64 (|acc| * 2^20 < 2^53, asserted when
      // it was made), so the comparison is exact too.
      const double want = acc.data[i * s.n + j];
      const double have = std::ldexp(static_cast<double>(e.sum), -20);
      if (want != have || Bits(static_cast<float>(want)) != Bits(f32(i, j))) {
        if (bad++ == 0) {
          ADD_FAILURE() << absl::StrFormat("acc[%d, %d]: golden %.17g, emulator %.17g (f32 %a)", i,
                                           j, want, have, f32(i, j));
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

}  // namespace
}  // namespace h3
