#ifndef H3_KERNELS_TEST_PROBLEM_H_
#define H3_KERNELS_TEST_PROBLEM_H_

// Test/benchmark helpers: host problems (exact or full-entropy data), device buffers, and a
// runner that checks the GPU op against the emulator.

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "emulator/formats.h"
#include "emulator/op.h"
#include "emulator/swizzle.h"
#include "kernels/out_proj.h"

namespace h3::kernels::testing {

// splitmix64: fast, reproducible.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t Next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  int Int(int lo, int hi) {
    return lo + static_cast<int>(Next() % static_cast<uint64_t>(hi - lo + 1));
  }
  double Uniform() { return (Next() >> 11) * 0x1.0p-53; }
  double Normal() {  // Box-Muller
    const double u = Uniform() + 1e-300, v = Uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  }
};

enum class Data {
  kExact,    // grid values with power-of-two block amax: every partial sum exact
  kEntropy,  // gaussian bf16 activations, weights from random f32 via the weight quantizer
};

struct Problem {
  OpShape shape;
  std::vector<uint16_t> attn, gate, residual;
  std::vector<uint8_t> w_q, w_sf;
  std::vector<int32_t> gate_index;
  float w_gs = 1.f, act_gs = 1.f;

  OpInputs Inputs() const {
    OpInputs in;
    in.shape = shape;
    in.attn_out = attn;
    in.o_weight_q = w_q;
    in.o_weight_sf = w_sf;
    in.o_weight_global_scale = w_gs;
    in.act_global_scale = act_gs;
    in.gate = gate;
    in.gate_index = gate_index;
    in.residual = residual;
    return in;
  }
};

// pool_rows > 0: attn_out rows are copies of pool_rows distinct random rows (fast for huge M).
Problem MakeProblem(int64_t m, int64_t n, int64_t k, int64_t g, Data data, uint64_t seed,
                    int64_t pool_rows = 0);

// Device copies of a problem and the op's outputs.
struct DeviceProblem {
  uint16_t *attn = nullptr, *gate = nullptr, *residual = nullptr, *out = nullptr;
  uint8_t *w_q = nullptr, *w_sf = nullptr, *act_q = nullptr, *act_sf = nullptr;
  int32_t* gate_index = nullptr;
  float *act_gs = nullptr, *w_gs = nullptr;
  int64_t m = 0, n = 0, k = 0;
  explicit DeviceProblem(const Problem& p);
  ~DeviceProblem();
  DeviceProblem(const DeviceProblem&) = delete;
  DeviceProblem& operator=(const DeviceProblem&) = delete;
  // Fills out, act_q and act_sf with NaN patterns (0x7FC1 / 0xFF).
  void Poison() const;
  void ResetResidual(const Problem& p) const;
};

template <typename T>
std::vector<T> ToHost(const T* d, int64_t count) {
  std::vector<T> h(static_cast<size_t>(count));
  if (count > 0) cudaMemcpy(h.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost);
  return h;
}

// The op's arguments for a problem on the device (caller workspaces, weight scale on the host).
OutProjArgs ArgsFor(const Problem& p, const DeviceProblem& d);

}  // namespace h3::kernels::testing

#endif  // H3_KERNELS_TEST_PROBLEM_H_
