#ifndef H3_KERNELS_EPILOGUE_CUH_
#define H3_KERNELS_EPILOGUE_CUH_

// The fused epilogue (docs/contract.md section 6), from the accumulator registers to global
// memory:
//   o = acc (x) alpha;  t = bf16(f32(gate[g, n]) (x) o);  out = bf16(f32(residual) (+) f32(t))
// for g = gate_index[m] in [0, G); otherwise out = residual bit for bit.
//
// Latency, not arithmetic, is its cost. The load warp prefetched the tile's residual rows to L2
// during the main loop; here a warp first turns its accumulators into t (gate loads need not
// wait for stores: gate never aliases out), then reads the residual in batches of 4 rows (32
// words per thread) before it writes any of them: 1 (gate_index) + 1 (gate) + kMFrags /
// kEpiBatch L2 round trips per warp tile instead of two per fragment row. out may be exactly
// residual (contract section 9): every element is still read before it is written, by the same
// thread, and the batches are disjoint.

#include <cstdint>

#include "kernels/mainloop.cuh"

namespace h3::kernels {

// bf16x2 {hi, lo} = {bf16(hi), bf16(lo)}: cvt.rn.bf16x2.f32 d, a, b (sm_80+) puts a in the upper
// half. Round to nearest-even; every NaN -> 0x7FFF (contract notation bf16()): checked on the
// H200 against the integer formula below for all 2^32 inputs in both halves (unit_kernels_test).
__device__ __forceinline__ uint32_t F32x2ToBf16x2Rn(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// The contract's bf16() written with integers: the reference F32x2ToBf16x2Rn is held to.
__device__ __forceinline__ uint32_t F32ToBf16Rne(float f) {
  const uint32_t u = __float_as_uint(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFFu;
  return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

struct EpilogueArgs {
  int64_t m;
  int n, g;
  float alpha;  // 1 (/) (act_gs (x) w_gs)
  const uint16_t* gate;
  const int32_t* gate_index;
  const uint16_t* residual;  // may equal out: no __restrict__
  uint16_t* out;
};

// t = bf16(f32(gate) (x) (acc (x) alpha)) for one bf16 pair (col, col + 1), packed.
__device__ __forceinline__ uint32_t GateProductPair(float acc0, float acc1, float alpha,
                                                    uint32_t gate) {
#if !H3_NATIVE_BLOCK_SCALED_MMA
  // The sm_90 emulations accumulate acc (x) 2^-16 (exact scaling): undo it first.
  acc0 = __fmul_rn(acc0, sm90::kEmuAccScale);
  acc1 = __fmul_rn(acc1, sm90::kEmuAccScale);
#endif
  const float o0 = __fmul_rn(acc0, alpha), o1 = __fmul_rn(acc1, alpha);
  return F32x2ToBf16x2Rn(__fmul_rn(__uint_as_float(gate << 16), o0),
                         __fmul_rn(__uint_as_float(gate & 0xFFFF0000u), o1));
}

// out = bf16(f32(residual) (+) f32(t)) for one packed pair.
__device__ __forceinline__ uint32_t AddResidualPair(uint32_t res, uint32_t t) {
  return F32x2ToBf16x2Rn(
      __fadd_rn(__uint_as_float(res << 16), __uint_as_float(t << 16)),
      __fadd_rn(__uint_as_float(res & 0xFFFF0000u), __uint_as_float(t & 0xFFFF0000u)));
}

template <class Cfg>
__device__ __forceinline__ void StoreTile(const WarpAcc<Cfg>& acc, int64_t row_base, int col_base,
                                          const EpilogueArgs& e) {
  constexpr int kEpiBatch = 2;  // m fragments (4 accumulator rows) per batch of residual loads
  static_assert(Cfg::kMFrags % kEpiBatch == 0, "whole batches of m fragments");
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  // The gate row of each of this thread's 2 * kMFrags rows (C rows g and g + 8 of fragment i),
  // -1 for rows beyond M or ungated: one round trip for all of them.
  int32_t gate_row[Cfg::kMFrags][2];  // [m fragment][h]
#pragma unroll
  for (int i = 0; i < Cfg::kMFrags; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = row_base + 16 * i + g + 8 * h;
      const int32_t gi = row < e.m ? __ldg(e.gate_index + row) : -1;
      gate_row[i][h] = gi >= 0 && gi < e.g ? gi : -1;
    }
  // t for every gated pair, in place of the accumulators (half the registers). gate is
  // read-only and never aliases out, so its loads need not wait for any store.
  uint32_t tq[Cfg::kMFrags][2][Cfg::kNFrags];  // [m fragment][h][n fragment]: bf16 pairs
#pragma unroll
  for (int i = 0; i < Cfg::kMFrags; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int32_t gr = gate_row[i][h];
#pragma unroll
      for (int j = 0; j < Cfg::kNFrags; ++j) {
        const int col = col_base + 8 * j + 2 * t;
        tq[i][h][j] = gr >= 0 ? GateProductPair(acc.v[i][j][2 * h], acc.v[i][j][2 * h + 1], e.alpha,
                                                __ldg(reinterpret_cast<const uint32_t*>(
                                                    e.gate + static_cast<int64_t>(gr) * e.n + col)))
                              : 0u;
      }
    }
#pragma unroll
  for (int i0 = 0; i0 < Cfg::kMFrags; i0 += kEpiBatch) {
    // Every residual load of the batch before any of its stores.
    uint32_t res[kEpiBatch][2][Cfg::kNFrags];  // [fragment][h][n fragment]: bf16 pairs
#pragma unroll
    for (int b = 0; b < kEpiBatch; ++b)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t row = row_base + 16 * (i0 + b) + g + 8 * h;
#pragma unroll
        for (int j = 0; j < Cfg::kNFrags; ++j) {
          const int col = col_base + 8 * j + 2 * t;
          res[b][h][j] =
              row < e.m ? *reinterpret_cast<const uint32_t*>(e.residual + row * e.n + col) : 0u;
        }
      }
#pragma unroll
    for (int b = 0; b < kEpiBatch; ++b)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int i = i0 + b;
        const int64_t row = row_base + 16 * i + g + 8 * h;
        if (row >= e.m) continue;
#pragma unroll
        for (int j = 0; j < Cfg::kNFrags; ++j) {
          const int col = col_base + 8 * j + 2 * t;
          *reinterpret_cast<uint32_t*>(e.out + row * e.n + col) =
              gate_row[i][h] >= 0 ? AddResidualPair(res[b][h][j], tq[i][h][j]) : res[b][h][j];
        }
      }
  }
}

// Timing only (OutProjDebug::kSkipEpilogue): no epilogue, but every accumulator is used (an xor
// fold feeding a store the compiler cannot rule out; it needs alpha < 0, i.e. a global scale the
// contract calls invalid, where the outputs are unspecified), so no MMA is dead code.
template <class Cfg>
__device__ __forceinline__ void FoldTile(const WarpAcc<Cfg>& acc, const EpilogueArgs& e) {
  uint32_t x = 0;
#pragma unroll
  for (int i = 0; i < Cfg::kMFrags; ++i)
#pragma unroll
    for (int j = 0; j < Cfg::kNFrags; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) x ^= __float_as_uint(acc.v[i][j][c]);
  if (x == 0x7FC00001u && e.alpha < 0.0f && e.m > 0) e.out[0] = 0x7FC0u;
}

}  // namespace h3::kernels

#endif  // H3_KERNELS_EPILOGUE_CUH_
