#include "kernels/test_problem.h"

#include <cstdlib>

#include "emulator/weight.h"

namespace h3::kernels::testing {
namespace {

// bf16 of grid value c (e2m1 code) * 2^e.
uint16_t GridBf16(int code, int e) {
  return F32ToBf16(std::ldexp(E2M1ToF32(static_cast<uint8_t>(code)), e));
}

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::abort();
  }
}

template <typename T>
T* Upload(const std::vector<T>& h) {
  T* d = nullptr;
  Check(cudaMalloc(&d, std::max<size_t>(h.size(), 1) * sizeof(T)), "cudaMalloc");
  if (!h.empty())
    Check(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), "upload");
  return d;
}

}  // namespace

Problem MakeProblem(int64_t m, int64_t n, int64_t k, int64_t g, Data data, uint64_t seed,
                    int64_t pool_rows) {
  if (pool_rows > 0 && pool_rows < m) {
    Problem p = MakeProblem(pool_rows, n, k, g, data, seed);
    Problem big = MakeProblem(0, n, k, g, data, seed);
    big.shape.m = m;
    big.w_q = p.w_q;
    big.w_sf = p.w_sf;
    big.w_gs = p.w_gs;
    big.act_gs = p.act_gs;
    big.gate = p.gate;
    big.attn.resize(static_cast<size_t>(m * k));
    big.residual.resize(static_cast<size_t>(m * n));
    big.gate_index.resize(static_cast<size_t>(m));
    Rng rng(seed + 1);
    for (int64_t r = 0; r < m; ++r) {
      const int64_t src = (r * 7) % pool_rows;
      std::memcpy(&big.attn[r * k], &p.attn[src * k], k * 2);
      std::memcpy(&big.residual[r * n], &p.residual[src * n], n * 2);
      big.gate_index[r] = rng.Int(0, static_cast<int>(g) - 1);
    }
    return big;
  }
  Problem p;
  p.shape = OpShape{m, n, k, g};
  Rng rng(seed);
  p.attn.resize(static_cast<size_t>(m * k));
  p.gate.resize(static_cast<size_t>(g * n));
  p.residual.resize(static_cast<size_t>(m * n));
  p.gate_index.resize(static_cast<size_t>(m));
  for (auto& x : p.gate) x = F32ToBf16(static_cast<float>(rng.Normal()));
  for (auto& x : p.residual) x = F32ToBf16(static_cast<float>(4.0 * rng.Normal()));
  for (auto& x : p.gate_index) x = rng.Int(0, static_cast<int>(g) - 1);
  if (data == Data::kExact) {
    // Activations: each 16-block holds grid values times 2^e with |x_0| = 6 * 2^e, so with
    // act_gs = 1 the block scale is exactly 2^e and every code reproduces the grid value.
    // Weights: random codes, scales 2^{-1,0,1}, w_gs = 1. With e in {-1, 0, 1}, products are
    // multiples of 2^-4 and sum|products| <= 36 * 4 * k < 2^20 for k <= 1024: exact in f32.
    p.act_gs = 1.f;
    p.w_gs = 1.f;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t b = 0; b < k / 16; ++b) {
        const int e = rng.Int(-1, 1);
        uint16_t* x = &p.attn[static_cast<size_t>(r * k + b * 16)];
        x[0] = GridBf16(7 | (rng.Int(0, 1) << 3), e);
        for (int i = 1; i < 16; ++i) x[i] = GridBf16(rng.Int(0, 15), e);
      }
    }
    p.w_q.resize(static_cast<size_t>(n * k / 2));
    for (auto& x : p.w_q) x = static_cast<uint8_t>(rng.Next());
    std::vector<uint8_t> lin(static_cast<size_t>(n * (k / 16)));
    static const uint8_t kPow2[3] = {0x30, 0x38, 0x40};  // e4m3 0.5, 1, 2
    for (auto& x : lin) x = kPow2[rng.Int(0, 2)];
    p.w_sf = SwizzleScales(lin, n, k / 16);
  } else {
    float amax = 0.f;
    for (auto& x : p.attn) {
      x = F32ToBf16(static_cast<float>(rng.Normal() * std::exp(rng.Normal())));
      amax = std::max(amax, std::fabs(Bf16ToF32(x)));
    }
    p.act_gs = 2688.0f / amax;
    std::vector<float> w(static_cast<size_t>(n * k));
    for (auto& x : w) x = static_cast<float>(0.02 * rng.Normal());
    auto qw = QuantizeWeightF32(w, n, k);
    if (!qw.ok()) std::abort();
    p.w_q = std::move(qw->q);
    p.w_sf = std::move(qw->sf);
    p.w_gs = qw->global_scale;
  }
  return p;
}

DeviceProblem::DeviceProblem(const Problem& p) : m(p.shape.m), n(p.shape.n), k(p.shape.k) {
  attn = Upload(p.attn);
  gate = Upload(p.gate);
  residual = Upload(p.residual);
  w_q = Upload(p.w_q);
  w_sf = Upload(p.w_sf);
  gate_index = Upload(p.gate_index);
  act_gs = Upload(std::vector<float>{p.act_gs});
  w_gs = Upload(std::vector<float>{p.w_gs});
  Check(cudaMalloc(&out, std::max<int64_t>(m * n, 1) * 2), "cudaMalloc out");
  Check(cudaMalloc(&act_q, std::max<int64_t>(m * k / 2, 1)), "cudaMalloc act_q");
  Check(cudaMalloc(&act_sf, std::max<int64_t>(m * k / 16, 1)), "cudaMalloc act_sf");
  Poison();
}

DeviceProblem::~DeviceProblem() {
  for (void* d :
       {static_cast<void*>(attn), static_cast<void*>(gate), static_cast<void*>(residual),
        static_cast<void*>(out), static_cast<void*>(w_q), static_cast<void*>(w_sf),
        static_cast<void*>(act_q), static_cast<void*>(act_sf), static_cast<void*>(gate_index),
        static_cast<void*>(act_gs), static_cast<void*>(w_gs)}) {
    cudaFree(d);
  }
}

void DeviceProblem::Poison() const {
  std::vector<uint16_t> nan(static_cast<size_t>(std::max<int64_t>(m * n, 1)), 0x7FC1);
  Check(cudaMemcpy(out, nan.data(), nan.size() * 2, cudaMemcpyHostToDevice), "poison out");
  Check(cudaMemset(act_q, 0xFF, std::max<int64_t>(m * k / 2, 1)), "poison act_q");
  Check(cudaMemset(act_sf, 0xFF, std::max<int64_t>(m * k / 16, 1)), "poison act_sf");
  Check(cudaDeviceSynchronize(), "poison");
}

void DeviceProblem::ResetResidual(const Problem& p) const {
  if (!p.residual.empty()) {
    Check(cudaMemcpy(residual, p.residual.data(), p.residual.size() * 2, cudaMemcpyHostToDevice),
          "residual");
  }
}

OutProjArgs ArgsFor(const Problem& p, const DeviceProblem& d) {
  OutProjArgs a;
  a.m = p.shape.m;
  a.n = p.shape.n;
  a.k = p.shape.k;
  a.g = p.shape.g;
  a.attn_out = d.attn;
  a.o_weight_q = d.w_q;
  a.o_weight_sf = d.w_sf;
  a.o_weight_global_scale = p.w_gs;
  a.act_global_scale = d.act_gs;
  a.gate = d.gate;
  a.gate_index = d.gate_index;
  a.residual = d.residual;
  a.out = d.out;
  a.act_q = d.act_q;
  a.act_sf = d.act_sf;
  return a;
}

}  // namespace h3::kernels::testing
