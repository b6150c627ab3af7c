#ifndef H3_KERNELS_SM90_CONFIG_CUH_
#define H3_KERNELS_SM90_CONFIG_CUH_

// Hopper validation only: the config of the fast sm_90 build (Sm90Emulation::kFast). The faithful
// sm_90 build uses the SM120 config itself (kernels/config.cuh).

#include "kernels/config.cuh"

namespace h3::kernels::sm90 {

// sm_90 (H100/H200): 227 KiB per block (cudaDevAttrMaxSharedMemoryPerBlockOptin).
inline constexpr int kSm90SmemBytes = 232448;

// The sm_90 validation build runs the same kernel with its own pipeline depth, plus bf16 staging
// tiles of the weights for the emulated MMA (staged_mainloop.cuh): the consumer warps
// dequantize each MMA k-step's B tile (128 x 64 e2m1) once per CTA into a [128][128 B] bf16 tile
// (128B-swizzled) that wgmma.m64n128k16 reads; A is dequantized in registers. One staging tile
// per k-step of a stage (4), so wgmmas of one k-step still run while the next k-step's are
// issued. The tiles also hold the f32 tile of FinishTile.
struct Sm90Config : OutProjConfig<4, 256, 128, kSm90SmemBytes> {
  using Base = OutProjConfig<4, 256, 128, kSm90SmemBytes>;
  static constexpr int kEmuTileBytes = Base::kBN * 64 * 2;  // one k-step of B in bf16
  static constexpr int kEmuBufs = Base::kKSteps;            // one B tile per k-step of a stage
  static constexpr int kEmuBufBytes = kEmuBufs * kEmuTileBytes;
  static constexpr bool kSm90Staged = true;
  static constexpr int kEmuOffset =
      (Base::kSmemUsed + Base::kSmemAlign - 1) / Base::kSmemAlign * Base::kSmemAlign;
  static constexpr int kSmemUsed = kEmuOffset + kEmuBufBytes;
  static constexpr int kSmemBytes = kSmemUsed + Base::kSmemAlign - 16;
  static_assert(Base::kBM == 128 && Base::kBN == 128, "staging tiles are [128][128 B]");
  static_assert(Base::kKSteps == 4 && Base::kSfaStagesPerBox == 1,
                "the staged loop reads 128-byte rows and one activation-scale slot per stage");
  static_assert(kEmuBufs >= 3, "the consumer loop waits for all but the newest wgmma group");
  static_assert(kEmuBufBytes >= Base::kBM * Base::kBN * 4, "FinishTile's f32 tile fits");
  static_assert(kEmuTileBytes % 1024 == 0 && kEmuOffset % 1024 == 0, "128B-swizzle atoms aligned");
  static_assert(kSmemBytes <= kSm90SmemBytes, "sm_90: 227 KiB per block");
};

}  // namespace h3::kernels::sm90

#endif  // H3_KERNELS_SM90_CONFIG_CUH_
