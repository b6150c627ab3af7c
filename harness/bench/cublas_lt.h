// cuBLASLt for the baselines, loaded at run time and used the way PyTorch uses it.
//
// Loading: dlopen, not linking. The bench binary then starts on a machine that has only the NVIDIA
// driver (static cuBLASLt is ~1 GB, past what a binary may weigh to travel), and where the library
// is missing the cuBLAS contenders are skipped with the loader's message instead of the binary
// failing to start. --cublaslt picks the library (a soname, searched as the dynamic loader does,
// then in /usr/local/cuda/lib64 and beside the binary; or a path), e.g. PyTorch's own copy, to
// compare like with like.
//
// The GEMMs: cublasLtMatmul with a 32 MiB workspace (PyTorch's default on Hopper and later,
// CUBLASLT_WORKSPACE_SIZE, pytorch/pytorch#120925), the 256-byte operand alignment PyTorch reports
// for fresh allocations, and the heuristic's top kMaxAlgos algorithms (cuBLASLt may return fewer).
// PyTorch runs the first one; the bench times every candidate once per shape and keeps the fastest
// (BenchContext::Gemm), so the baseline is at least as fast as PyTorch's pick.

#ifndef H3_HARNESS_BENCH_CUBLAS_LT_H_
#define H3_HARNESS_BENCH_CUBLAS_LT_H_

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "harness/testbed/cuda.h"

namespace h3::bench {

// The cuBLASLt entry points the bench calls, resolved by dlsym (types from cublasLt.h).
#define H3_CUBLASLT_FUNCTIONS(X)                                                                   \
  X(cublasLtCreate)                                                                                \
  X(cublasLtDestroy)                                                                               \
  X(cublasLtGetVersion) X(cublasLtGetStatusName) X(cublasLtMatmulDescCreate)                       \
      X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate) \
          X(cublasLtMatrixLayoutDestroy) X(cublasLtMatmulPreferenceCreate)                         \
              X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute)           \
                  X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)

struct CublasLtApi {
#define H3_CUBLASLT_MEMBER(f) decltype(&::f) f = nullptr;
  H3_CUBLASLT_FUNCTIONS(H3_CUBLASLT_MEMBER)
#undef H3_CUBLASLT_MEMBER
};

// The loaded library, one handle and the workspace every matmul shares (calls are serialized on
// the bench's one stream).
class CublasLt {
 public:
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;

  // Unavailable (with every loader message) when the library cannot be loaded or lacks a symbol.
  static absl::StatusOr<std::unique_ptr<CublasLt>> Load(const std::string& library);
  ~CublasLt();
  CublasLt(const CublasLt&) = delete;
  CublasLt& operator=(const CublasLt&) = delete;

  const CublasLtApi& api() const { return api_; }
  cublasLtHandle_t handle() const { return handle_; }
  void* workspace() const { return workspace_.get(); }
  // "cuBLASLt 13.1.0 from /usr/local/cuda/lib64/libcublasLt.so.13"
  const std::string& description() const { return description_; }
  // OK, or Internal("<what>: <status name>").
  absl::Status Check(cublasStatus_t status, const char* what) const;

 private:
  CublasLt() = default;
  CublasLtApi api_;
  cublasLtHandle_t handle_ = nullptr;
  testbed::DeviceBuffer<uint8_t> workspace_;  // [kWorkspaceBytes]
  std::string description_;
};

// One GEMM shape, row-major d[m, n] = alpha * x[m, k] @ w[n, k]^T, as cuBLASLt sees it
// (column-major d^T[n, m] = w^T... : A = w with TRANSA = T, B = x, D = d^T), with its candidate
// algorithms and the chosen one (the heuristic's first until set_chosen).
class LtMatmul {
 public:
  static constexpr int kMaxAlgos = 16;
  enum class Kind {
    kBf16,   // bf16 x, w, d; f32 accumulate and alpha
    kNvfp4,  // e2m1 x, w with VEC16_UE4M3 swizzled scales (sm_100+); f32 d
  };

  static absl::StatusOr<std::unique_ptr<LtMatmul>> Create(const CublasLt& lt, Kind kind, int64_t m,
                                                          int64_t n, int64_t k);
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  // kNvfp4 only: the scale arrays of the next calls (swizzled; w: [n, k/16], x: [m, k/16]).
  absl::Status SetScales(const void* w_scales, const void* x_scales);
  absl::Status Enqueue(const void* w, const void* x, void* d, float alpha, cudaStream_t stream,
                       int algo = -1) const;  // -1: the chosen algorithm

  int candidates() const { return static_cast<int>(algos_.size()); }
  int chosen() const { return chosen_; }
  void set_chosen(int algo) { chosen_ = algo; }

 private:
  explicit LtMatmul(const CublasLt& lt) : lt_(lt) {}
  const CublasLt& lt_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  std::vector<cublasLtMatmulAlgo_t> algos_;  // heuristic order, each fits the workspace
  int chosen_ = 0;
};

}  // namespace h3::bench

#endif  // H3_HARNESS_BENCH_CUBLAS_LT_H_
