// What the fused op is timed against, in the same run, at the MiniMax-H3 shape:
//
//   copy           cudaMemcpyAsync D2D of attn_out: the measured bandwidth roofline
//   quantize       the kernel's own standalone quantizer (kernels/launch/quantize_kernel.h),
//                  NVFP4 block-16
//   bf16_gemm      cuBLASLt bf16 GEMM alone, as PyTorch's `x @ w.T` calls it (tuned, cublas_lt.h)
//   bf16_unfused   that GEMM (bf16 out) + the standalone epilogue kernel (bench_kernels.cuh)
//   nvfp4_unfused  the kernel's quantizer + a swizzle of the activation scales into cuBLASLt's
//                  128x4 layout + cuBLASLt NVFP4 GEMM (VEC16_UE4M3, f32 out) + the epilogue
//                  (sm_100+ only; skipped with a message elsewhere)
//   fused          minimax_h3_nvfp4_out_proj (//kernels:out_proj), one launch, the registry's
//                  default tile, OutProjTile::k128x128Staged (the staged epilogue; named, not
//                  kAuto, which follows the tuning cache)
//   fused_128x256_lockstep  the same with OutProjTile::k128x256Lockstep (groups in step)
//   fused_128x256  the same with OutProjTile::k128x256 (skewed consumer groups)
//   fused_128x128  the same with OutProjTile::k128x128
//   fused_no_epilogue  timing only: `fused` without any epilogue (timing_variants.h kNoEpilogue;
//                  out not written, no t hand-off): fused minus this = what the default's
//                  staged epilogue still exposes
//   fused_128x256_no_epilogue  the same for the skewed config
//   fused_128x256_one_group  timing only: fused_128x256_no_epilogue with the second consumer
//                  warpgroup's MMAs off too (timing_variants.h kOneGroupMma); its `one_warp_mma`
//                  counter = the time of fused_128x256_no_epilogue / (2 x this): the tensor rate
//                  one MMA warp per sub-partition sustains, the skewed schedule's one assumption
//                  (its alone phases)
//   fused_128x256_lockstep_no_epilogue  the lockstep config's exposed epilogue (the model's
//                  epilogue_ratio input).
// Rows of earlier results/: up to 2026-12-01 `fused` was the lockstep 128x256 (the skewed rows
// fused_128x256, fused_128x256_no_epilogue, fused_128x256_one_group); from then to the staged
// default (2026-12-03) `fused`, fused_no_epilogue and fused_one_group were the skewed config's,
// and the staged rows fused_128x128_staged and fused_128x128_staged_no_epilogue.

#ifndef H3_HARNESS_BENCH_CONTENDERS_H_
#define H3_HARNESS_BENCH_CONTENDERS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "harness/bench/context.h"

namespace h3::bench {

struct Contender {
  const char* name;
  // The GEMM-pipeline work and the bytes it must move at least, for the roofline columns.
  double (*flops)(int64_t m);
  double (*bytes)(int64_t m);
  // OK when it can run here; otherwise why not (the benchmark is skipped with that message).
  // Creates (and tunes) what it needs on first use.
  absl::Status (*prepare)(BenchContext& ctx, const Inputs& in);
  // Runs once on set 0 and checks the result (through ctx.CheckOnce: once per M).
  absl::Status (*check)(BenchContext& ctx, const Inputs& in);
  // Enqueues one call on `set`, asynchronously, on ctx.stream().
  absl::Status (*enqueue)(BenchContext& ctx, const Inputs& in, const RotationSet& set);
  // The registry config (kernels/device/tiles.h) it times whole, by name: what --write_tune_cache
  // chooses among; nullptr for the baselines and the timing-only variants.
  const char* tile;
};

// In registration (and so output) order: baselines first, so the fused op's ratio columns can
// refer to their times.
absl::Span<const Contender> Contenders();

}  // namespace h3::bench

#endif  // H3_HARNESS_BENCH_CONTENDERS_H_
