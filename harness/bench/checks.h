// Each contender's results, checked once per M on rotation set 0 before it is timed: against the
// CPU emulator (emulator/check.h) on the sampled rows, or, for the unquantized bf16 pipeline that
// computes something else by design, against a double-precision reference of its own math.
// OK when it passes; otherwise an error saying what differs, where.

#ifndef H3_HARNESS_BENCH_CHECKS_H_
#define H3_HARNESS_BENCH_CHECKS_H_

#include "absl/status/status.h"
#include "harness/bench/inputs.h"

namespace h3::bench {

// act_q / act_sf (linear) of set 0 equal the emulator's quantization bit for bit (smoothed: of
// x' = bf16(attn (x) act_smooth), contract section 12).
absl::Status CheckQuantized(const Inputs& in, bool smoothed = false);

// out of set 0 lies inside the contract's envelope (emulator ComputeOutEnvelope; smoothed: the
// op with in.host.act_smooth; branch: with in.host.lora_down / lora_up).
absl::Status CheckOutInEnvelope(const Inputs& in, bool smoothed = false, bool branch = false);

// out of set 0 is the bf16 pipeline's result: bf16(residual + bf16(gate * bf16(attn @ w_bf16^T)))
// within the bf16 GEMM's rounding (relative 2^-7 of the sum of |products|, plus the two
// epilogue roundings). Downloads the bf16 weight (77 MB).
absl::Status CheckBf16Pipeline(const Inputs& in);

}  // namespace h3::bench

#endif  // H3_HARNESS_BENCH_CHECKS_H_
