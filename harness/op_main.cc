// minimax_h3_nvfp4_out_proj on .npy files:
//   ./bazelw run //harness:op -- --backend=emulator --in_dir=DIR --out_dir=DIR
// See the usage text below (--help) for the files.

#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "harness/cli.h"
#include "harness/op_gpu.h"
#include "harness/op_io.h"
#include "harness/user_path.h"

ABSL_FLAG(std::string, backend, "emulator",
          "emulator: the bit-exact CPU emulator. gpu: the CUDA kernel on this "
          "machine's GPU (sm_120 native build, sm_90 validation build).");
ABSL_FLAG(std::string, in_dir, "",
          "Folder with the input files (see the usage text). Relative paths "
          "are relative to where the command was started.");
ABSL_FLAG(std::string, out_dir, "",
          "Folder for out.npy, act_q.npy and act_sf.npy (created if missing). "
          "Relative paths are relative to where the command was started.");
ABSL_FLAG(std::string, gemm, "fast",
          "Emulator GEMM: fast (Eigen f32 on the dequantized operands; within "
          "the contract's bound) or exact (exact accumulator rounded once to "
          "f32). Ignored by --backend=gpu.");

namespace {

constexpr char kUsage[] =
    R"(runs minimax_h3_nvfp4_out_proj on NumPy .npy files.

  op --backend=emulator|gpu --in_dir=DIR --out_dir=DIR [--gemm=fast|exact]

Reads from --in_dir (shapes come from the files; M, K from attn_out, N from
o_weight_q, G from gate):
  attn_out.npy               <u2 [M, K]   bf16 bits, K a multiple of 64
  o_weight_q.npy             u1  [N, K/2] E2M1x2 codes (low nibble = even k)
  o_weight_sf.npy            u1  [round_up(N,128), round_up(K/16,4)] 128x4-swizzled
                                          UE4M3 scales (or the same bytes flat)
  o_weight_global_scale.npy  <f4 [1]
  act_global_scale.npy       <f4 [1]
  gate.npy                   <u2 [G, N]   bf16 bits
  gate_index.npy             <i4 [M]      rows outside [0, G) copy residual
  residual.npy               <u2 [M, N]   bf16 bits
Writes to --out_dir:
  out.npy     <u2 [M, N]    bf16 bits
  act_q.npy   u1  [M, K/2]  activation codes
  act_sf.npy  u1  [M, K/16] activation scales, linear layout
quantize_weight (//harness:quantize_weight) makes the three o_weight_* files.
The three results appear together or not at all: they are written into a
temporary folder inside --out_dir and renamed into place at the end.
Exit status: 0 on success (and for --help, --version), 1 when an input is
missing or inconsistent, --backend=gpu finds no usable GPU, or the run fails
(nothing is written then), 2 for a usage error (unknown flag, bad flag value,
missing --in_dir / --out_dir).)";

int Fail(int code, const absl::Status& s) { return h3::PrintError("op", code, s); }

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  if (std::optional<int> code = h3::ParseToolFlags("op", argc, argv)) return *code;
  const std::string backend = absl::GetFlag(FLAGS_backend);
  const std::string gemm = absl::GetFlag(FLAGS_gemm);
  if (backend != "emulator" && backend != "gpu") {
    return Fail(2, h3::FlagError("backend", "emulator or gpu", backend));
  }
  if (gemm != "fast" && gemm != "exact") {
    return Fail(2, h3::FlagError("gemm", "fast or exact", gemm));
  }
  for (const auto& [flag, value] :
       {std::pair<const char*, std::string>{"in_dir", absl::GetFlag(FLAGS_in_dir)},
        {"out_dir", absl::GetFlag(FLAGS_out_dir)}}) {
    if (value.empty()) return Fail(2, h3::FlagError(flag, "a folder (required)", value));
  }
  const std::string in_dir = h3::ResolveUserPath(absl::GetFlag(FLAGS_in_dir));
  const std::string out_dir = h3::ResolveUserPath(absl::GetFlag(FLAGS_out_dir));

  absl::StatusOr<h3::OpFiles> in = h3::LoadOpFiles(in_dir);
  if (!in.ok()) return Fail(1, in.status());
  const h3::OpShape& s = in->shape;

  std::string ran;
  absl::StatusOr<h3::OpResults> results;
  if (backend == "emulator") {
    results =
        h3::RunOpEmulator(*in, gemm == "exact" ? h3::GemmPath::kExact : h3::GemmPath::kFastF32);
    ran = absl::StrCat("emulator (", gemm, " GEMM)");
  } else {
    results = h3::RunOpGpu(*in, &ran);
    ran = absl::StrCat("gpu: ", ran);
  }
  if (!results.ok()) return Fail(1, results.status());
  if (absl::Status st = h3::WriteOpResults(out_dir, s, *results); !st.ok()) {
    return Fail(1, st);
  }
  std::printf("op: %s, M=%lld N=%lld K=%lld G=%lld: %s -> %s\n", ran.c_str(),
              static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k),
              static_cast<long long>(s.g), in_dir.c_str(), out_dir.c_str());
  return 0;
}
