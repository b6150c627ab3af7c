// File plumbing of the command-line tools (//harness:op and
// //harness:quantize_weight): the op's arguments as .npy files in a folder,
// validated against each other with errors that name the file.

#ifndef H3_HARNESS_OP_IO_H_
#define H3_HARNESS_OP_IO_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/shape.h"
#include "emulator/op.h"

namespace h3 {

// The op's inputs, read from <dir>/attn_out.npy, o_weight_q.npy,
// o_weight_sf.npy, o_weight_global_scale.npy, act_global_scale.npy, gate.npy,
// gate_index.npy and residual.npy. M and K come from attn_out, N from
// o_weight_q, G from gate; every other file must agree (errors name the file,
// the expected and the found shape or dtype).
struct OpFiles {
  OpShape shape;
  std::vector<uint16_t> attn_out;    // [M, K]
  std::vector<uint8_t> o_weight_q;   // [N, K/2]
  std::vector<uint8_t> o_weight_sf;  // SwizzledScaleBytes(N, K/16)
  float o_weight_global_scale = 0.f;
  float act_global_scale = 0.f;
  std::vector<uint16_t> gate;       // [G, N]
  std::vector<int32_t> gate_index;  // [M]
  std::vector<uint16_t> residual;   // [M, N]
  OpInputs Inputs() const;
};
absl::StatusOr<OpFiles> LoadOpFiles(const std::string& dir);

// The op's results: out [M, N] bf16, act_q [M, K/2], act_sf [M, K/16].
struct OpResults {
  std::vector<uint16_t> out;
  std::vector<uint8_t> act_q;
  std::vector<uint8_t> act_sf;
};
// Writes out.npy, act_q.npy and act_sf.npy into `dir` (created if missing), all or none
// (harness/output_set.h).
absl::Status WriteOpResults(const std::string& dir, const OpShape& shape, const OpResults& results);

// The emulator backend: RunOp on the loaded files.
absl::StatusOr<OpResults> RunOpEmulator(const OpFiles& in, GemmPath path);

// quantize_weight: reads W ('<u2' bf16 bits or '<f4', shape [N, K]) from
// `weight_path` and writes o_weight_q.npy (u1 [N, K/2]), o_weight_sf.npy (u1
// [round_up(N,128), round_up(K/16,4)], the swizzled buffer) and
// o_weight_global_scale.npy ('<f4' [1]) into `out_dir`, all or none. Returns a
// one-line summary.
absl::StatusOr<std::string> QuantizeWeightFile(const std::string& weight_path,
                                               const std::string& out_dir);

}  // namespace h3

#endif  // H3_HARNESS_OP_IO_H_
