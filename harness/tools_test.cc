// Runs the real //harness:op and //harness:quantize_weight binaries on tiny
// generated cases, on the golden op case of testdata/, and on bad inputs; and
// //harness:sweep and //harness:probe on bad command lines.

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/version.h"
#include "emulator/check.h"
#include "emulator/formats.h"
#include "emulator/op.h"
#include "emulator/weight.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "harness/npy.h"

namespace h3 {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Runfile(const std::string& rel) {
  if (const char* d = std::getenv("H3_REPO_ROOT")) return absl::StrCat(d, "/", rel);
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && ws != nullptr) {
    return absl::StrCat(srcdir, "/", ws, "/", rel);
  }
  return rel;
}

std::string Tmp() {
  const char* t = std::getenv("TEST_TMPDIR");
  return t != nullptr ? t : ::testing::TempDir();
}

struct ToolRun {
  int code;
  std::string output;  // stdout and stderr
};

// Runs `tool` with `args` as if started in `cwd` under `bazel run`
// (BUILD_WORKING_DIRECTORY = cwd), from another working directory.
// hide_gpus: with CUDA_VISIBLE_DEVICES empty, as on a machine without a GPU.
ToolRun RunTool(const std::string& tool, const std::string& args, const std::string& cwd,
                bool hide_gpus = false) {
  const bool own_package = tool == "sweep" || tool == "probe";
  const std::string cmd = absl::StrCat(
      "cd / && ", hide_gpus ? "CUDA_VISIBLE_DEVICES= " : "", "BUILD_WORKING_DIRECTORY='", cwd,
      "' '",
      Runfile(own_package ? absl::StrCat("harness/", tool, "/", tool) : "harness/" + tool), "' ",
      args, " 2>&1");
  FILE* p = popen(cmd.c_str(), "r");
  ToolRun r{-1, ""};
  if (p == nullptr) return r;
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, got);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Deterministic bf16 data: values k/8 for small signed integers k.
std::vector<uint16_t> Bf16Data(int64_t count, uint32_t seed, float scale) {
  std::vector<uint16_t> v(count);
  uint32_t s = seed;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    const int k = static_cast<int>((s >> 8) % 97) - 48;
    x = F32ToBf16(static_cast<float>(k) * scale);
  }
  return v;
}

template <typename T>
std::vector<T> Read(const std::string& path) {
  absl::StatusOr<TypedArray<T>> a = ReadNpyAs<T>(path);
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? a->data : std::vector<T>{};
}

template <typename T>
void Write(const std::string& path, std::vector<int64_t> shape, const std::vector<T>& data) {
  ASSERT_TRUE(WriteNpy<T>(path, shape, data).ok()) << path;
}

constexpr int64_t kM = 5, kN = 128, kK = 256, kG = 3;

// Replaces `from` by `to` (the same length) in the header of the .npy file at `path`.
void PatchDescr(const std::string& path, const std::string& from, const std::string& to) {
  ASSERT_EQ(from.size(), to.size());
  std::FILE* f = std::fopen(path.c_str(), "r+b");
  ASSERT_NE(f, nullptr) << path;
  char head[128] = {};
  const size_t got = std::fread(head, 1, sizeof(head), f);
  const size_t at = std::string(head, got).find(from);
  ASSERT_NE(at, std::string::npos) << path;
  std::fseek(f, static_cast<long>(at), SEEK_SET);
  std::fwrite(to.data(), 1, to.size(), f);
  std::fclose(f);
}

// An int64 array of `n` zeros ('<i8', which the writer does not produce): an f8 file relabelled.
void WriteI8(const std::string& path, int64_t n) {
  Write<double>(path, {n}, std::vector<double>(n));
  PatchDescr(path, "<f8", "<i8");
}

// The bytes of every file under `dir` (relative name -> content): a folder's whole state.
std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string rel = fs::relative(e.path(), dir).string();
    if (!e.is_regular_file()) {
      files[rel] = "<dir>";
      continue;
    }
    std::FILE* f = std::fopen(e.path().c_str(), "rb");
    std::string bytes;
    char buf[4096];
    size_t got;
    while (f != nullptr && (got = std::fread(buf, 1, sizeof(buf), f)) > 0) bytes.append(buf, got);
    if (f != nullptr) std::fclose(f);
    files[rel] = bytes;
  }
  return files;
}

// A small op case in `dir`, the weight made by the quantize_weight tool.
void MakeCase(const std::string& dir) {
  fs::create_directories(dir);
  Write<uint16_t>(dir + "/w.npy", {kN, kK}, Bf16Data(kN * kK, 1, 1.f / 64));
  ToolRun q = RunTool("quantize_weight", "--weight=w.npy --out_dir=.", dir);
  ASSERT_EQ(q.code, 0) << q.output;
  EXPECT_THAT(q.output, HasSubstr("o_weight_sf.npy [128, 16]"));
  Write<uint16_t>(dir + "/attn_out.npy", {kM, kK}, Bf16Data(kM * kK, 2, 0.25f));
  Write<float>(dir + "/act_global_scale.npy", {1}, {2688.f / 12.f});
  Write<uint16_t>(dir + "/gate.npy", {kG, kN}, Bf16Data(kG * kN, 3, 1.f / 16));
  Write<int32_t>(dir + "/gate_index.npy", {kM},
                 {0, -1, 2, std::numeric_limits<int32_t>::min(), kG});
  Write<uint16_t>(dir + "/residual.npy", {kM, kN}, Bf16Data(kM * kN, 4, 1.f));
}

OpInputs InputsOf(const std::string& dir, std::vector<std::vector<uint16_t>>& u2,
                  std::vector<std::vector<uint8_t>>& u1, std::vector<int32_t>& gi) {
  u2 = {Read<uint16_t>(dir + "/attn_out.npy"), Read<uint16_t>(dir + "/gate.npy"),
        Read<uint16_t>(dir + "/residual.npy")};
  u1 = {Read<uint8_t>(dir + "/o_weight_q.npy"), Read<uint8_t>(dir + "/o_weight_sf.npy")};
  gi = Read<int32_t>(dir + "/gate_index.npy");
  OpInputs in;
  in.shape = OpShape{kM, kN, kK, kG};
  in.attn_out = u2[0];
  in.gate = u2[1];
  in.residual = u2[2];
  in.o_weight_q = u1[0];
  in.o_weight_sf = u1[1];
  in.o_weight_global_scale = Read<float>(dir + "/o_weight_global_scale.npy")[0];
  in.act_global_scale = Read<float>(dir + "/act_global_scale.npy")[0];
  in.gate_index = gi;
  return in;
}

TEST(ToolsTest, HelpDescribesFlagsAndFiles) {
  ToolRun op = RunTool("op", "--help", Tmp());
  EXPECT_THAT(op.output, HasSubstr("gate_index.npy"));
  EXPECT_THAT(op.output, HasSubstr("--backend"));
  EXPECT_THAT(op.output, HasSubstr("--gemm"));
  ToolRun qw = RunTool("quantize_weight", "--help", Tmp());
  EXPECT_THAT(qw.output, HasSubstr("o_weight_global_scale.npy"));
  EXPECT_THAT(qw.output, HasSubstr("--weight"));
}

TEST(ToolsTest, QuantizeWeightMatchesEmulator) {
  const std::string dir = Tmp() + "/qw";
  fs::create_directories(dir);
  struct Case {
    std::string file;
    bool bf16;
    int64_t n, k;
  };
  for (const Case& c : std::vector<Case>{{"wb.npy", true, 3, 64}, {"wf.npy", false, 130, 192}}) {
    SCOPED_TRACE(c.file);
    absl::StatusOr<QuantizedWeight> want;
    if (c.bf16) {
      const auto w = Bf16Data(c.n * c.k, 7, 0.01f);
      Write<uint16_t>(dir + "/" + c.file, {c.n, c.k}, w);
      want = QuantizeWeightBf16(w, c.n, c.k);
    } else {
      std::vector<float> w(c.n * c.k);
      for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.37f * i) * 3.f;
      Write<float>(dir + "/" + c.file, {c.n, c.k}, w);
      want = QuantizeWeightF32(w, c.n, c.k);
    }
    ASSERT_TRUE(want.ok());
    fs::remove_all(dir + "/out");
    ToolRun r =
        RunTool("quantize_weight", absl::StrCat("--weight=", c.file, " --out_dir=out/sub"), dir);
    ASSERT_EQ(r.code, 0) << r.output;
    absl::StatusOr<TypedArray<uint8_t>> sf = ReadNpyAs<uint8_t>(dir + "/out/sub/o_weight_sf.npy");
    ASSERT_TRUE(sf.ok()) << sf.status();
    EXPECT_EQ(sf->shape, (std::vector<int64_t>{(c.n + 127) / 128 * 128, (c.k / 16 + 3) / 4 * 4}));
    EXPECT_EQ(sf->data, want->sf);
    EXPECT_EQ(Read<uint8_t>(dir + "/out/sub/o_weight_q.npy"), want->q);
    const auto gs = Read<float>(dir + "/out/sub/o_weight_global_scale.npy");
    ASSERT_EQ(gs.size(), 1u);
    EXPECT_EQ(gs[0], want->global_scale);
  }
}

TEST(ToolsTest, OpEmulatorMatchesRunOp) {
  const std::string dir = Tmp() + "/op";
  MakeCase(dir);
  std::vector<std::vector<uint16_t>> u2;
  std::vector<std::vector<uint8_t>> u1;
  std::vector<int32_t> gi;
  const OpInputs in = InputsOf(dir, u2, u1, gi);
  for (const std::string gemm : {"fast", "exact"}) {
    SCOPED_TRACE(gemm);
    std::vector<uint16_t> out(kM * kN);
    std::vector<uint8_t> act_q(kM * kK / 2), act_sf(kM * kK / 16);
    ASSERT_TRUE(RunOp(in, {absl::MakeSpan(out), absl::MakeSpan(act_q), absl::MakeSpan(act_sf)},
                      gemm == "exact" ? GemmPath::kExact : GemmPath::kFastF32)
                    .ok());
    const std::string out_dir = "res_" + gemm;
    ToolRun r = RunTool(
        "op", absl::StrCat("--backend=emulator --gemm=", gemm, " --in_dir=. --out_dir=", out_dir),
        dir);
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr("M=5 N=128 K=256 G=3"));
    EXPECT_EQ(Read<uint16_t>(dir + "/" + out_dir + "/out.npy"), out);
    EXPECT_EQ(Read<uint8_t>(dir + "/" + out_dir + "/act_q.npy"), act_q);
    EXPECT_EQ(Read<uint8_t>(dir + "/" + out_dir + "/act_sf.npy"), act_sf);
  }
}

TEST(ToolsTest, OpReproducesTheGoldenCase) {
  // testdata/op_exact_*.npy under the tool's file names.
  const std::string dir = Tmp() + "/golden";
  fs::create_directories(dir + "/in");
  for (const char* name : {"attn_out", "o_weight_q", "o_weight_sf", "o_weight_global_scale",
                           "act_global_scale", "gate", "gate_index", "residual"}) {
    fs::copy_file(Runfile(absl::StrCat("testdata/op_exact_", name, ".npy")),
                  absl::StrCat(dir, "/in/", name, ".npy"), fs::copy_options::overwrite_existing);
  }
  ToolRun r = RunTool("op", "--in_dir=in --out_dir=out", dir);
  ASSERT_EQ(r.code, 0) << r.output;
  for (const char* name : {"out", "act_q", "act_sf"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<NpyArray> want =
        ReadNpy(Runfile(absl::StrCat("testdata/op_exact_", name, ".npy")));
    absl::StatusOr<NpyArray> got = ReadNpy(absl::StrCat(dir, "/out/", name, ".npy"));
    ASSERT_TRUE(want.ok() && got.ok());
    EXPECT_EQ(got->header.shape, want->header.shape);
    EXPECT_EQ(got->header.dtype, want->header.dtype);
    EXPECT_TRUE(got->data == want->data);
  }
}

TEST(ToolsTest, OpZeroRows) {
  const std::string dir = Tmp() + "/m0";
  MakeCase(dir);
  Write<uint16_t>(dir + "/attn_out.npy", {0, kK}, {});
  Write<int32_t>(dir + "/gate_index.npy", {0}, {});
  Write<uint16_t>(dir + "/residual.npy", {0, kN}, {});
  ToolRun r = RunTool("op", "--in_dir=. --out_dir=res", dir);
  ASSERT_EQ(r.code, 0) << r.output;
  absl::StatusOr<NpyArray> out = ReadNpy(dir + "/res/out.npy");
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->header.shape, (std::vector<int64_t>{0, kN}));
}

TEST(ToolsTest, OpBadInputs) {
  // Each case edits a fresh copy of a good input folder; the tool must fail
  // with exit status 1, name the file, and write nothing.
  struct Case {
    std::string what;
    std::function<void(const std::string&)> edit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"missing attn_out", [](const std::string& d) { fs::remove(d + "/attn_out.npy"); },
       "attn_out.npy: no such file"},
      {"missing gate_index", [](const std::string& d) { fs::remove(d + "/gate_index.npy"); },
       "gate_index.npy: no such file"},
      {"attn_out as f32",
       [](const std::string& d) {
         Write<float>(d + "/attn_out.npy", {kM, kK}, std::vector<float>(kM * kK));
       },
       "attn_out.npy: dtype is '<f4' (float32), expected '<u2' (uint16)"},
      {"gate_index as u2",
       [](const std::string& d) {
         Write<uint16_t>(d + "/gate_index.npy", {kM}, std::vector<uint16_t>(kM));
       },
       "gate_index.npy: dtype is '<u2' (uint16), expected '<i4' (int32)"},
      {"gate_index as int64", [](const std::string& d) { WriteI8(d + "/gate_index.npy", kM); },
       "gate_index.npy: dtype is '<i8', expected '<i4' (int32)"},
      {"attn_out big-endian",
       [](const std::string& d) { PatchDescr(d + "/attn_out.npy", "<u2", ">u2"); },
       "attn_out.npy: dtype is '>u2' (big-endian), expected '<u2' (uint16)"},
      {"gate is a directory",
       [](const std::string& d) {
         fs::remove(d + "/gate.npy");
         fs::create_directory(d + "/gate.npy");
       },
       "gate.npy: is a directory, expected a .npy file"},
      {"fortran order",
       [](const std::string& d) {
         PatchDescr(d + "/residual.npy", "'fortran_order': False", "'fortran_order': True ");
       },
       "residual.npy: fortran_order is True"},
      {"trailing bytes",
       [](const std::string& d) {
         std::FILE* f = std::fopen((d + "/o_weight_q.npy").c_str(), "ab");
         std::fputc(0, f);
         std::fclose(f);
       },
       "o_weight_q.npy: 1 unexpected trailing bytes"},
      {"K not a multiple of 64",
       [](const std::string& d) {
         Write<uint16_t>(d + "/attn_out.npy", {kM, 96}, std::vector<uint16_t>(kM * 96));
       },
       "attn_out.npy: shape (5, 96), expected (M, K)"},
      {"weight K mismatch",
       [](const std::string& d) {
         Write<uint8_t>(d + "/o_weight_q.npy", {kN, 64}, std::vector<uint8_t>(kN * 64));
       },
       "o_weight_q.npy: shape (128, 64), expected (N, K/2) = (N, 128)"},
      {"scales wrong shape",
       [](const std::string& d) {
         Write<uint8_t>(d + "/o_weight_sf.npy", {kN, 8}, std::vector<uint8_t>(kN * 8));
       },
       "o_weight_sf.npy: shape (128, 8), expected"},
      {"gate N mismatch",
       [](const std::string& d) {
         Write<uint16_t>(d + "/gate.npy", {kG, 64}, std::vector<uint16_t>(kG * 64));
       },
       "gate.npy: shape (3, 64), expected (G, N) = (G, 128)"},
      {"gate_index M mismatch",
       [](const std::string& d) {
         Write<int32_t>(d + "/gate_index.npy", {kM + 1}, std::vector<int32_t>(kM + 1));
       },
       "gate_index.npy: shape (6,), expected (M,) = (5,)"},
      {"residual 1-D",
       [](const std::string& d) {
         Write<uint16_t>(d + "/residual.npy", {kM * kN}, std::vector<uint16_t>(kM * kN));
       },
       "residual.npy: shape (640,), expected (M, N) = (5, 128)"},
      {"two act scales",
       [](const std::string& d) {
         Write<float>(d + "/act_global_scale.npy", {2}, {1.f, 2.f});
       },
       "act_global_scale.npy: shape (2,), expected (1,)"},
      {"NaN act scale",
       [](const std::string& d) {
         Write<float>(d + "/act_global_scale.npy", {1}, {std::nanf("")});
       },
       "act_global_scale.npy: value nan, expected a finite global scale > 0"},
      {"zero weight scale",
       [](const std::string& d) { Write<float>(d + "/o_weight_global_scale.npy", {1}, {0.f}); },
       "o_weight_global_scale.npy: value 0, expected a finite global scale > 0"},
      {"truncated file",
       [](const std::string& d) {
         fs::resize_file(d + "/residual.npy", fs::file_size(d + "/residual.npy") - 1);
       },
       "residual.npy: truncated data"},
      {"not a .npy",
       [](const std::string& d) {
         FILE* f = std::fopen((d + "/gate.npy").c_str(), "w");
         std::fputs("gate", f);
         std::fclose(f);
       },
       "gate.npy: not a .npy file"},
  };
  const std::string base = Tmp() + "/bad_base";
  MakeCase(base);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string dir = Tmp() + "/bad";
    fs::remove_all(dir);
    fs::copy(base, dir, fs::copy_options::recursive);
    c.edit(dir);
    ToolRun r = RunTool("op", "--in_dir=. --out_dir=res", dir);
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message));
    EXPECT_FALSE(fs::exists(dir + "/res")) << "wrote output on error";
  }
  // A missing input folder.
  ToolRun r = RunTool("op", "--in_dir=nowhere --out_dir=res", base);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.output, HasSubstr("nowhere: the input directory does not exist"));
}

TEST(ToolsTest, UsageErrors) {
  const std::string dir = Tmp() + "/usage";
  MakeCase(dir);
  struct Case {
    std::string tool, args, message;
  };
  const std::vector<Case> cases = {
      {"op", "--backend=tpu --in_dir=. --out_dir=res",
       "op: error: --backend must be emulator or gpu, got 'tpu'"},
      {"op", "--gemm=slow --in_dir=. --out_dir=res",
       "op: error: --gemm must be fast or exact, got 'slow'"},
      {"op", "--out_dir=res", "op: error: --in_dir must be a folder (required), got ''"},
      {"op", "--in_dir=.", "op: error: --out_dir must be a folder (required), got ''"},
      {"op", "--in_dir=. --out_dir=res extra",
       "op: error: unexpected argument 'extra': the tool takes flags only"},
      {"op", "--in_dir=. --out_dir=res --bogus=1", "op: error: unknown flag '--bogus=1'"},
      {"op", "--in_dir=. --out_dir=res -- extra", "op: error: unexpected argument 'extra'"},
      {"op", "--in_dir=. --out_dir", "op: error: --out_dir must be given a value, got none"},
      {"quantize_weight", "--out_dir=res",
       "quantize_weight: error: --weight must be a .npy file (required), got ''"},
      {"quantize_weight", "--weight=w.npy --out_dir=res --in_dir=.",
       "quantize_weight: error: unknown flag '--in_dir=.'"},
      {"sweep", "--filter=nomatch",
       "sweep: error: --filter must be a regex matching at least one case (see --list), got "
       "'nomatch'"},
      {"sweep", "--filter='('", "sweep: error: --filter must be an ECMAScript regex, got '('"},
      {"sweep", "--report=res.txt",
       "sweep: error: --report must be a path ending in .csv or .json, got"},
      {"sweep", "--report=res/sub/r.json",
       "sweep: error: --report must be a file in an existing folder"},
      {"sweep", "--seed=abc",
       "sweep: error: --seed must be an integer from 0 to 18446744073709551615, got 'abc'"},
      {"sweep", "--seed=-1",
       "sweep: error: --seed must be an integer from 0 to 18446744073709551615, got '-1'"},
      {"sweep", "--full=maybe", "sweep: error: --full must be true or false, got 'maybe'"},
      // With --list: flags are checked before anything, even a listing, is done.
      {"sweep", "--threads=-2 --list",
       "sweep: error: --threads must be >= 1, or 0 for all cores, got '-2'"},
      {"sweep", "--extra_m=12,-1",
       "sweep: error: --extra_m must be comma-separated integers >= 0, got '-1'"},
      {"sweep", "--sample_rows=1", "sweep: error: --sample_rows must be >= 2, got '1'"},
      {"sweep", "--backend=tpu",
       "sweep: error: --backend must be auto, gpu or emulator, got 'tpu'"},
      // Checked before the probe runs: the message, not a report, comes first.
      {"probe", "--json=res/p.json",
       "probe: error: --json must be a file in an existing folder, got '"},
      {"probe", "--max_failures=all",
       "probe: error: --max_failures must be an integer from -2147483648 to 2147483647, got "
       "'all'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    ToolRun r = RunTool(c.tool, c.args, dir);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message));
    EXPECT_FALSE(fs::exists(dir + "/res"));
  }
}

TEST(ToolsTest, HelpAndVersionExitZero) {
  for (const std::string tool : {"op", "quantize_weight", "sweep", "probe"}) {
    SCOPED_TRACE(tool);
    ToolRun v = RunTool(tool, "--version", Tmp());
    EXPECT_EQ(v.code, 0);
    EXPECT_EQ(v.output, absl::StrCat(tool, " ", kVersion, "\n"));
    ToolRun h = RunTool(tool, "--help", Tmp());
    EXPECT_EQ(h.code, 0);
    EXPECT_THAT(h.output, HasSubstr("Exit status"));
    EXPECT_THAT(h.output, HasSubstr("--version"));
  }
}

// The results appear together or not at all: a destination that cannot be replaced (here a
// folder named like a result) fails the run before any file is moved, whether the folder held
// an earlier result set (kept byte for byte) or nothing (nothing is left behind).
TEST(ToolsTest, OutputsAllOrNothing) {
  const std::string dir = Tmp() + "/atomic";
  MakeCase(dir);
  struct Case {
    std::string what, tool, args, blocker, message;
    bool earlier_run;  // the output folder holds an earlier, complete result set
  };
  const std::vector<Case> cases = {
      {"op, fresh folder", "op", "--in_dir=. --out_dir=res", "res/act_sf.npy",
       "res/act_sf.npy: is a directory, expected a file (or nothing) the results can replace",
       false},
      {"op, earlier results kept", "op", "--in_dir=. --out_dir=res", "res/act_q.npy",
       "res/act_q.npy: is a directory", true},
      {"op, out_dir is a file", "op", "--in_dir=. --out_dir=res/out.npy", "",
       "res/out.npy: is a file, expected a folder for the results", true},
      {"quantize_weight, fresh folder", "quantize_weight", "--weight=w.npy --out_dir=res",
       "res/o_weight_global_scale.npy", "res/o_weight_global_scale.npy: is a directory", false},
      {"quantize_weight, earlier results kept", "quantize_weight", "--weight=w.npy --out_dir=res",
       "res/o_weight_sf.npy", "res/o_weight_sf.npy: is a directory", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    fs::remove_all(dir + "/res");
    if (c.earlier_run) {
      const std::string first_args =
          c.tool == "op" ? "--in_dir=. --out_dir=res" : "--weight=w.npy --out_dir=res";
      ToolRun first = RunTool(c.tool, first_args, dir);
      ASSERT_EQ(first.code, 0) << first.output;
    } else {
      fs::create_directories(dir + "/res");
    }
    if (!c.blocker.empty()) {
      fs::remove(dir + "/" + c.blocker);
      fs::create_directories(dir + "/" + c.blocker);
    }
    // Different inputs, so that a half-written set would show.
    Write<uint16_t>(dir + "/w.npy", {kN, kK}, Bf16Data(kN * kK, 9, 1.f / 32));
    Write<uint16_t>(dir + "/residual.npy", {kM, kN}, Bf16Data(kM * kN, 10, 1.f));
    const auto before = Snapshot(dir + "/res");
    ToolRun r = RunTool(c.tool, c.args, dir);
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message));
    EXPECT_EQ(Snapshot(dir + "/res"), before) << "the output folder changed on error";
    Write<uint16_t>(dir + "/w.npy", {kN, kK}, Bf16Data(kN * kK, 1, 1.f / 64));
    Write<uint16_t>(dir + "/residual.npy", {kM, kN}, Bf16Data(kM * kN, 4, 1.f));
  }
}

TEST(ToolsTest, QuantizeWeightBadInputs) {
  const std::string dir = Tmp() + "/qbad";
  fs::create_directories(dir);
  std::vector<float> nan_w(16 * 64, 1.f);
  nan_w[100] = std::nanf("");
  Write<float>(dir + "/nan.npy", {16, 64}, nan_w);
  Write<int32_t>(dir + "/i4.npy", {16, 64}, std::vector<int32_t>(16 * 64));
  Write<uint16_t>(dir + "/k40.npy", {16, 40}, std::vector<uint16_t>(16 * 40));
  Write<uint16_t>(dir + "/k48.npy", {16, 48}, std::vector<uint16_t>(16 * 48));
  Write<uint16_t>(dir + "/3d.npy", {2, 16, 64}, std::vector<uint16_t>(2 * 16 * 64));
  struct Case {
    std::string file, message;
  };
  const std::vector<Case> cases = {
      {"missing.npy", "missing.npy: no such file"},
      {"i4.npy", "i4.npy: dtype is '<i4', expected '<u2' (bf16 bits) or '<f4'"},
      {"k40.npy", "k40.npy: shape (16, 40), expected (N, K)"},
      // A K the contract's quantizer takes but op refuses: refused at quantization.
      {"k48.npy", "k48.npy: shape (16, 48), expected (N, K) with N >= 1 and K > 0 a multiple of "
                  "64, as op takes it"},
      {"3d.npy", "3d.npy: shape (2, 16, 64), expected (N, K)"},
      {"nan.npy", "nan.npy: "},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    ToolRun r =
        RunTool("quantize_weight", absl::StrCat("--weight=", c.file, " --out_dir=res"), dir);
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message));
    EXPECT_FALSE(fs::exists(dir + "/res"));
  }
}

// --backend=gpu on a machine without a GPU is a failed run (exit status 1), not a usage error,
// in every tool. On a machine with a GPU, the tools are run with none visible
// (CUDA_VISIBLE_DEVICES empty): the driver then reports no GPU.
TEST(ToolsTest, GpuBackendWithoutGpu) {
  const bool driver = fs::exists("/dev/nvidiactl") || fs::exists("/dev/nvidia0");
  const std::string dir = Tmp() + "/nogpu";
  MakeCase(dir);
  struct Case {
    std::string tool, args, message;
  };
  // Without a driver: "no NVIDIA driver or GPU found"; with one: "no NVIDIA GPU found".
  const std::string no_gpu = driver ? "no NVIDIA GPU found" : "no NVIDIA driver or GPU found";
  const std::vector<Case> cases = {
      {"probe", "--backend=gpu", "probe: error: --backend=gpu: " + no_gpu},
      {"sweep", "--backend=gpu", "sweep: error: --backend=gpu: " + no_gpu},
      {"op", "--backend=gpu --in_dir=. --out_dir=res", "op: error: --backend=gpu: " + no_gpu},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.tool);
    ToolRun r = RunTool(c.tool, c.args, dir, /*hide_gpus=*/true);
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_THAT(r.output, HasSubstr(c.message));
    EXPECT_FALSE(fs::exists(dir + "/res"));
  }
}

TEST(ToolsTest, OpGpuBackend) {
  // Where the binary has a GPU backend and the machine a supported GPU, the
  // results are checked against the contract; elsewhere the tool must say
  // plainly why it cannot run and write nothing.
  const std::string dir = Tmp() + "/gpu";
  MakeCase(dir);
  fs::remove_all(dir + "/res");
  ToolRun r = RunTool("op", "--backend=gpu --in_dir=. --out_dir=res", dir);
  if (r.code != 0) {
    EXPECT_EQ(r.code, 1);
    EXPECT_THAT(r.output, HasSubstr("--backend=gpu"));
    if (!fs::exists("/dev/nvidiactl") && !fs::exists("/dev/nvidia0")) {
      // No driver node: the message must say so, not "driver version is insufficient".
      EXPECT_THAT(r.output, HasSubstr("no NVIDIA"));
      EXPECT_THAT(r.output, ::testing::Not(HasSubstr("insufficient")));
    }
    EXPECT_FALSE(fs::exists(dir + "/res"));
    GTEST_SKIP() << "no GPU backend here: " << r.output;
  }
  EXPECT_THAT(r.output, HasSubstr("op: gpu: "));
  std::vector<std::vector<uint16_t>> u2;
  std::vector<std::vector<uint8_t>> u1;
  std::vector<int32_t> gi;
  const OpInputs in = InputsOf(dir, u2, u1, gi);
  std::vector<uint16_t> out(kM * kN);
  std::vector<uint8_t> act_q(kM * kK / 2), act_sf(kM * kK / 16);
  ASSERT_TRUE(RunOp(in, {absl::MakeSpan(out), absl::MakeSpan(act_q), absl::MakeSpan(act_sf)}).ok());
  EXPECT_EQ(Read<uint8_t>(dir + "/res/act_q.npy"), act_q);
  EXPECT_EQ(Read<uint8_t>(dir + "/res/act_sf.npy"), act_sf);
  absl::StatusOr<OutEnvelope> env = ComputeOutEnvelope(in, {});
  ASSERT_TRUE(env.ok());
  const CompareReport rep = CompareOut(*env, Read<uint16_t>(dir + "/res/out.npy"), {});
  EXPECT_TRUE(rep.pass) << rep.first_mismatch;
}

}  // namespace
}  // namespace h3
