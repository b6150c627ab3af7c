"""Compiler options of the project, in one place (abseil's copts.bzl is the model).

H3_COPTS: every C++ target. -ffp-contract=off: every f32 rounding is written in the source (no
FMA contraction behind our back); -fno-fast-math for the same reason.
EMULATOR_COPTS: the emulator and whatever includes its headers that expose Eigen types: AVX2 and
FMA for Eigen's GEMM kernels (x86-64-v3; the dev machine and the GPU host have it) and OpenMP for
Eigen's multithreaded GEMM and the row loops.
"""

H3_COPTS = [
    "-ffp-contract=off",
    "-fno-fast-math",
]

EMULATOR_COPTS = H3_COPTS + [
    "-mavx2",
    "-mfma",
    "-fopenmp",
]
