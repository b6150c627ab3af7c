"""Compiler options of the project, in one place (abseil's copts.bzl is the model).

H3_COPTS: every C++ target. -ffp-contract=off: every f32 rounding is written in the source (no
FMA contraction behind our back); -fno-fast-math for the same reason. Then abseil's GCC warning
list (ABSL_GCC_FLAGS, less its -DNOMINMAX, a Windows macro) as errors. Third-party headers do
not trip them: Eigen, nlohmann-json, Google Benchmark and the CUDA headers come in through
cc_library `includes` (-isystem), abseil and googletest from /usr/include (a system directory).
EMULATOR_COPTS: the emulator and whatever includes its headers that expose Eigen types: AVX2 and
FMA for Eigen's GEMM kernels (x86-64-v3; the dev machine and the GPU host have it) and OpenMP for
Eigen's multithreaded GEMM and the row loops.
H3_WARNINGS: the warning flags alone; cuda_library passes them to the host compiler nvcc runs.
"""

H3_WARNINGS = [
    "-Wall",
    "-Wextra",
    "-Wcast-qual",
    "-Wconversion-null",
    "-Wformat-security",
    "-Wmissing-declarations",
    "-Woverlength-strings",
    "-Wpointer-arith",
    "-Wundef",
    "-Wunused-local-typedefs",
    "-Wunused-result",
    "-Wvarargs",
    "-Wvla",
    "-Wwrite-strings",
]

H3_COPTS = [
    "-ffp-contract=off",
    "-fno-fast-math",
] + H3_WARNINGS + ["-Werror"]

EMULATOR_COPTS = H3_COPTS + [
    "-mavx2",
    "-mfma",
    "-fopenmp",
]
