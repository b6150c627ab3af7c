#include "harness/bench/cublas_lt.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace h3::bench {
namespace {

// The directory of the running binary, with a trailing '/', or "" if unknown.
std::string ExecutableDir() {
  char path[4096];
  const ssize_t len = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (len <= 0) return "";
  const std::string exe(path, len);
  return exe.substr(0, exe.rfind('/') + 1);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CublasLt>> CublasLt::Load(const std::string& library) {
  std::vector<std::string> tries = {library};
  if (library.find('/') == std::string::npos) {
    tries.push_back("/usr/local/cuda/lib64/" + library);
    tries.push_back(ExecutableDir() + library);
  }
  void* dl = nullptr;
  std::vector<std::string> errors;
  for (const std::string& t : tries) {
    // RTLD_LOCAL: the library's symbols stay out of the global namespace. Never dlclose'd: it
    // lives as long as the process, so nothing runs after it is unloaded.
    dl = dlopen(t.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (dl != nullptr) break;
    errors.push_back(dlerror());
  }
  if (dl == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot load cuBLASLt (", absl::StrJoin(errors, "; "), ")"));
  }
  std::unique_ptr<CublasLt> lt(new CublasLt);
#define H3_CUBLASLT_RESOLVE(f)                                             \
  lt->api_.f = reinterpret_cast<decltype(&::f)>(dlsym(dl, #f));            \
  if (lt->api_.f == nullptr) {                                             \
    return absl::UnavailableError(                                         \
        absl::StrCat("cuBLASLt ", library, " lacks " #f ": ", dlerror())); \
  }
  H3_CUBLASLT_FUNCTIONS(H3_CUBLASLT_RESOLVE)
#undef H3_CUBLASLT_RESOLVE
  const link_map* map = nullptr;
  const std::string where =
      dlinfo(dl, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr ? map->l_name : library;
  const size_t v = lt->api_.cublasLtGetVersion();
  lt->description_ =
      absl::StrFormat("cuBLASLt %d.%d.%d from %s", v / 10000, v / 100 % 100, v % 100, where);
  H3_RETURN_IF_ERROR(lt->Check(lt->api_.cublasLtCreate(&lt->handle_), "cublasLtCreate"));
  H3_RETURN_IF_ERROR(lt->workspace_.Alloc(kWorkspaceBytes));
  return lt;
}

CublasLt::~CublasLt() {
  if (handle_ != nullptr) api_.cublasLtDestroy(handle_);
}

absl::Status CublasLt::Check(cublasStatus_t status, const char* what) const {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const char* name =
      api_.cublasLtGetStatusName != nullptr ? api_.cublasLtGetStatusName(status) : "";
  return absl::InternalError(absl::StrCat(what, ": ", name, " (", static_cast<int>(status), ")"));
}

absl::StatusOr<std::unique_ptr<LtMatmul>> LtMatmul::Create(const CublasLt& lt, Kind kind, int64_t m,
                                                           int64_t n, int64_t k) {
  const CublasLtApi& api = lt.api();
  std::unique_ptr<LtMatmul> p(new LtMatmul(lt));
  const bool fp4 = kind == Kind::kNvfp4;
  const cudaDataType_t ab = fp4 ? CUDA_R_4F_E2M1 : CUDA_R_16BF;
  const cudaDataType_t d = fp4 ? CUDA_R_32F : CUDA_R_16BF;
  H3_RETURN_IF_ERROR(
      lt.Check(api.cublasLtMatmulDescCreate(&p->desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F),
               "cublasLtMatmulDescCreate"));
  auto set = [&](cublasLtMatmulDescAttributes_t attr, const auto& value, const char* what) {
    return lt.Check(api.cublasLtMatmulDescSetAttribute(p->desc_, attr, &value, sizeof(value)),
                    what);
  };
  H3_RETURN_IF_ERROR(set(CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T, "TRANSA"));
  H3_RETURN_IF_ERROR(set(CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N, "TRANSB"));
  if (fp4) {
    const cublasLtMatmulMatrixScale_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3;
    H3_RETURN_IF_ERROR(set(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode, "A_SCALE_MODE"));
    H3_RETURN_IF_ERROR(set(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode, "B_SCALE_MODE"));
  }
  // Stored matrices, column-major: w^T [k, n], x^T [k, m], d^T [n, m].
  H3_RETURN_IF_ERROR(lt.Check(api.cublasLtMatrixLayoutCreate(&p->a_, ab, k, n, k), "layout A (w)"));
  H3_RETURN_IF_ERROR(lt.Check(api.cublasLtMatrixLayoutCreate(&p->b_, ab, k, m, k), "layout B (x)"));
  H3_RETURN_IF_ERROR(lt.Check(api.cublasLtMatrixLayoutCreate(&p->d_, d, n, m, n), "layout D"));

  cublasLtMatmulPreference_t pref = nullptr;
  H3_RETURN_IF_ERROR(lt.Check(api.cublasLtMatmulPreferenceCreate(&pref), "preference"));
  const uint64_t ws = CublasLt::kWorkspaceBytes;
  const uint32_t align = 256;  // cudaMalloc'd buffers, as PyTorch reports for fresh tensors
  api.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                           sizeof(ws));
  for (auto attr :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    api.cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align));
  }
  cublasLtMatmulHeuristicResult_t heur[kMaxAlgos] = {};
  int found = 0;
  const cublasStatus_t st = api.cublasLtMatmulAlgoGetHeuristic(
      lt.handle(), p->desc_, p->a_, p->b_, p->d_, p->d_, pref, kMaxAlgos, heur, &found);
  api.cublasLtMatmulPreferenceDestroy(pref);
  H3_RETURN_IF_ERROR(lt.Check(st, "cublasLtMatmulAlgoGetHeuristic"));
  for (int i = 0; i < found; ++i) {
    if (heur[i].state == CUBLAS_STATUS_SUCCESS && heur[i].workspaceSize <= ws) {
      p->algos_.push_back(heur[i].algo);
    }
  }
  if (p->algos_.empty()) {
    return absl::UnimplementedError(absl::StrFormat(
        "cublasLtMatmulAlgoGetHeuristic: no algorithm for m=%d n=%d k=%d", m, n, k));
  }
  return p;
}

LtMatmul::~LtMatmul() {
  const CublasLtApi& api = lt_.api();
  if (a_) api.cublasLtMatrixLayoutDestroy(a_);
  if (b_) api.cublasLtMatrixLayoutDestroy(b_);
  if (d_) api.cublasLtMatrixLayoutDestroy(d_);
  if (desc_) api.cublasLtMatmulDescDestroy(desc_);
}

absl::Status LtMatmul::SetScales(const void* w_scales, const void* x_scales) {
  const CublasLtApi& api = lt_.api();
  H3_RETURN_IF_ERROR(
      lt_.Check(api.cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                                   &w_scales, sizeof(w_scales)),
                "A_SCALE_POINTER"));
  return lt_.Check(api.cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                                      &x_scales, sizeof(x_scales)),
                   "B_SCALE_POINTER");
}

absl::Status LtMatmul::Enqueue(const void* w, const void* x, void* d, float alpha,
                               cudaStream_t stream, int algo) const {
  const float beta = 0.f;
  const cublasLtMatmulAlgo_t& a = algos_[algo < 0 ? chosen_ : algo];
  return lt_.Check(
      lt_.api().cublasLtMatmul(lt_.handle(), desc_, &alpha, w, a_, x, b_, &beta, d, d_, d, d_, &a,
                               lt_.workspace(), CublasLt::kWorkspaceBytes, stream),
      "cublasLtMatmul");
}

}  // namespace h3::bench
