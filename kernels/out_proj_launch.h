#ifndef H3_KERNELS_OUT_PROJ_LAUNCH_H_
#define H3_KERNELS_OUT_PROJ_LAUNCH_H_

// The launcher of the fused kernel (out_proj_launch.cu; no abseil: compiled by nvcc). Arguments
// are assumed validated by kernels/out_proj.cc.

#include <cuda_runtime.h>

#include <cstdint>

namespace h3::kernels {

struct OutProjLaunch {
  int64_t m = 0;
  int n = 0, k = 0, g = 0;
  const uint16_t* attn_out = nullptr;
  const uint8_t* w_q = nullptr;
  const uint8_t* w_sf = nullptr;
  float w_gs = 0.f;
  const float* w_gs_dev = nullptr;
  const float* act_gs = nullptr;
  const uint16_t* gate = nullptr;
  const int32_t* gate_index = nullptr;
  const uint16_t* residual = nullptr;
  uint16_t* out = nullptr;
  uint8_t* act_q = nullptr;  // required here (the host API allocates one when absent)
  uint8_t* act_sf = nullptr;
  uint32_t* ready_flags = nullptr;  // kReadyFlagWords zeroed words (ready_flags.h), left zeroed
  int resident_ctas = 0;            // from ConfigureOutProj in the current context (grid cap)
  bool skip_epilogue = false;       // timing only (out_proj.h OutProjDebug): out not written
  bool one_group_mma = false;       // timing only: the second consumer warpgroup's MMAs off too
};

// kSm120Native: Sm120Config on sm_120f (every SM12x part). kSm90Faithful: the same Sm120Config
// kernel compiled for sm_90a (block-scaled MMA emulated from its registers). kSm90Fast:
// sm90::Sm90Config on sm_90a (A dequantized in registers, B staged in shared memory, wgmma).
enum class KernelBuild { kSm120Native, kSm90Faithful, kSm90Fast };

// The SM120 kernel's tile (kSm120Native and kSm90Faithful; kSm90Fast has its own): k128x256 =
// Sm120Config (skewed groups), k128x256Lockstep = Sm120ConfigLockstep, k128x128 =
// Sm120Config128 (config.cuh).
enum class KernelTile { k128x256, k128x128, k128x256Lockstep };

// Once per context and build: raises the kernel's dynamic shared-memory limit and returns in
// *resident_ctas how many of its CTAs are co-resident on the current device (SMs x CTAs per SM).
// The persistent grid never exceeds it, so every CTA runs at once (the ready-flag waits need it).
cudaError_t ConfigureOutProj(KernelBuild build, KernelTile tile, int* resident_ctas);

// Launches on `stream` (l.resident_ctas from ConfigureOutProj). On failure returns the CUDA error
// and sets *what to the step that failed.
cudaError_t LaunchOutProj(const OutProjLaunch& l, KernelBuild build, KernelTile tile,
                          cudaStream_t stream, const char** what);

// Dynamic shared memory of one CTA of `build`, in bytes (the host checks the device's limit).
int OutProjSmemBytes(KernelBuild build, KernelTile tile);

}  // namespace h3::kernels

#endif  // H3_KERNELS_OUT_PROJ_LAUNCH_H_
