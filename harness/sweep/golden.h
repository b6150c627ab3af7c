// Golden cases: testdata/'s vectors, made by an independent implementation of the contract
// (testdata/make_goldens.py: PyTorch and ml_dtypes casts, exact integer GEMM), replayed through
// the backend under test.

#ifndef H3_HARNESS_SWEEP_GOLDEN_H_
#define H3_HARNESS_SWEEP_GOLDEN_H_

#include <string>
#include <vector>

#include "harness/sweep/runner.h"

namespace h3::sweep {

struct GoldenCase {
  enum class Kind { kOp, kQuant };
  Kind kind = Kind::kOp;
  std::string name;    // "golden/op_exact", "golden/quant_gauss_cal"
  std::string prefix;  // file prefix: "<testdata>/op_exact" -> "<prefix>_attn_out.npy", ...
};

// The whole-op ("op") and quantizer ("quant") cases listed in <testdata_dir>/MANIFEST.txt, in
// its order; empty when there is no manifest. Other kinds (formats, swizzle, weight) are the
// emulator's own golden test, not the sweep's.
std::vector<GoldenCase> FindGoldenCases(const std::string& testdata_dir);

// Runs one golden case.
// op, device == nullptr: the emulator's exact path must reproduce out, act_q and act_sf bit for
//   bit (the golden's out is the epilogue of the exact accumulator rounded once, as the exact
//   path's) and its fast path must lie inside the contract's envelope.
// op, device: act_q/act_sf bit for bit, out inside the envelope.
// quant: the golden's activations (cols a multiple of 16) quantized by the emulator
//   (QuantizeRows) or, on a device, by the whole op (a zero weight, N = 128): codes and scales
//   bit for bit. Either way the golden out must itself lie inside the emulator's envelope.
CaseResult RunGoldenCase(const GoldenCase& golden, DeviceBackend* device);

}  // namespace h3::sweep

#endif  // H3_HARNESS_SWEEP_GOLDEN_H_
