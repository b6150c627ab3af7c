#ifndef H3_HARNESS_TESTBED_RNG_H_
#define H3_HARNESS_TESTBED_RNG_H_

// The one deterministic RNG of the tests, the sweep and the benchmarks: splitmix64.
//  - Mix64 / Hash: stateless, so a generated value is a pure function of
//    (seed, tensor, row, column) and any subset of rows can be generated alone.
//  - Rng: a sequential stream for test code that draws many values in a fixed order.
// Mix64 and Hash are H3_HD: the benchmarks' device-side input fill calls these same functions, so
// there is one splitmix64 in the project, not a host copy and a device copy.

#include <cmath>
#include <cstdint>

#include "core/host_device.h"

namespace h3::testbed {

// splitmix64's finalizer (Steele, Lea, Flood 2014): a bijective 64-bit mix.
H3_HD uint64_t Mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The value of (seed, stream = which tensor, row, col).
H3_HD uint64_t Hash(uint64_t seed, uint64_t stream, uint64_t row, uint64_t col) {
  return Mix64(Mix64(Mix64(seed ^ (stream << 56)) ^ row) ^ col);
}

// Sequential splitmix64: Next() is Mix64 of a counter advanced by the golden-ratio increment.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    const uint64_t x = state_;
    state_ += 0x9E3779B97F4A7C15ull;
    return Mix64(x);
  }
  // Uniform integer in [lo, hi] (modulo bias < 2^-32 for the small ranges tests use).
  int Int(int lo, int hi) {
    return lo + static_cast<int>(Next() % static_cast<uint64_t>(hi - lo + 1));
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double Normal() {                                                           // Box-Muller
    const double u = Uniform() + 1e-300, v = Uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
  }

 private:
  uint64_t state_;
};

}  // namespace h3::testbed

#endif  // H3_HARNESS_TESTBED_RNG_H_
