#include "harness/bench/contenders.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/operands.h"
#include "core/scale_layout.h"
#include "harness/bench/bench_kernels.cuh"
#include "harness/bench/checks.h"
#include "harness/bench/timing_variants.h"
#include "kernels/out_proj_internal.h"
#include "kernels/launch/quantize_kernel.h"
#include "kernels/device/tiles.h"

namespace h3::bench {
namespace {

using Kind = LtMatmul::Kind;

// alpha of the NVFP4 GEMM: 1 / (act_gs * w_gs), each step rounded to f32 (contract section 6).
const float kNvfp4Alpha = 1.f / (kActGs * kWeightGs);

absl::Status Sync(const BenchContext& c) {
  return testbed::CudaStatus(cudaStreamSynchronize(c.stream()), "cudaStreamSynchronize");
}

double NoFlops(int64_t) { return 0; }
double GemmFlops(int64_t m) { return 2.0 * m * kN * BenchK(); }
absl::Status Ready(BenchContext&, const Inputs&) { return absl::OkStatus(); }

// ---- copy: the bandwidth roofline (nothing to check).
double CopyBytes(int64_t m) { return 2.0 * m * BenchK() * 2; }
absl::Status NoCheck(BenchContext&, const Inputs&) { return absl::OkStatus(); }
absl::Status EnqueueCopy(BenchContext& c, const Inputs&, const RotationSet& s) {
  return testbed::CudaStatus(cudaMemcpyAsync(s.o_f32.get(), s.attn.get(), s.attn.bytes(),
                                             cudaMemcpyDeviceToDevice, c.stream()),
                             "cudaMemcpyAsync (copy)");
}

// ---- quantize: the kernel's standalone quantizer, linear scales.
double QuantizeBytes(int64_t m) {
  return m * BenchK() * 2.0 + m * BenchK() / 2.0 + m * BenchK() / 16.0;
}
absl::Status EnqueueQuantize(BenchContext& c, const Inputs& in, const RotationSet& s) {
  return testbed::CudaStatus(
      kernels::LaunchQuantizeNvfp4(s.attn.get(), in.m, BenchK(), s.act_gs.get(), s.act_q.get(),
                                   s.act_sf.get(), c.stream()),
      "LaunchQuantizeNvfp4");
}
absl::Status CheckQuantize(BenchContext& c, const Inputs& in) {
  return c.CheckOnce("quantize", in.m, "emulator QuantizeRows, bit-exact, sampled rows", [&] {
    H3_RETURN_IF_ERROR(EnqueueQuantize(c, in, *in.sets[0]));
    H3_RETURN_IF_ERROR(Sync(c));
    return CheckQuantized(in);
  });
}

// ---- bf16: cuBLASLt GEMM (bf16 out), then the standalone epilogue.
absl::StatusOr<LtMatmul*> Bf16Gemm(BenchContext& c, const Inputs& in) {
  return c.Gemm(Kind::kBf16, in, [&c](LtMatmul& g, int algo, const RotationSet& s) {
    return g.Enqueue(s.w_bf16.get(), s.attn.get(), s.o_bf16.get(), 1.f, c.stream(), algo);
  });
}
double Bf16GemmBytes(int64_t m) { return m * BenchK() * 2.0 + kN * BenchK() * 2.0 + m * kN * 2.0; }
// + o read back, residual read, out written.
double Bf16UnfusedBytes(int64_t m) { return Bf16GemmBytes(m) + 3 * m * kN * 2.0; }
absl::Status PrepareBf16(BenchContext& c, const Inputs& in) { return Bf16Gemm(c, in).status(); }
absl::Status EnqueueBf16Gemm(BenchContext& c, const Inputs& in, const RotationSet& s) {
  absl::StatusOr<LtMatmul*> g = Bf16Gemm(c, in);
  H3_RETURN_IF_ERROR(g.status());
  return (*g)->Enqueue(s.w_bf16.get(), s.attn.get(), s.o_bf16.get(), 1.f, c.stream());
}
absl::Status EnqueueBf16Unfused(BenchContext& c, const Inputs& in, const RotationSet& s) {
  H3_RETURN_IF_ERROR(EnqueueBf16Gemm(c, in, s));
  return testbed::CudaStatus(
      LaunchEpilogueBf16(s.o_bf16.get(), s.gate.get(), s.gate_index.get(), s.residual.get(),
                         s.out.get(), in.m, kN, kG, c.stream()),
      "LaunchEpilogueBf16");
}
// One check for both bf16 contenders: the GEMM's output is checked through the epilogue.
absl::Status CheckBf16(BenchContext& c, const Inputs& in) {
  return c.CheckOnce("bf16_pipeline", in.m, "double-precision reference, sampled rows", [&] {
    H3_RETURN_IF_ERROR(EnqueueBf16Unfused(c, in, *in.sets[0]));
    H3_RETURN_IF_ERROR(Sync(c));
    return CheckBf16Pipeline(in);
  });
}

// ---- nvfp4: quantize, swizzle the scales, cuBLASLt block-scaled GEMM (f32 out), epilogue.
absl::Status EnqueueQuantizeSwizzled(BenchContext& c, const Inputs& in, const RotationSet& s) {
  H3_RETURN_IF_ERROR(EnqueueQuantize(c, in, s));
  return testbed::CudaStatus(
      LaunchSwizzleScales(s.act_sf.get(), in.m, BenchK() / 16, s.act_sf_swz.get(), c.stream()),
      "LaunchSwizzleScales");
}
absl::Status Nvfp4Call(const BenchContext& c, LtMatmul& g, int algo, const RotationSet& s) {
  H3_RETURN_IF_ERROR(g.SetScales(s.w_sf.get(), s.act_sf_swz.get()));
  return g.Enqueue(s.w_q.get(), s.act_q.get(), s.o_f32.get(), kNvfp4Alpha, c.stream(), algo);
}
absl::StatusOr<LtMatmul*> Nvfp4Gemm(BenchContext& c, const Inputs& in) {
  return c.Gemm(Kind::kNvfp4, in, [&c](LtMatmul& g, int algo, const RotationSet& s) {
    return Nvfp4Call(c, g, algo, s);
  });
}
// The fused op's bytes + o (f32) written and read back.
double Nvfp4UnfusedBytes(int64_t m) { return FusedBytes(m) + 2 * m * kN * 4.0; }
absl::Status PrepareNvfp4(BenchContext& c, const Inputs& in) {
  const cudaDeviceProp& p = c.device().prop;
  if (p.major < 10) {
    return absl::UnimplementedError(absl::StrFormat(
        "cuBLASLt NVFP4 (VEC16_UE4M3) needs sm_100 or sm_120; this is sm_%d%d: skipped", p.major,
        p.minor));
  }
  // Every set's act_q / act_sf_swz must be current before the tuning calls read them.
  for (const auto& s : in.sets) H3_RETURN_IF_ERROR(EnqueueQuantizeSwizzled(c, in, *s));
  H3_RETURN_IF_ERROR(Sync(c));
  return Nvfp4Gemm(c, in).status();
}
absl::Status EnqueueNvfp4Unfused(BenchContext& c, const Inputs& in, const RotationSet& s) {
  H3_RETURN_IF_ERROR(EnqueueQuantizeSwizzled(c, in, s));
  absl::StatusOr<LtMatmul*> g = Nvfp4Gemm(c, in);
  H3_RETURN_IF_ERROR(g.status());
  H3_RETURN_IF_ERROR(Nvfp4Call(c, **g, -1, s));
  return testbed::CudaStatus(
      LaunchEpilogueF32(s.o_f32.get(), s.gate.get(), s.gate_index.get(), s.residual.get(),
                        s.out.get(), in.m, kN, kG, c.stream()),
      "LaunchEpilogueF32");
}
absl::Status CheckNvfp4(BenchContext& c, const Inputs& in) {
  return c.CheckOnce("nvfp4_unfused", in.m, "emulator envelope of out, sampled rows", [&] {
    H3_RETURN_IF_ERROR(EnqueueNvfp4Unfused(c, in, *in.sets[0]));
    H3_RETURN_IF_ERROR(Sync(c));
    return CheckOutInEnvelope(in);
  });
}

// ---- fused: the op, one launch.
// variant: a testonly timing variant's kernels (timing_variants.h) instead of the product's.
absl::Status RunFused(BenchContext& c, const Inputs& in, const RotationSet& s, CheckMode mode,
                      OutProjTile tile, const TimingVariant* variant = nullptr,
                      bool smoothed = false, bool branch = false) {
  OutProjArgs a;
  a.sm90_emulation = c.options().sm90_emulation;
  a.tile = tile;
  const int64_t m = in.m, n = kN, k = BenchK();
  a.attn_out = Operand::Of(s.attn.get(), {m, k});
  a.o_weight_q = Operand::Of(s.w_q.get(), {n, k / 2});
  a.o_weight_sf = Operand::Of(s.w_sf.get(), {SwizzledScaleBytes(n, k / 16)});
  a.o_weight_global_scale_value = kWeightGs;
  a.act_global_scale = Operand::Of(s.act_gs.get(), {1});
  a.gate = Operand::Of(s.gate.get(), {kG, n});
  a.gate_index = Operand::Of(s.gate_index.get(), {m});
  a.residual = Operand::Of(s.residual.get(), {m, n});
  a.out = Operand::Of(s.out.get(), {m, n});
  a.act_q = Operand::Of(s.act_q.get(), {m, k / 2});
  a.act_sf = Operand::Of(s.act_sf.get(), {m, k / 16});
  if (smoothed) a.act_smooth = Operand::Of(in.act_smooth.get(), {k});
  if (branch) {
    a.lora_down = Operand::Of(in.lora_down.get(), {kBenchRank, k});
    a.lora_up = Operand::Of(in.lora_up.get(), {n, kBenchRank});
  }
  if (variant != nullptr) {
    return internal::RunOutProj(a, c.stream(), mode, TimingKernels(*variant));
  }
  return MinimaxH3Nvfp4OutProj(a, c.stream(), mode);
}
absl::Status PrepareFused(BenchContext& c, const Inputs&) {
  return OutProjBackendName(c.options().sm90_emulation).status();  // unsupported device: why
}
// A fused row's name: `fused` for the registry's default, else fused_<registry name>; then the
// timing variant's suffix, if any.
std::string FusedRowName(OutProjTile tile, const char* suffix = "") {
  return absl::StrCat(
      tile == kOutProjTileDefault ? "fused" : absl::StrCat("fused_", FindOutProjTile(tile)->name),
      suffix);
}

// Every config of the registry (kernels/device/tiles.h), all timed: SM120 owners see which is
// faster on their part. `fused` is the registry's default, named: kAuto would follow the tuning
// cache.
template <OutProjTile kTile>
absl::Status EnqueueFused(BenchContext& c, const Inputs& in, const RotationSet& s) {
  return RunFused(c, in, s, CheckMode::kAsync, kTile);
}
template <OutProjTile kTile>
absl::Status CheckFused(BenchContext& c, const Inputs& in) {
  const std::string name = FusedRowName(kTile);
  return c.CheckOnce(name, in.m, "emulator: act bit-exact, out in envelope, sampled rows", [&] {
    H3_RETURN_IF_ERROR(RunFused(c, in, *in.sets[0], CheckMode::kChecked, kTile));
    H3_RETURN_IF_ERROR(CheckQuantized(in));
    return CheckOutInEnvelope(in);
  });
}

// The default config with act_smooth (contract section 12): the smoothing's cost is this row
// over `fused`, measured in the same run.
absl::Status EnqueueFusedSmoothed(BenchContext& c, const Inputs& in, const RotationSet& s) {
  return RunFused(c, in, s, CheckMode::kAsync, kOutProjTileDefault, nullptr, /*smoothed=*/true);
}
absl::Status CheckFusedSmoothed(BenchContext& c, const Inputs& in) {
  return c.CheckOnce("fused_smoothed", in.m,
                     "emulator with act_smooth: act bit-exact, out in envelope, sampled rows", [&] {
                       H3_RETURN_IF_ERROR(RunFused(c, in, *in.sets[0], CheckMode::kChecked,
                                                   kOutProjTileDefault, nullptr, true));
                       H3_RETURN_IF_ERROR(CheckQuantized(in, /*smoothed=*/true));
                       return CheckOutInEnvelope(in, /*smoothed=*/true);
                     });
}

// The default config with the whole option set, act_smooth and a rank-32 branch (contract
// sections 12, 13): the options' cost is this row over `fused`, measured in the same run.
absl::Status EnqueueFusedOptions(BenchContext& c, const Inputs& in, const RotationSet& s) {
  return RunFused(c, in, s, CheckMode::kAsync, kOutProjTileDefault, nullptr, true, true);
}
absl::Status CheckFusedOptions(BenchContext& c, const Inputs& in) {
  return c.CheckOnce(
      "fused_smoothed_lowrank32", in.m,
      "emulator with act_smooth and the branch: act bit-exact, out in envelope, sampled rows", [&] {
        H3_RETURN_IF_ERROR(RunFused(c, in, *in.sets[0], CheckMode::kChecked, kOutProjTileDefault,
                                    nullptr, true, true));
        H3_RETURN_IF_ERROR(CheckQuantized(in, /*smoothed=*/true));
        return CheckOutInEnvelope(in, /*smoothed=*/true, /*branch=*/true);
      });
}

// Timing only (timing_variants.h): the fused op without its epilogue; fused minus this is the
// exposed epilogue. Its check: act_q / act_sf bit-exact (out is not written).
// kOneGroupMma: also without the second warpgroup's MMAs.
template <OutProjTile kTile, TimingVariant kVariant>
absl::Status EnqueueFusedNoEpilogue(BenchContext& c, const Inputs& in, const RotationSet& s) {
  constexpr TimingVariant v = kVariant;
  return RunFused(c, in, s, CheckMode::kAsync, kTile, &v);
}
template <OutProjTile kTile, TimingVariant kVariant>
absl::Status CheckFusedNoEpilogue(BenchContext& c, const Inputs& in) {
  const std::string name =
      FusedRowName(kTile, kVariant == TimingVariant::kOneGroupMma ? "_one_group" : "_no_epilogue");
  constexpr TimingVariant v = kVariant;
  return c.CheckOnce(name, in.m, "emulator: act bit-exact (out not written)", [&] {
    H3_RETURN_IF_ERROR(RunFused(c, in, *in.sets[0], CheckMode::kChecked, kTile, &v));
    return CheckQuantized(in);
  });
}

// Timing only: fused_smoothed_lowrank32 without one or both of the branch's halves
// (timing_variants.h), to take its cost over fused_smoothed apart. Checks: act bit-exact; without
// the up-projection, out is the smoothed op's (in its envelope); otherwise out is not checked.
template <TimingVariant kVariant>
absl::Status EnqueueBranchHalves(BenchContext& c, const Inputs& in, const RotationSet& s) {
  static_assert(IsBranchVariant(kVariant), "a branch timing variant");
  constexpr TimingVariant v = kVariant;
  return RunFused(c, in, s, CheckMode::kAsync, kOutProjTileDefault, &v, true, true);
}
constexpr const char* BranchHalvesName(TimingVariant v) {
  return v == TimingVariant::kBranchNoUp     ? "fused_smoothed_lowrank32_no_up"
         : v == TimingVariant::kBranchNoDown ? "fused_smoothed_lowrank32_no_down"
                                             : "fused_smoothed_lowrank32_neither";
}
template <TimingVariant kVariant>
absl::Status CheckBranchHalves(BenchContext& c, const Inputs& in) {
  constexpr TimingVariant v = kVariant;
  constexpr bool kOutIsSmoothedOp = v == TimingVariant::kBranchNoUp;
  return c.CheckOnce(BranchHalvesName(v), in.m,
                     kOutIsSmoothedOp ? "emulator with act_smooth: act bit-exact, out in envelope "
                                        "of the op without the branch, sampled rows"
                                      : "emulator with act_smooth: act bit-exact (out not checked)",
                     [&] {
                       H3_RETURN_IF_ERROR(RunFused(c, in, *in.sets[0], CheckMode::kChecked,
                                                   kOutProjTileDefault, &v, true, true));
                       H3_RETURN_IF_ERROR(CheckQuantized(in, /*smoothed=*/true));
                       if (!kOutIsSmoothedOp) return absl::OkStatus();
                       return CheckOutInEnvelope(in, /*smoothed=*/true);
                     });
}

double FusedFlops(int64_t m) { return GemmFlops(m); }

// The registry name of a config, for Contender::tile.
constexpr const char* TileName(OutProjTile t) { return FindOutProjTile(t)->name; }

constexpr Contender kContenders[] = {
    {"copy", NoFlops, CopyBytes, Ready, NoCheck, EnqueueCopy, nullptr},
    {"quantize", NoFlops, QuantizeBytes, Ready, CheckQuantize, EnqueueQuantize, nullptr},
    {"bf16_gemm", GemmFlops, Bf16GemmBytes, PrepareBf16, CheckBf16, EnqueueBf16Gemm, nullptr},
    {"bf16_unfused", GemmFlops, Bf16UnfusedBytes, PrepareBf16, CheckBf16, EnqueueBf16Unfused,
     nullptr},
    {"nvfp4_unfused", GemmFlops, Nvfp4UnfusedBytes, PrepareNvfp4, CheckNvfp4, EnqueueNvfp4Unfused,
     nullptr},
    {"fused", FusedFlops, FusedBytes, PrepareFused, CheckFused<kOutProjTileDefault>,
     EnqueueFused<kOutProjTileDefault>, TileName(kOutProjTileDefault)},
    {"fused_smoothed", FusedFlops, FusedBytes, PrepareFused, CheckFusedSmoothed,
     EnqueueFusedSmoothed, TileName(kOutProjTileDefault)},
    {"fused_smoothed_lowrank32", FusedFlops, FusedBytes, PrepareFused, CheckFusedOptions,
     EnqueueFusedOptions, TileName(kOutProjTileDefault)},
    // The branch's cost taken apart: without its up-projection, its down-projection (and the l
    // gate), or both.
    {BranchHalvesName(TimingVariant::kBranchNoUp), FusedFlops, FusedBytes, PrepareFused,
     CheckBranchHalves<TimingVariant::kBranchNoUp>, EnqueueBranchHalves<TimingVariant::kBranchNoUp>,
     nullptr},
    {BranchHalvesName(TimingVariant::kBranchNoDown), FusedFlops, FusedBytes, PrepareFused,
     CheckBranchHalves<TimingVariant::kBranchNoDown>,
     EnqueueBranchHalves<TimingVariant::kBranchNoDown>, nullptr},
    {BranchHalvesName(TimingVariant::kBranchNeither), FusedFlops, FusedBytes, PrepareFused,
     CheckBranchHalves<TimingVariant::kBranchNeither>,
     EnqueueBranchHalves<TimingVariant::kBranchNeither>, nullptr},
    {"fused_128x256_lockstep", FusedFlops, FusedBytes, PrepareFused,
     CheckFused<OutProjTile::k128x256Lockstep>, EnqueueFused<OutProjTile::k128x256Lockstep>,
     TileName(OutProjTile::k128x256Lockstep)},
    {"fused_128x256", FusedFlops, FusedBytes, PrepareFused, CheckFused<OutProjTile::k128x256>,
     EnqueueFused<OutProjTile::k128x256>, TileName(OutProjTile::k128x256)},
    {"fused_128x128", FusedFlops, FusedBytes, PrepareFused, CheckFused<OutProjTile::k128x128>,
     EnqueueFused<OutProjTile::k128x128>, TileName(OutProjTile::k128x128)},
    // The default (the staged config) without any epilogue (its in-register path with nothing
    // to store, no t hand-off): fused minus this = what its staged epilogue still exposes.
    {"fused_no_epilogue", FusedFlops, FusedBytes, PrepareFused,
     CheckFusedNoEpilogue<kOutProjTileDefault, TimingVariant::kNoEpilogue>,
     EnqueueFusedNoEpilogue<kOutProjTileDefault, TimingVariant::kNoEpilogue>, nullptr},
    // The skewed config's exposed epilogue, and one_warp_mma (the rate its alone phases rest on).
    {"fused_128x256_no_epilogue", FusedFlops, FusedBytes, PrepareFused,
     CheckFusedNoEpilogue<OutProjTile::k128x256, TimingVariant::kNoEpilogue>,
     EnqueueFusedNoEpilogue<OutProjTile::k128x256, TimingVariant::kNoEpilogue>, nullptr},
    {"fused_128x256_one_group", FusedFlops, FusedBytes, PrepareFused,
     CheckFusedNoEpilogue<OutProjTile::k128x256, TimingVariant::kOneGroupMma>,
     EnqueueFusedNoEpilogue<OutProjTile::k128x256, TimingVariant::kOneGroupMma>, nullptr},
    // The lockstep config's exposed epilogue (the model's epilogue_ratio is measured on it).
    {"fused_128x256_lockstep_no_epilogue", FusedFlops, FusedBytes, PrepareFused,
     CheckFusedNoEpilogue<OutProjTile::k128x256Lockstep, TimingVariant::kNoEpilogue>,
     EnqueueFusedNoEpilogue<OutProjTile::k128x256Lockstep, TimingVariant::kNoEpilogue>, nullptr},
};
// The fused rows are named as FusedRowName names their checks: `fused` and fused_no_epilogue are
// the default's, the 128x256 rows the skewed config's (fused_128x256_one_group times its alone
// phases, which only it has).
static_assert(kOutProjTileDefault == OutProjTile::k128x128Staged,
              "the fused rows name the staged config the default: rename them with the default");

}  // namespace

absl::Span<const Contender> Contenders() { return kContenders; }

}  // namespace h3::bench
