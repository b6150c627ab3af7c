// H200 timing of the fused op (sm_90a validation build on Hopper) against cuBLAS's bf16 GEMM of
// the same shape, timed in the same process. Usage: out_proj_bench [M ...] (default 4096 16384).

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/out_proj.h"
#include "kernels/out_proj_kernel.h"
#include "kernels/quantize_kernel.h"
#include "kernels/test_problem.h"

namespace {

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

template <typename F>
float MedianMs(F&& f, int reps) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> ms;
  for (int i = 0; i < reps; ++i) {
    cudaEventRecord(a);
    f();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float t;
    cudaEventElapsedTime(&t, a, b);
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> ms_list;
  for (int i = 1; i < argc; ++i) ms_list.push_back(std::atoll(argv[i]));
  if (ms_list.empty()) ms_list = {4096, 16384};
  const int64_t n = h3::kH3N, k = h3::kH3K;
  auto backend = h3::OutProjBackendName();
  std::printf("backend: %s\n",
              backend.ok() ? backend->c_str() : std::string(backend.status().message()).c_str());
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return 1;
  for (int64_t m : ms_list) {
    h3::kernels::testing::Problem p =
        h3::kernels::testing::MakeProblem(m, n, k, 9, h3::kernels::testing::Data::kExact, 17);
    h3::kernels::testing::DeviceProblem d(p);
    h3::OutProjArgs a = h3::kernels::testing::ArgsFor(p, d);
    auto st = h3::MinimaxH3Nvfp4OutProj(a, nullptr, h3::CheckMode::kChecked);
    if (!st.ok()) {
      std::printf("op failed: %s\n", std::string(st.message()).c_str());
      return 1;
    }
    const float op_ms = MedianMs([&] { (void)h3::MinimaxH3Nvfp4OutProj(a, nullptr); }, 20);
    // sm_90: the fast emulation too (the default above is the faithful one).
    h3::OutProjArgs af = a;
    af.sm90_emulation = h3::Sm90Emulation::kFast;
    if (!(st = h3::MinimaxH3Nvfp4OutProj(af, nullptr, h3::CheckMode::kChecked)).ok()) {
      std::printf("op (fast) failed: %s\n", std::string(st.message()).c_str());
      return 1;
    }
    const float fast_ms = MedianMs([&] { (void)h3::MinimaxH3Nvfp4OutProj(af, nullptr); }, 20);
    h3::OutProjArgs a2 = a;
    a2.act_q = nullptr;
    a2.act_sf = nullptr;
    const float op_ws_ms = MedianMs([&] { (void)h3::MinimaxH3Nvfp4OutProj(a2, nullptr); }, 10);
    // cuBLAS bf16: out[M,N] = A[M,K] * W[N,K]^T (column-major: C^T[N,M] = W * A^T).
    uint16_t *wa, *wb, *wc;
    CK(cudaMalloc(&wa, m * k * 2));
    CK(cudaMalloc(&wb, n * k * 2));
    CK(cudaMalloc(&wc, m * n * 2));
    CK(cudaMemset(wa, 0x3C, m * k * 2));
    CK(cudaMemset(wb, 0x3C, n * k * 2));
    const float one = 1.f, zero = 0.f;
    auto gemm = [&] {
      cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, wb, CUDA_R_16BF, k, wa,
                   CUDA_R_16BF, k, &zero, wc, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                   CUBLAS_GEMM_DEFAULT);
    };
    const float blas_ms = MedianMs(gemm, 20);
    CK(cudaDeviceSynchronize());
    int grid = 0;
    h3::kernels::OutProjLaunch l;
    l.m = m;
    l.n = n;
    l.k = k;
    (void)h3::kernels::OutProjGridSize(l, h3::kernels::KernelBuild::kSm90Faithful, &grid);
    const float quant_ms = MedianMs(
        [&] {
          (void)h3::kernels::LaunchQuantizeNvfp4(d.attn, m, k, d.act_gs, d.act_q, d.act_sf,
                                                 nullptr);
        },
        20);
    const double quant_bytes = m * k * (2.0 + 0.5 + 1.0 / 16);
    std::printf("  standalone quantize [%lld, %lld]: %.3f ms (%.0f GB/s moved)\n",
                static_cast<long long>(m), static_cast<long long>(k), quant_ms,
                quant_bytes / quant_ms * 1e-6);
    const double flop = 2.0 * m * n * k;
    std::printf(
        "M=%lld N=%lld K=%lld grid=%d: op %.3f ms (%.0f TFLOP/s), op+own workspace %.3f ms, "
        "op sm90-fast %.3f ms (%.0f TFLOP/s), cuBLAS bf16 %.3f ms (%.0f TFLOP/s), op/cuBLAS "
        "speed %.2f, sm90-fast/cuBLAS speed %.2f\n",
        static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), grid,
        op_ms, flop / op_ms * 1e-9, op_ws_ms, fast_ms, flop / fast_ms * 1e-9, blas_ms,
        flop / blas_ms * 1e-9, blas_ms / op_ms, blas_ms / fast_ms);
    cudaFree(wa);
    cudaFree(wb);
    cudaFree(wc);
  }
  cublasDestroy(handle);
  return 0;
}
