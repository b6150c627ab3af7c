// The benchmark's inputs for one M at the MiniMax-H3 shape (K: BenchK()): rotation sets generated
// on the device (enough of them that consecutive calls never find their inputs in L2), and host
// copies of set 0 for the checks against the emulator.

#ifndef H3_HARNESS_BENCH_INPUTS_H_
#define H3_HARNESS_BENCH_INPUTS_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/shape.h"
#include "harness/testbed/cuda.h"

namespace h3::bench {

inline constexpr int64_t kN = kH3N, kG = kH3G;
// K of every contender: the MiniMax-H3 7168 unless --bench_k set another (the epilogue's
// calibration times the fused op at small K; main.cc sets it once, before any benchmark runs).
int64_t BenchK();
void SetBenchK(int64_t k);
inline constexpr float kAttnScale = 4.f;              // attn_out uniform in [-4, 4)
inline constexpr float kActGs = 2688.f / kAttnScale;  // calibrated: 448 * 6 / amax
inline constexpr float kWeightGs = 1.f;               // random codes and scales, global scale 1
inline constexpr int64_t kCheckRows = 12;             // rows each check compares

// One copy of every tensor any contender reads or writes.
struct RotationSet {
  testbed::DeviceBuffer<uint16_t> attn;       // bf16 [m, K]
  testbed::DeviceBuffer<uint16_t> residual;   // bf16 [m, N]
  testbed::DeviceBuffer<uint16_t> out;        // bf16 [m, N]
  testbed::DeviceBuffer<uint16_t> gate;       // bf16 [G, N]
  testbed::DeviceBuffer<int32_t> gate_index;  // [m]
  testbed::DeviceBuffer<uint16_t> w_bf16;     // bf16 [N, K]: the bf16 baselines' weight
  testbed::DeviceBuffer<uint8_t> w_q;         // e2m1 [N, K/2]
  testbed::DeviceBuffer<uint8_t> w_sf;        // ue4m3, SwizzledScaleBytes(N, K/16)
  testbed::DeviceBuffer<float> act_gs;        // [1]
  testbed::DeviceBuffer<uint8_t> act_q;       // e2m1 [m, K/2]
  testbed::DeviceBuffer<uint8_t> act_sf;      // ue4m3 [m, K/16], linear
  testbed::DeviceBuffer<uint8_t> act_sf_swz;  // SwizzledScaleBytes(m, K/16): cuBLASLt's layout
  testbed::DeviceBuffer<uint16_t> o_bf16;     // bf16 [m, N]: the bf16 GEMM's output
  testbed::DeviceBuffer<float> o_f32;         // f32 [m, N]: the NVFP4 GEMM's output, copy target
};

// Set 0's inputs on the host: the sampled rows of the M-sized tensors (testbed::SampleRows: first,
// last, the tile edges, the middle and random rows, kCheckRows in all), the small ones whole.
struct HostRows {
  std::vector<int64_t> rows;        // ascending op rows
  std::vector<uint16_t> attn;       // bf16 [rows, K]
  std::vector<uint16_t> residual;   // bf16 [rows, N]
  std::vector<int32_t> gate_index;  // [rows]
  std::vector<uint16_t> gate;       // bf16 [G, N]
  std::vector<uint8_t> w_q, w_sf;   // as on the device
  std::vector<float> act_smooth;    // [K]: the smoothed rows' factors (SmoothFactor)
  std::vector<uint16_t> lora_down, lora_up;  // bf16 [kBenchRank, K], [N, kBenchRank]
};

struct Inputs {
  int64_t m = 0;
  std::vector<std::unique_ptr<RotationSet>> sets;  // at least 2
  HostRows host;
  // act_smooth of the fused_smoothed row (contract section 12), one for every set: [K] floats
  // stay in L2 whatever the rotation.
  testbed::DeviceBuffer<float> act_smooth;
  // The low-rank branch of the fused_smoothed_lowrank32 row (contract section 13), shared alike.
  testbed::DeviceBuffer<uint16_t> lora_down, lora_up;
};

inline constexpr int64_t kBenchRank = 32;  // SVDQuant's and ModelOpt's default rank

// Factor c of the fused_smoothed row: 2^u, u uniform in [-1, 1] (calibrated factors' spread).
float SmoothFactor(int64_t c);

// Bytes the fused op moves at least: attn_out read, act_q/act_sf written and read back, the weight
// once, residual read, out written, gate_index.
double FusedBytes(int64_t m);

// How many rotation sets M gets: enough that the sets together exceed 3x the L2 (by the fused op's
// bytes), at least 2 (consecutive calls never share buffers), at most 16.
int RotationCount(int64_t m, int64_t l2_bytes);

// Allocates and fills every rotation set on `stream` and downloads set 0's HostRows.
absl::StatusOr<std::unique_ptr<Inputs>> MakeInputs(int64_t m, int64_t l2_bytes,
                                                   cudaStream_t stream);

}  // namespace h3::bench

#endif  // H3_HARNESS_BENCH_INPUTS_H_
