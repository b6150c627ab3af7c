// The op against what a user would run instead, timed in the same run (issue 5 item 2):
//
//   copy            cudaMemcpyAsync D2D of attn_out: the measured bandwidth roofline
//   quantize        our standalone block-16 NVFP4 quantize kernel (contract section 3)
//   bf16_gemm       cuBLAS bf16 GEMM alone (f32 accumulate, bf16 out)
//   bf16_unfused    cuBLAS bf16 GEMM (f32 accumulate, bf16 out) + standalone epilogue kernel
//   nvfp4_unfused   quantize + cuBLASLt NVFP4 GEMM (VEC16_UE4M3 scales, f32 out) + epilogue
//                   (sm_100+ only; skipped with a message elsewhere)
//   fused           minimax_h3_nvfp4_out_proj (//kernels:out_proj), one launch
//
// over M in {128, 1024, 4096, 16384, 32768, 75856 (a 720p 5-second clip, estimated)} at the
// MiniMax-H3 shape (N = 5376, K = 7168). Each result is checked once against the CPU emulator
// (sampled rows) before it is timed; inputs rotate through enough copies to exceed 3x the L2.
//
//   ./bazelw run -c opt //harness:bench -- --benchmark_out=x.csv --benchmark_out_format=csv
//   extra flags: --bench_m=128,4096   (M values; default the list above)
//                --sm90_emulation=faithful|fast   (sm_90 only: which validation kernel; see
//                kernels/out_proj.h)

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "benchmark/benchmark.h"
#include "emulator/check.h"
#include "emulator/formats.h"
#include "emulator/op.h"
#include "emulator/quantize.h"
#include "emulator/swizzle.h"
#include "harness/bench/bench_kernels.cuh"
#include "kernels/out_proj.h"

namespace h3::bench {
namespace {

constexpr int64_t kN = kH3N, kK = kH3K, kG = kH3G;
constexpr float kAttnScale = 4.f;              // attn_out uniform in [-4, 4)
constexpr float kActGs = 2688.f / kAttnScale;  // calibrated 448*6/amax
constexpr float kWeightGs = 1.f;               // random codes and scales, global scale 1

#define CUDA_OK(expr)                                                                            \
  do {                                                                                           \
    cudaError_t e_ = (expr);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      std::exit(3);                                                                              \
    }                                                                                            \
  } while (0)
#define CUBLAS_OK(expr)                                                               \
  do {                                                                                \
    cublasStatus_t s_ = (expr);                                                       \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                \
      std::fprintf(stderr, "%s:%d %s: cuBLAS status %d\n", __FILE__, __LINE__, #expr, \
                   static_cast<int>(s_));                                             \
      std::exit(3);                                                                   \
    }                                                                                 \
  } while (0)

// ---- The device and its datasheet figures (dense, no sparsity). ----
struct DeviceInfo {
  cudaDeviceProp prop;
  double peak_op_tflops = 0;  // the fused op's MMA format: NVFP4 on sm_120, bf16 on sm_90
  double peak_bf16_tflops = 0;
  double peak_nvfp4_tflops = 0;
  double datasheet_gbps = 0;
  std::string peak_what;
};

DeviceInfo& Device() {
  static DeviceInfo* info = [] {
    auto* d = new DeviceInfo;
    CUDA_OK(cudaGetDeviceProperties(&d->prop, 0));
    const std::string name = d->prop.name;
    // Datasheet leads: H200/H100 SXM (NVIDIA product pages), RTX 5090 (contract section 7).
    struct Row {
      const char* match;
      double bf16, nvfp4, gbps;
    };
    const Row table[] = {
        {"H200", 989, 0, 4800}, {"H100", 989, 0, 3350}, {"RTX 5090", 209.5, 1676, 1792}};
    for (const Row& r : table) {
      if (name.find(r.match) != std::string::npos) {
        d->peak_bf16_tflops = r.bf16;
        d->peak_nvfp4_tflops = r.nvfp4;
        d->datasheet_gbps = r.gbps;
        break;
      }
    }
    if (d->prop.major >= 12) {
      d->peak_op_tflops = d->peak_nvfp4_tflops;
      d->peak_what = "dense NVFP4";
    } else {
      // The sm_90a validation build emulates the block-scaled MMA with bf16 mma.sync.
      d->peak_op_tflops = d->peak_bf16_tflops;
      d->peak_what = "dense BF16 (validation build's emulated MMA)";
    }
    return d;
  }();
  return *info;
}

// Measured times (ms) by (benchmark, M) and the best measured copy bandwidth.
std::map<std::pair<std::string, int64_t>, double>& Times() {
  static auto* t = new std::map<std::pair<std::string, int64_t>, double>;
  return *t;
}
double g_copy_gbps = 0;

// ---- Device buffers for one M: rotation sets. ----
template <typename T>
struct DevArray {
  T* p = nullptr;
  size_t count = 0;
  void Alloc(size_t n) {
    count = n;
    CUDA_OK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)));
  }
  ~DevArray() {
    if (p != nullptr) cudaFree(p);
  }
  size_t bytes() const { return count * sizeof(T); }
};

struct Set {
  DevArray<uint16_t> attn, residual, out, gate, w_bf16, o_bf16;
  DevArray<int32_t> gidx;
  DevArray<uint8_t> w_q, w_sf, act_q, act_sf, act_sf_swz;
  DevArray<float> o_f32, act_gs;
};

// cuBLASLt NVFP4: D^T[N,M] = alpha * W(e2m1, "A", transposed) x act(e2m1, "B"), f32 out.
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo;
  bool ok = false;
  std::string why;
};

void DestroyLtPlan(LtPlan& p) {
  if (p.a) cublasLtMatrixLayoutDestroy(p.a);
  if (p.b) cublasLtMatrixLayoutDestroy(p.b);
  if (p.d) cublasLtMatrixLayoutDestroy(p.d);
  if (p.desc) cublasLtMatmulDescDestroy(p.desc);
}

struct Context {
  int64_t m = 0;
  int rotation = 1;
  std::vector<std::unique_ptr<Set>> sets;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  // Host copies of set 0's inputs for the emulator check (sampled rows only for M-sized ones).
  std::vector<int64_t> rows;
  std::vector<uint16_t> attn_rows, residual_rows, gate;
  std::vector<int32_t> gidx_rows;
  std::vector<uint8_t> w_q, w_sf;
  // cuBLASLt plans per rotation set (the scale pointers differ), made outside the timed loop.
  std::map<const Set*, LtPlan> lt_plans;

  ~Context() {
    for (auto& [set, plan] : lt_plans) DestroyLtPlan(plan);
    if (stream) cudaStreamSynchronize(stream);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
  }
};

cublasHandle_t g_cublas = nullptr;
cublasLtHandle_t g_lt = nullptr;
void* g_lt_workspace = nullptr;
constexpr size_t kLtWorkspace = size_t{64} << 20;

std::unique_ptr<Context> g_ctx;

// Bytes the fused op must move at least: attn_out read, act_q/act_sf written and read back,
// the weight once, residual read, out written, gate_index.
double FusedBytes(int64_t m) {
  return m * kK * 2.0 + 2.0 * (m * kK / 2.0 + m * kK / 16.0) + kN * kK / 2.0 + kN * kK / 16.0 +
         2.0 * m * kN * 2.0 + m * 4.0;
}

Context& GetContext(int64_t m) {
  if (g_ctx && g_ctx->m == m) return *g_ctx;
  g_ctx.reset();  // free the previous M's buffers first
  auto ctx = std::make_unique<Context>();
  ctx->m = m;
  CUDA_OK(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
  CUDA_OK(cudaEventCreate(&ctx->start));
  CUDA_OK(cudaEventCreate(&ctx->stop));
  // Enough copies that consecutive iterations never find their inputs in L2.
  const double l2 = Device().prop.l2CacheSize;
  ctx->rotation = static_cast<int>(std::clamp(std::ceil(3 * l2 / FusedBytes(m)), 1.0, 16.0));
  const int64_t swz = SwizzledScaleBytes(m, kK / 16);
  for (int r = 0; r < ctx->rotation; ++r) {
    auto s = std::make_unique<Set>();
    const uint64_t seed = 1000 * static_cast<uint64_t>(m) + r;
    s->attn.Alloc(m * kK);
    s->residual.Alloc(m * kN);
    s->out.Alloc(m * kN);
    s->gate.Alloc(kG * kN);
    s->w_bf16.Alloc(kN * kK);
    s->o_bf16.Alloc(m * kN);
    s->gidx.Alloc(m);
    s->w_q.Alloc(kN * kK / 2);
    s->w_sf.Alloc(SwizzledScaleBytes(kN, kK / 16));
    s->act_q.Alloc(m * kK / 2);
    s->act_sf.Alloc(m * kK / 16);
    s->act_sf_swz.Alloc(swz);
    s->o_f32.Alloc(m * kN);
    s->act_gs.Alloc(1);
    CUDA_OK(FillUniformBf16(s->attn.p, m * kK, seed * 8 + 1, kAttnScale, ctx->stream));
    CUDA_OK(FillUniformBf16(s->residual.p, m * kN, seed * 8 + 2, 2.f, ctx->stream));
    CUDA_OK(FillUniformBf16(s->gate.p, kG * kN, seed * 8 + 3, 1.f, ctx->stream));
    CUDA_OK(FillUniformBf16(s->w_bf16.p, kN * kK, seed * 8 + 4, 0.05f, ctx->stream));
    CUDA_OK(FillGateIndex(s->gidx.p, m, kG, seed * 8 + 5, ctx->stream));
    CUDA_OK(FillRandomBytes(s->w_q.p, s->w_q.count, seed * 8 + 6, 0xFF, 0, ctx->stream));
    // UE4M3 scales in [2^-3, 2): bytes 0x20..0x3F.
    CUDA_OK(FillRandomBytes(s->w_sf.p, s->w_sf.count, seed * 8 + 7, 0x1F, 0x20, ctx->stream));
    CUDA_OK(cudaMemsetAsync(s->act_sf_swz.p, 0, swz, ctx->stream));  // padding stays zero
    CUDA_OK(
        cudaMemcpyAsync(s->act_gs.p, &kActGs, sizeof(float), cudaMemcpyHostToDevice, ctx->stream));
    ctx->sets.push_back(std::move(s));
  }
  CUDA_OK(cudaStreamSynchronize(ctx->stream));

  // Rows the checks compare: first, last, the middle, tile edges, a few spread out.
  std::vector<int64_t> rows = {0, m / 2, m - 1, 127, 128, m / 3, (2 * m) / 3, m - 2};
  rows.erase(std::remove_if(rows.begin(), rows.end(), [&](int64_t r) { return r < 0 || r >= m; }),
             rows.end());
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  ctx->rows = rows;
  const Set& s0 = *ctx->sets[0];
  auto fetch_rows = [&](const auto* dev, int64_t row_elems, auto& dst) {
    dst.resize(rows.size() * row_elems);
    for (size_t i = 0; i < rows.size(); ++i) {
      CUDA_OK(cudaMemcpy(dst.data() + i * row_elems, dev + rows[i] * row_elems,
                         row_elems * sizeof(dst[0]), cudaMemcpyDeviceToHost));
    }
  };
  fetch_rows(s0.attn.p, kK, ctx->attn_rows);
  fetch_rows(s0.residual.p, kN, ctx->residual_rows);
  fetch_rows(s0.gidx.p, 1, ctx->gidx_rows);
  ctx->gate.resize(s0.gate.count);
  ctx->w_q.resize(s0.w_q.count);
  ctx->w_sf.resize(s0.w_sf.count);
  CUDA_OK(cudaMemcpy(ctx->gate.data(), s0.gate.p, s0.gate.bytes(), cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(ctx->w_q.data(), s0.w_q.p, s0.w_q.bytes(), cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(ctx->w_sf.data(), s0.w_sf.p, s0.w_sf.bytes(), cudaMemcpyDeviceToHost));
  g_ctx = std::move(ctx);
  return *g_ctx;
}

// Which exact emulation of the block-scaled MMA the fused op uses on sm_90 (--sm90_emulation).
Sm90Emulation g_sm90_emulation = Sm90Emulation::kFaithful;

// ---- The contenders, each one enqueue on the context's stream. ----
absl::Status RunFused(const Context& c, const Set& s, CheckMode mode) {
  OutProjArgs a;
  a.sm90_emulation = g_sm90_emulation;
  a.m = c.m;
  a.attn_out = s.attn.p;
  a.o_weight_q = s.w_q.p;
  a.o_weight_sf = s.w_sf.p;
  a.o_weight_global_scale = kWeightGs;
  a.act_global_scale = s.act_gs.p;
  a.gate = s.gate.p;
  a.gate_index = s.gidx.p;
  a.residual = s.residual.p;
  a.out = s.out.p;
  a.act_q = s.act_q.p;
  a.act_sf = s.act_sf.p;
  return MinimaxH3Nvfp4OutProj(a, c.stream, mode);
}

void RunQuantize(const Context& c, const Set& s) {
  CUDA_OK(LaunchQuantize(s.attn.p, c.m, kK, s.act_gs.p, s.act_q.p, s.act_sf.p, false, c.stream));
}

// cuBLAS's bf16 GEMM alone: o_bf16 = attn @ W^T (f32 accumulation, bf16 out).
void RunBf16Gemm(const Context& c, const Set& s) {
  // Row-major out[M,N] = attn[M,K] * W[N,K]^T is column-major out^T[N,M] = W^T... : "TN".
  const float one = 1.f, zero = 0.f;
  CUBLAS_OK(cublasSetStream(g_cublas, c.stream));
  CUBLAS_OK(cublasGemmEx(g_cublas, CUBLAS_OP_T, CUBLAS_OP_N, kN, c.m, kK, &one, s.w_bf16.p,
                         CUDA_R_16BF, kK, s.attn.p, CUDA_R_16BF, kK, &zero, s.o_bf16.p, CUDA_R_16BF,
                         kN, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void RunBf16(const Context& c, const Set& s) {
  RunBf16Gemm(c, s);
  CUDA_OK(LaunchEpilogueBf16(s.o_bf16.p, s.gate.p, s.gidx.p, s.residual.p, s.out.p, c.m, kN, kG,
                             c.stream));
}

LtPlan MakeLtPlan(const Context& c, const Set& s) {
  LtPlan p;
  auto fail = [&](const char* what, cublasStatus_t st) {
    p.why = absl::StrCat(what, " failed with cuBLAS status ", static_cast<int>(st));
    return p;
  };
  cublasStatus_t st;
  if ((st = cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F)))
    return fail("desc", st);
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  const cublasLtMatmulMatrixScale_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3;
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb));
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof(mode));
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof(mode));
  const void* sa = s.w_sf.p;
  const void* sb = s.act_sf_swz.p;
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof(sa));
  cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof(sb));
  if ((st = cublasLtMatrixLayoutCreate(&p.a, CUDA_R_4F_E2M1, kK, kN, kK)))
    return fail("layout A", st);
  if ((st = cublasLtMatrixLayoutCreate(&p.b, CUDA_R_4F_E2M1, kK, c.m, kK)))
    return fail("layout B", st);
  if ((st = cublasLtMatrixLayoutCreate(&p.d, CUDA_R_32F, kN, c.m, kN))) return fail("layout D", st);
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &kLtWorkspace, sizeof(kLtWorkspace));
  cublasLtMatmulHeuristicResult_t heur;
  int found = 0;
  st = cublasLtMatmulAlgoGetHeuristic(g_lt, p.desc, p.a, p.b, p.d, p.d, pref, 1, &heur, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0) return fail("cublasLtMatmulAlgoGetHeuristic", st);
  p.algo = heur.algo;
  p.ok = true;
  return p;
}

bool RunNvfp4(Context& c, const Set& s, std::string* why) {
  CUDA_OK(LaunchQuantize(s.attn.p, c.m, kK, s.act_gs.p, s.act_q.p, s.act_sf_swz.p, true, c.stream));
  auto it = c.lt_plans.find(&s);
  if (it == c.lt_plans.end()) it = c.lt_plans.emplace(&s, MakeLtPlan(c, s)).first;
  const LtPlan& plan = it->second;
  if (!plan.ok) {
    *why = plan.why;
    return false;
  }
  // alpha = 1 / (act_gs * w_gs), each step rounded to f32 (contract section 6).
  const float alpha = 1.f / (kActGs * kWeightGs), beta = 0.f;
  const cublasStatus_t st =
      cublasLtMatmul(g_lt, plan.desc, &alpha, s.w_q.p, plan.a, s.act_q.p, plan.b, &beta, s.o_f32.p,
                     plan.d, s.o_f32.p, plan.d, &plan.algo, g_lt_workspace, kLtWorkspace, c.stream);
  if (st != CUBLAS_STATUS_SUCCESS) {
    *why = absl::StrCat("cublasLtMatmul failed with status ", static_cast<int>(st));
    return false;
  }
  CUDA_OK(LaunchEpilogueF32(s.o_f32.p, s.gate.p, s.gidx.p, s.residual.p, s.out.p, c.m, kN, kG,
                            c.stream));
  return true;
}

// ---- Checks against the emulator (sampled rows of set 0). ----
OpInputs SampledInputs(const Context& c) {
  OpInputs in;
  in.shape = OpShape{static_cast<int64_t>(c.rows.size()), kN, kK, kG};
  in.attn_out = c.attn_rows;
  in.o_weight_q = c.w_q;
  in.o_weight_sf = c.w_sf;
  in.o_weight_global_scale = kWeightGs;
  in.act_global_scale = kActGs;
  in.gate = c.gate;
  in.gate_index = c.gidx_rows;
  in.residual = c.residual_rows;
  return in;
}

template <typename T>
std::vector<T> FetchRows(const Context& c, const T* dev, int64_t row_elems) {
  std::vector<T> dst(c.rows.size() * row_elems);
  for (size_t i = 0; i < c.rows.size(); ++i) {
    CUDA_OK(cudaMemcpy(dst.data() + i * row_elems, dev + c.rows[i] * row_elems,
                       row_elems * sizeof(T), cudaMemcpyDeviceToHost));
  }
  return dst;
}

// Empty when act_q/act_sf (linear) of set 0 equal the emulator's quantization bit for bit.
std::string CheckAct(const Context& c) {
  CUDA_OK(cudaStreamSynchronize(c.stream));
  const Set& s = *c.sets[0];
  std::vector<uint8_t> want_q(c.rows.size() * kK / 2), want_sf(c.rows.size() * kK / 16);
  QuantizeRows(c.attn_rows, c.rows.size(), kK, kActGs, absl::MakeSpan(want_q),
               absl::MakeSpan(want_sf));
  const CompareReport q = CompareBytes("act_q", want_q, FetchRows(c, s.act_q.p, kK / 2), kK / 2);
  if (!q.pass) return q.first_mismatch;
  const CompareReport sf =
      CompareBytes("act_sf", want_sf, FetchRows(c, s.act_sf.p, kK / 16), kK / 16);
  return sf.pass ? "" : sf.first_mismatch;
}

// Empty when out of set 0 lies inside the contract's envelope on the sampled rows.
std::string CheckOut(const Context& c) {
  CUDA_OK(cudaStreamSynchronize(c.stream));
  absl::StatusOr<OutEnvelope> env = ComputeOutEnvelope(SampledInputs(c), {});
  if (!env.ok()) return env.status().ToString();
  const CompareReport o = CompareOut(*env, FetchRows(c, c.sets[0]->out.p, kN), {});
  return o.pass ? ""
                : absl::StrCat(o.mismatches, " of ", o.checked, " out of the envelope, ",
                               "first (sampled-row index) ", o.first_mismatch);
}

// The unquantized bf16 pipeline differs from the contract by design: check it against a double
// reference of its own math (bf16 GEMM rounding: relative 2^-7 of the sum of |products|).
std::string CheckBf16(const Context& c) {
  CUDA_OK(cudaStreamSynchronize(c.stream));
  const Set& s = *c.sets[0];
  const std::vector<uint16_t> out = FetchRows(c, s.out.p, kN);
  std::vector<uint16_t> w16(s.w_bf16.count);
  CUDA_OK(cudaMemcpy(w16.data(), s.w_bf16.p, s.w_bf16.bytes(), cudaMemcpyDeviceToHost));
  std::vector<float> w(w16.size()), a(c.attn_rows.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = Bf16ToF32(w16[i]);
  for (size_t i = 0; i < a.size(); ++i) a[i] = Bf16ToF32(c.attn_rows[i]);
  int64_t bad = 0;
  std::string first;
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const int32_t g = c.gidx_rows[i];
    for (int64_t n = 0; n < kN; ++n) {
      const double res = Bf16ToF32(c.residual_rows[i * kN + n]);
      double want = res, tol = 0;
      if (g >= 0 && g < kG) {
        double acc = 0, mag = 0;
        const float* ar = &a[i * kK];
        const float* wr = &w[n * kK];
        for (int64_t k = 0; k < kK; ++k) {
          const double p = double{ar[k]} * wr[k];
          acc += p;
          mag += std::fabs(p);
        }
        const double gate = Bf16ToF32(c.gate[g * kN + n]);
        want = res + gate * acc;
        tol = std::fabs(gate) * (std::fabs(acc) + mag * 0x1p-8) * 0x1p-7 * 2 +
              std::fabs(want) * 0x1p-7;
      }
      const double got = Bf16ToF32(out[i * kN + n]);
      if (std::fabs(got - want) > tol) {
        if (bad++ == 0)
          first = absl::StrFormat("row %d col %d: got %g want %g", c.rows[i], n, got, want);
      }
    }
  }
  return bad == 0 ? "" : absl::StrCat(bad, " elements off; first ", first);
}

// ---- Timing. ----
void SetCounters(benchmark::State& state, const std::string& name, int64_t m, double ms,
                 double flops, double bytes) {
  Times()[{name, m}] = ms;
  const double s = ms / 1e3;
  const DeviceInfo& d = Device();
  // Google Benchmark's CSV header comes from the first benchmark and every later counter must be
  // in it: every benchmark sets every counter (0 = not applicable).
  for (const char* k :
       {"ms", "TFLOPs", "GBps", "pct_peak_flops", "pct_copy_bw", "pct_datasheet_bw",
        "x_vs_bf16_gemm", "x_vs_bf16_unfused", "x_vs_nvfp4_unfused", "x_vs_copy", "rotation"}) {
    state.counters[k] = 0;
  }
  state.counters["rotation"] = g_ctx ? g_ctx->rotation : 0;
  if (state.counters.find("check_ok") == state.counters.end()) state.counters["check_ok"] = 1;
  state.counters["ms"] = ms;
  if (flops > 0) {
    state.counters["TFLOPs"] = flops / s / 1e12;
    if (d.peak_op_tflops > 0 && name == "fused") {
      state.counters["pct_peak_flops"] = 100 * flops / s / 1e12 / d.peak_op_tflops;
    }
    if (d.peak_bf16_tflops > 0 && (name == "bf16_unfused" || name == "bf16_gemm")) {
      state.counters["pct_peak_flops"] = 100 * flops / s / 1e12 / d.peak_bf16_tflops;
    }
    if (d.peak_nvfp4_tflops > 0 && name == "nvfp4_unfused") {
      state.counters["pct_peak_flops"] = 100 * flops / s / 1e12 / d.peak_nvfp4_tflops;
    }
  }
  const double gbps = bytes / s / 1e9;
  state.counters["GBps"] = gbps;
  if (g_copy_gbps > 0) state.counters["pct_copy_bw"] = 100 * gbps / g_copy_gbps;
  if (d.datasheet_gbps > 0) state.counters["pct_datasheet_bw"] = 100 * gbps / d.datasheet_gbps;
  // Ratios: baseline time / this time (> 1: this one is faster), for baselines timed earlier.
  for (const char* base : {"bf16_gemm", "bf16_unfused", "nvfp4_unfused", "copy"}) {
    auto it = Times().find({base, m});
    if (it != Times().end() && name != base && (name == "fused" || std::string(base) == "copy")) {
      state.counters[absl::StrCat("x_vs_", base)] = it->second / ms;
    }
  }
}

template <typename Fn>
double TimeLoop(benchmark::State& state, Context& c, Fn run) {
  run(*c.sets[0]);  // warm-up (allocations, cuBLAS heuristics, module load)
  CUDA_OK(cudaStreamSynchronize(c.stream));
  double total = 0;
  int64_t iters = 0;
  for (auto _ : state) {
    const Set& s = *c.sets[iters % c.rotation];
    CUDA_OK(cudaEventRecord(c.start, c.stream));
    run(s);
    CUDA_OK(cudaEventRecord(c.stop, c.stream));
    CUDA_OK(cudaEventSynchronize(c.stop));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, c.start, c.stop));
    state.SetIterationTime(ms / 1e3);
    total += ms;
    ++iters;
  }
  return iters ? total / iters : 0;
}

// Runs `check` once per (contender, M) (Google Benchmark calls a benchmark function several
// times while it sizes the iteration count) and prints its verdict; true when it passed.
template <typename Fn>
bool CheckOnce(const char* what, int64_t m, const char* against, Fn check) {
  static auto* done = new std::map<std::pair<std::string, int64_t>, bool>;
  auto it = done->find({what, m});
  if (it != done->end()) return it->second;
  const std::string why = check();
  std::fprintf(stderr, "check %-14s M=%-6lld %s\n", what, static_cast<long long>(m),
               why.empty() ? absl::StrCat("PASS (", against, ")").c_str()
                           : absl::StrCat("FAIL (", against, "): ", why).c_str());
  (*done)[{what, m}] = why.empty();
  return why.empty();
}

// The roofline's measured bandwidth: the best of 10 device-to-device copies of 1 GiB (bytes
// read plus bytes written per second).
double MeasureCopyBandwidth() {
  const size_t bytes = size_t{1} << 30;
  void *a = nullptr, *b = nullptr;
  CUDA_OK(cudaMalloc(&a, bytes));
  CUDA_OK(cudaMalloc(&b, bytes));
  CUDA_OK(cudaMemset(a, 0, bytes));
  cudaEvent_t e0, e1;
  CUDA_OK(cudaEventCreate(&e0));
  CUDA_OK(cudaEventCreate(&e1));
  float best = 1e30f;
  for (int i = 0; i < 10; ++i) {
    CUDA_OK(cudaEventRecord(e0));
    CUDA_OK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
    CUDA_OK(cudaEventRecord(e1));
    CUDA_OK(cudaEventSynchronize(e1));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
    best = std::min(best, ms);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaFree(a);
  cudaFree(b);
  return 2.0 * bytes / (best / 1e3) / 1e9;
}

void BM_Copy(benchmark::State& state, int64_t m) {
  Context& c = GetContext(m);
  const size_t bytes = c.sets[0]->attn.bytes();
  const double ms = TimeLoop(state, c, [&](const Set& s) {
    CUDA_OK(cudaMemcpyAsync(s.o_f32.p, s.attn.p, bytes, cudaMemcpyDeviceToDevice, c.stream));
  });
  SetCounters(state, "copy", m, ms, 0, 2.0 * bytes);
}

void BM_Quantize(benchmark::State& state, int64_t m) {
  Context& c = GetContext(m);
  const bool ok = CheckOnce("quantize", m, "emulator QuantizeRows, bit-exact, sampled rows", [&] {
    RunQuantize(c, *c.sets[0]);
    return CheckAct(c);
  });
  state.counters["check_ok"] = ok;
  const double ms = TimeLoop(state, c, [&](const Set& s) { RunQuantize(c, s); });
  SetCounters(state, "quantize", m, ms, 0, m * kK * 2.0 + m * kK / 2.0 + m * kK / 16.0);
}

// The bf16 GEMM alone (issue 4's yardstick: the fused op against cuBLAS's bf16 GEMM of the same
// shape). Its output is checked through the unfused pipeline's check (GEMM, then the epilogue).
void BM_Bf16Gemm(benchmark::State& state, int64_t m) {
  Context& c = GetContext(m);
  const bool ok = CheckOnce("bf16_gemm", m, "double-precision reference, sampled rows", [&] {
    RunBf16(c, *c.sets[0]);
    return CheckBf16(c);
  });
  state.counters["check_ok"] = ok;
  const double ms = TimeLoop(state, c, [&](const Set& s) { RunBf16Gemm(c, s); });
  // bf16 weight and activations read, bf16 o written.
  const double bytes = m * kK * 2.0 + kN * kK * 2.0 + m * kN * 2.0;
  SetCounters(state, "bf16_gemm", m, ms, 2.0 * m * kN * kK, bytes);
}

void BM_Bf16Unfused(benchmark::State& state, int64_t m) {
  Context& c = GetContext(m);
  const bool ok = CheckOnce("bf16_unfused", m, "double-precision reference, sampled rows", [&] {
    RunBf16(c, *c.sets[0]);
    return CheckBf16(c);
  });
  state.counters["check_ok"] = ok;
  const double ms = TimeLoop(state, c, [&](const Set& s) { RunBf16(c, s); });
  // bf16 weight and activations, bf16 o written and read back, residual, out.
  const double bytes = m * kK * 2.0 + kN * kK * 2.0 + 2 * m * kN * 2.0 + 2 * m * kN * 2.0;
  SetCounters(state, "bf16_unfused", m, ms, 2.0 * m * kN * kK, bytes);
}

void BM_Nvfp4Unfused(benchmark::State& state, int64_t m) {
  if (Device().prop.major < 10) {
    state.SkipWithError(absl::StrFormat("cuBLASLt NVFP4 (VEC16_UE4M3) needs sm_100/sm_120; this "
                                        "is sm_%d%d: skipped",
                                        Device().prop.major, Device().prop.minor)
                            .c_str());
    for (auto _ : state) {
    }
    return;
  }
  Context& c = GetContext(m);
  std::string why;
  if (!RunNvfp4(c, *c.sets[0], &why)) {
    state.SkipWithError(why.c_str());
    for (auto _ : state) {
    }
    return;
  }
  const bool ok = CheckOnce("nvfp4_unfused", m, "emulator envelope of out, sampled rows",
                            [&] { return CheckOut(c); });
  state.counters["check_ok"] = ok;
  const double ms = TimeLoop(state, c, [&](const Set& s) { RunNvfp4(c, s, &why); });
  const double bytes = FusedBytes(m) + 2 * m * kN * 4.0;  // + o f32 written and read back
  SetCounters(state, "nvfp4_unfused", m, ms, 2.0 * m * kN * kK, bytes);
}

void BM_Fused(benchmark::State& state, int64_t m) {
  Context& c = GetContext(m);
  absl::Status st = RunFused(c, *c.sets[0], CheckMode::kChecked);
  if (!st.ok()) {
    state.SkipWithError(st.ToString().c_str());
    for (auto _ : state) {
    }
    return;
  }
  const bool ok =
      CheckOnce("fused", m, "emulator: act bit-exact, out in envelope, sampled rows", [&] {
        const std::string why = CheckAct(c);
        return why.empty() ? CheckOut(c) : why;
      });
  state.counters["check_ok"] = ok;
  const double ms = TimeLoop(state, c, [&](const Set& s) {
    absl::Status s2 = RunFused(c, s, CheckMode::kAsync);
    if (!s2.ok()) std::fprintf(stderr, "fused: %s\n", s2.ToString().c_str());
  });
  SetCounters(state, "fused", m, ms, 2.0 * m * kN * kK, FusedBytes(m));
}

std::vector<int64_t> ParseMs(int* argc, char** argv) {
  std::vector<int64_t> ms = {128, 1024, 4096, 16384, 32768, 75856};
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string a = argv[i];
    if (a == "--sm90_emulation=fast" || a == "--sm90_emulation=faithful") {
      g_sm90_emulation = a.back() == 't' ? Sm90Emulation::kFast : Sm90Emulation::kFaithful;
    } else if (a.rfind("--sm90_emulation", 0) == 0) {
      std::fprintf(stderr, "--sm90_emulation: expected faithful or fast, got '%s'\n", a.c_str());
      std::exit(2);
    } else if (a.rfind("--bench_m=", 0) == 0) {
      ms.clear();
      for (absl::string_view v : absl::StrSplit(a.substr(10), ',')) {
        int64_t m = 0;
        if (!absl::SimpleAtoi(v, &m) || m < 1) {
          std::fprintf(stderr, "--bench_m: expected positive integers, got '%s'\n", a.c_str());
          std::exit(2);
        }
        ms.push_back(m);
      }
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  return ms;
}

int Main(int argc, char** argv) {
  const std::vector<int64_t> ms = ParseMs(&argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "no CUDA device: the benchmark needs a GPU (nothing measured)\n");
    return 0;
  }
  const DeviceInfo& d = Device();
  absl::StatusOr<std::string> build = OutProjBackendName(g_sm90_emulation);
  std::fprintf(stderr,
               "device: %s (sm_%d%d, %d SMs, L2 %d MiB); fused op build: %s\n"
               "roofline: %s peak %.1f TFLOP/s (datasheet), memory %.0f GB/s (datasheet) and the "
               "measured D2D copy bandwidth\n",
               d.prop.name, d.prop.major, d.prop.minor, d.prop.multiProcessorCount,
               d.prop.l2CacheSize >> 20,
               build.ok() ? build->c_str() : build.status().ToString().c_str(), d.peak_what.c_str(),
               d.peak_op_tflops, d.datasheet_gbps);
  CUBLAS_OK(cublasCreate(&g_cublas));
  CUBLAS_OK(cublasLtCreate(&g_lt));
  CUDA_OK(cudaMalloc(&g_lt_workspace, kLtWorkspace));
  g_copy_gbps = MeasureCopyBandwidth();
  std::fprintf(stderr, "measured D2D copy bandwidth (1 GiB, best of 10): %.0f GB/s\n", g_copy_gbps);
  for (int64_t m : ms) {
    auto reg = [&](const char* name, void (*fn)(benchmark::State&, int64_t)) {
      benchmark::RegisterBenchmark(absl::StrCat(name, "/M:", m).c_str(), fn, m)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond)
          ->MinTime(0.1);
    };
    reg("copy", BM_Copy);
    reg("quantize", BM_Quantize);
    reg("bf16_gemm", BM_Bf16Gemm);
    reg("bf16_unfused", BM_Bf16Unfused);
    reg("nvfp4_unfused", BM_Nvfp4Unfused);
    reg("fused", BM_Fused);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  g_ctx.reset();
  return 0;
}

}  // namespace
}  // namespace h3::bench

int main(int argc, char** argv) { return h3::bench::Main(argc, argv); }
