#ifndef H3_KERNELS_KERNEL_SET_H_
#define H3_KERNELS_KERNEL_SET_H_

// The host side of the fused kernel's instances (launch.cuh; no abseil, no device code: g++ and
// nvcc read it). A KernelSet is one Variant of the kernel (out_proj_kernel.cuh) for every
// (build, tile): the product's (ProductKernels) or a testonly timing variant's (harness/bench).
// The host API (out_proj.cc) validates, fills OutProjParams, and calls a set's entry points.

#include <cuda_runtime.h>

#include <string>

#include "kernels/device/params.h"
#include "kernels/device/target_facts.h"
#include "kernels/device/tiles.h"

namespace h3::kernels {

struct KernelSet {
  // Once per context, build and tile: raises the kernel's dynamic shared-memory limit and returns
  // in *resident_ctas how many of its CTAs are co-resident on the current device (SMs x CTAs per
  // SM). The persistent grid never exceeds it, so every CTA runs at once. Sets *refusal (and
  // returns cudaErrorInvalidConfiguration) when the compiled kernel breaks an assumption its
  // code relies on and could hang (register_split.h).
  cudaError_t (*configure)(KernelBuild build, OutProjTile tile, int* resident_ctas,
                           std::string* refusal);
  // Encodes the TMA descriptors of p and launches on `stream` (grid: at most resident_ctas). On
  // failure returns the CUDA error and sets *what to the step that failed.
  cudaError_t (*launch)(const OutProjParams& p, KernelBuild build, OutProjTile tile,
                        int resident_ctas, cudaStream_t stream, const char** what);
  // Dynamic shared memory of one CTA, in bytes (the host checks the device's limit).
  int (*smem_bytes)(KernelBuild build, OutProjTile tile);
  // Whether its quantizers smooth by act_smooth (contract section 12; variant.cuh): the host API
  // launches a set only with act_smooth given exactly when it smooths.
  bool smooths = false;
  // Whether it computes the low-rank branch (contract section 13; act_smooth optional there): the
  // host API launches it exactly when lora_down / lora_up are given.
  bool branch = false;
};

// The product's kernels (out_proj_launch.cu).
const KernelSet& ProductKernels();
// The product with act_smooth given (out_proj_smoothed_launch.cu).
const KernelSet& ProductSmoothedKernels();
// The product with the low-rank branch given (out_proj_branch_launch.cu).
const KernelSet& ProductBranchKernels();

}  // namespace h3::kernels

#endif  // H3_KERNELS_KERNEL_SET_H_
