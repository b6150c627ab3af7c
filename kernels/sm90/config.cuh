#ifndef H3_KERNELS_SM90_CONFIG_CUH_
#define H3_KERNELS_SM90_CONFIG_CUH_

// Hopper validation only: the config and shared memory of the fast sm_90 kernel
// (sm90/fast_kernel.cuh, Sm90Emulation::kFast). The faithful sm_90 build runs the SM120 configs
// themselves (kernels/device/tiles.h).

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/device/config.cuh"
#include "kernels/device/rings.cuh"

namespace h3::kernels::sm90 {

// The fast kernel's shared-memory budget per block (target_facts.h: 227 KiB on sm_90).
inline constexpr int kSm90SmemBytes = kSm90FastFacts.smem_bytes;

// The fast kernel's pipeline (4 stages of BK = 256, 128 x 128 tiles), plus bf16 staging tiles of
// the weights for the emulated MMA (staged_mainloop.cuh): the consumer warps dequantize each MMA
// k-step's B tile (128 x 64 e2m1) once per CTA into a [128][128 B] bf16 tile (128B-swizzled) that
// wgmma.m64n128k16 reads; A is dequantized in registers. One staging tile per k-step of a stage
// (4), so wgmmas of one k-step still run while the next k-step's are issued. The tiles also hold
// the f32 tile of FinishTile.
struct Sm90Config : OutProjConfig<4, 256, 128, kSm90SmemBytes> {
  static constexpr int kEmuTileBytes = kBN * 64 * 2;  // one k-step of B in bf16
  static constexpr int kEmuBufs = kKSteps;            // one B tile per k-step of a stage
  static constexpr int kEmuBufBytes = kEmuBufs * kEmuTileBytes;
  static_assert(kBM == 128 && kBN == 128, "staging tiles are [128][128 B]");
  static_assert(kKSteps == 4 && kSfaStagesPerBox == 1,
                "the staged loop reads 128-byte rows and one activation-scale slot per stage");
  static_assert(std::is_same_v<Schedule, LockstepSchedule>,
                "the staged loop consumes one ring, both warpgroups in step");
  static_assert(kEmuBufs >= 3, "the consumer loop waits for all but the newest wgmma group");
  static_assert(kEmuBufBytes >= kBM * kBN * 4, "FinishTile's f32 tile fits");
  static_assert(kEmuTileBytes % 1024 == 0, "128B-swizzle atoms aligned");
};

// The fast kernel's shared memory: the rings of Sm90Config, then the staging tiles.
struct Sm90Storage {
  SharedStorage<Sm90Config> rings;
  alignas(1024) uint8_t emu[Sm90Config::kEmuBufBytes];
};
static_assert(DynamicSmemBytes<Sm90Storage>() <= kSm90SmemBytes, "sm_90: 227 KiB per block");

}  // namespace h3::kernels::sm90

#endif  // H3_KERNELS_SM90_CONFIG_CUH_
