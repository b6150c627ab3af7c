// The weight quantizer of docs/contract.md section 5 on .npy files:
//   ./bazelw run //harness:quantize_weight -- --weight=W.npy --out_dir=DIR

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "harness/cli.h"
#include "harness/op_io.h"
#include "harness/user_path.h"

ABSL_FLAG(std::string, weight, "",
          "W as .npy: '<u2' (bf16 bits) or '<f4', shape [N, K], K a multiple "
          "of 64 (the op's rule), every value finite. Relative paths are "
          "relative to where the command was started.");
ABSL_FLAG(std::string, out_dir, "",
          "Folder for o_weight_q.npy, o_weight_sf.npy and "
          "o_weight_global_scale.npy (created if missing).");

namespace {

constexpr char kUsage[] =
    R"(quantizes a weight W [N, K] to NVFP4 as quantize_minimax_h3_o_weight_nvfp4 does.

  quantize_weight --weight=W.npy --out_dir=DIR

Writes to --out_dir:
  o_weight_q.npy             u1  [N, K/2] E2M1x2 codes (low nibble = even k)
  o_weight_sf.npy            u1  [round_up(N,128), round_up(K/16,4)] UE4M3 block
                                          scales in the 128x4 swizzled layout
  o_weight_global_scale.npy  <f4 [1]      RN(RN(1 / amax(W)) * 2688), 1 when W is all zero
These are the weight files //harness:op reads. The three appear together or not
at all (written into a temporary folder inside --out_dir, then renamed).
Exit status: 0 on success (and for --help, --version), 1 when the weight is
missing or invalid (nothing is written then), 2 for a usage error.)";

int Fail(int code, const absl::Status& s) { return h3::PrintError("quantize_weight", code, s); }

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  if (std::optional<int> code = h3::ParseToolFlags("quantize_weight", argc, argv)) return *code;
  if (absl::GetFlag(FLAGS_weight).empty()) {
    return Fail(2, h3::FlagError("weight", "a .npy file (required)", ""));
  }
  if (absl::GetFlag(FLAGS_out_dir).empty()) {
    return Fail(2, h3::FlagError("out_dir", "a folder (required)", ""));
  }
  absl::StatusOr<std::string> summary =
      h3::QuantizeWeightFile(h3::ResolveUserPath(absl::GetFlag(FLAGS_weight)),
                             h3::ResolveUserPath(absl::GetFlag(FLAGS_out_dir)));
  if (!summary.ok()) return Fail(1, summary.status());
  std::printf("%s\n", summary->c_str());
  return 0;
}
