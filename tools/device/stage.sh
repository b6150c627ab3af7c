#!/usr/bin/env bash
# Builds the GPU binaries here (-c opt) and copies them into .dev/bin (git-ignored), for a GPU
# machine that has the NVIDIA driver and no Bazel: carry .dev/bin there and run
# tools/device/run_checks.sh from the repository root.
set -euo pipefail
cd "$(dirname "$0")/../.."
targets=(
  //tools/cuda:cuda_smoke_test
  //kernels/testing:unit_kernels_test
  //kernels:out_proj_test
  //kernels:out_proj_smooth_test
  //kernels:out_proj_branch_test
  //kernels:out_proj_capture_test
  //harness/bench:timing_variants_test
  //kernels/testing:stall_test
  //kernels/testing:stress_test
  //kernels/testing:register_split_gpu_test
  //kernels/weight_quant:weight_quant_test
  //kernels:tune_cache_gpu_test

  //harness:tools_test
  //harness/sweep:sweep
  //harness:op
  //harness:quantize_weight
  //harness/bench:bench
  //harness/bench:host_cost
  //harness/bench:tma_latency
  //harness:tune_cache_tool
  //harness/probe:probe
  //kernels/launch:out_proj_kernel
)
./bazelw build -c opt "${targets[@]}"
# The opt outputs by their own path: bazel-bin follows whichever build ran last (another
# build in this workspace may have moved it).
bin=bazel-out/k8-opt/bin
rm -rf .dev/bin && mkdir -p .dev/bin
for t in "${targets[@]}"; do
  path=$bin/${t#//}; path=${path/://}
  [[ -f $path && -x $path ]] && cp "$path" .dev/bin/
done
# The kernels' objects (sm_90a + sm_120f SASS) for cuobjdump, and the ptxas reports.
cp $bin/kernels/launch/_objs/out_proj_kernel_cuda_objects/out_proj_launch.pic.o .dev/bin/
# The act_smooth instances (contract section 12), reported beside the plain ones.
cp $bin/kernels/launch/_objs/out_proj_kernel_cuda_objects/out_proj_smoothed_launch.pic.o \
  .dev/bin/out_proj_launch_smoothed.o
cp $bin/kernels/launch/_objs/out_proj_branch_kernel_cuda_objects/out_proj_branch_launch.pic.o \
  .dev/bin/out_proj_launch_branch.o
cp $bin/kernels/launch/_objs/quantize_kernel_cuda_objects/quantize_kernel.pic.o \
  .dev/bin/quantize_kernel.o
cp $bin/kernels/weight_quant/_objs/weight_quant_kernel_cuda_objects/weight_quant_kernel.pic.o \
  .dev/bin/weight_quant_kernel.o
find $bin/kernels -name '*.ptxas.txt' -exec cp {} .dev/bin/ \;
ls -la .dev/bin
