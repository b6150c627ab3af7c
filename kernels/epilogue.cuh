#ifndef H3_KERNELS_EPILOGUE_CUH_
#define H3_KERNELS_EPILOGUE_CUH_

// The fused epilogue (docs/contract.md section 6), from the accumulator registers to global
// memory:
//   o = acc (x) alpha;  t = bf16(f32(gate[g, n]) (x) o);  out = bf16(f32(residual) (+) f32(t))
// for g = gate_index[m] in [0, G); otherwise out = residual bit for bit.
//
// Memory latency and memory instructions, not arithmetic, are its cost (measured on the H200,
// NOTES.md). The load warp prefetched the tile's residual rows to L2 during the main loop; here a
// warp first turns its accumulators into t (gate loads need not wait for stores: gate never
// aliases out), then reads the residual in batches of 4 rows (32 words per thread) before it
// writes any of them: 1 (gate_index) + 1 (gate) + kMFrags / kEpiBatch L2 round trips per warp
// tile. With 16-byte accesses when gate, residual and out allow it (a quarter of the memory
// instructions), 4-byte ones otherwise. out may be exactly residual (contract section 9): every
// element is still read before it is written, by the same thread, and the batches are disjoint.

#include <cstdint>

#include "kernels/params.h"
#include "kernels/warp_acc.cuh"

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

// t = bf16(f32(gate) (x) (acc (x) alpha)) for one bf16 pair (col, col + 1), packed.
template <class Arch>
__device__ __forceinline__ uint32_t GateProductPair(float acc0, float acc1, float alpha,
                                                    uint32_t gate) {
  const float o0 = __fmul_rn(Arch::UnscaleAcc(acc0), alpha);
  const float o1 = __fmul_rn(Arch::UnscaleAcc(acc1), alpha);
  return F32x2ToBf16x2Rn(__fmul_rn(__uint_as_float(gate << 16), o0),
                         __fmul_rn(__uint_as_float(gate & 0xFFFF0000u), o1));
}

// out = bf16(f32(residual) (+) f32(t)) for one packed pair.
__device__ __forceinline__ uint32_t AddResidualPair(uint32_t res, uint32_t t) {
  return F32x2ToBf16x2Rn(
      __fadd_rn(__uint_as_float(res << 16), __uint_as_float(t << 16)),
      __fadd_rn(__uint_as_float(res & 0xFFFF0000u), __uint_as_float(t & 0xFFFF0000u)));
}

// The gate row of each of a thread's 2 * kMFrags rows (C rows lrow and lrow + 8 of m fragment i
// of the warp tile at row_base), -1 for rows beyond M or ungated: one round trip for all of them.
template <class Cfg>
__device__ __forceinline__ void LoadGateRows(int64_t row_base, int lrow, const OutProjParams& p,
                                             int32_t (&gate_row)[Cfg::kMFrags][2]) {
#pragma unroll
  for (int i = 0; i < Cfg::kMFrags; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = row_base + 16 * i + lrow + 8 * h;
      const int32_t gi = row < p.m ? __ldg(p.gate_index + row) : -1;
      gate_row[i][h] = gi >= 0 && gi < p.g ? gi : -1;
    }
}

// A 4 x 4 transpose of 32-bit words across the 4 lanes of each quad (lanes 4r..4r+3): on return
// a[k] of lane t is what a[t] of lane k was. Two shuffle rounds, every lane of the warp taking
// part: first the off-diagonal 2 x 2 blocks swap (xor 2), then the off-diagonal words within
// them (xor 1).
__device__ __forceinline__ void QuadTranspose(uint32_t (&a)[4]) {
  const int t = threadIdx.x & 3;
#pragma unroll
  for (int lo = 0; lo < 2; ++lo) {
    const bool up = (t & 2) != 0;
    const uint32_t y = __shfl_xor_sync(0xFFFFFFFFu, up ? a[lo] : a[lo + 2], 2);
    if (up) {
      a[lo] = y;
    } else {
      a[lo + 2] = y;
    }
  }
#pragma unroll
  for (int lo = 0; lo < 4; lo += 2) {
    const bool odd = (t & 1) != 0;
    const uint32_t y = __shfl_xor_sync(0xFFFFFFFFu, odd ? a[lo] : a[lo + 1], 1);
    if (odd) {
      a[lo] = y;
    } else {
      a[lo + 1] = y;
    }
  }
}

// kW consecutive 32-bit words (bf16 pairs) from / to global memory: one 4- or 16-byte access.
// Gate loads go through the read-only path (gate never aliases out); residual loads cannot.
template <int kW>
__device__ __forceinline__ void LoadGateWords(const uint16_t* src, uint32_t (&w)[kW]) {
  if constexpr (kW == 4) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(src));
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  } else {
    w[0] = __ldg(reinterpret_cast<const uint32_t*>(src));
  }
}
template <int kW>
__device__ __forceinline__ void LoadWords(const uint16_t* src, uint32_t* w) {
  if constexpr (kW == 4) {
    const uint4 v = *reinterpret_cast<const uint4*>(src);
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
  } else {
    w[0] = *reinterpret_cast<const uint32_t*>(src);
  }
}
template <int kW>
__device__ __forceinline__ void StoreWords(uint16_t* dst, const uint32_t (&w)[kW]) {
  if constexpr (kW == 4) {
    *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
  } else {
    *reinterpret_cast<uint32_t*>(dst) = w[0];
  }
}

// One warp tile's epilogue with kW words per access. In the MMA layout lane (lrow, lcol) holds,
// for each of its rows, one bf16 pair per n fragment j, at column col_base + 8j + 2lcol: kW = 1
// moves those pairs one by one. kW = 4: a quad holds 4 n fragments x 4 lanes of pairs of a row,
// each lane's 4 bytes 16 bytes apart; a quad transpose gives each lane 16 contiguous bytes
// (columns col_base + 32q + 8lcol .. + 7 of fragment group q). t is kept in the access layout:
// word k of access q at [kW q + k].
template <class Cfg, class Arch, int kW>
__device__ __forceinline__ void StoreTile(const WarpAcc<Cfg>& acc, int64_t row_base, int col_base,
                                          const OutProjParams& p, float alpha) {
  static_assert(kW == 1 || kW == 4, "4- or 16-byte accesses");
  static_assert(Cfg::kNFrags % kW == 0, "whole accesses per row");
  constexpr int kAccesses = Cfg::kNFrags / kW;  // per row and thread
  constexpr int kEpiBatch = 2;  // m fragments (4 accumulator rows) per batch of residual loads
  static_assert(Cfg::kMFrags % kEpiBatch == 0, "whole batches of m fragments");
  const int lane = threadIdx.x & 31, lrow = lane >> 2, lcol = lane & 3;
  const int col_t = col_base + (kW == 4 ? 8 * lcol : 2 * lcol);  // + kW 8 q: access q
  int32_t gate_row[Cfg::kMFrags][2];                              // [m fragment][h]
  LoadGateRows<Cfg>(row_base, lrow, p, gate_row);
  // t for every pair: the gate read in the access layout, moved to the accumulators' (kW = 4),
  // multiplied, and moved back. gate never aliases out, so its loads need not wait for stores.
  uint32_t tr[Cfg::kMFrags][2][Cfg::kNFrags];
#pragma unroll
  for (int i = 0; i < Cfg::kMFrags; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int32_t gr = gate_row[i][h];  // uniform over the quad: one row
#pragma unroll
      for (int q = 0; q < kAccesses; ++q) {
        const uint16_t* gate = p.gate + static_cast<int64_t>(gr) * p.n + col_t + 8 * kW * q;
        uint32_t w[kW] = {};
        if constexpr (kW == 4) {
          // Every lane takes part in the transposes; an ungated row's t is never used.
          if (gr >= 0) LoadGateWords<4>(gate, w);
          QuadTranspose(w);  // w[jj]: the pair of n fragment 4q + jj
#pragma unroll
          for (int jj = 0; jj < 4; ++jj) {
            const int j = 4 * q + jj;
            w[jj] = GateProductPair<Arch>(acc.v[i][j][2 * h], acc.v[i][j][2 * h + 1], alpha, w[jj]);
          }
          QuadTranspose(w);
        } else if (gr >= 0) {
          LoadGateWords<1>(gate, w);
          w[0] = GateProductPair<Arch>(acc.v[i][q][2 * h], acc.v[i][q][2 * h + 1], alpha, w[0]);
        }
#pragma unroll
        for (int k = 0; k < kW; ++k) tr[i][h][kW * q + k] = w[k];
      }
    }
#pragma unroll
  for (int i0 = 0; i0 < Cfg::kMFrags; i0 += kEpiBatch) {
    // Every residual load of the batch before any of its stores (out may be residual).
    uint32_t res[kEpiBatch][2][Cfg::kNFrags];
#pragma unroll
    for (int b = 0; b < kEpiBatch; ++b)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t row = row_base + 16 * (i0 + b) + lrow + 8 * h;
#pragma unroll
        for (int q = 0; q < kAccesses; ++q) {
          uint32_t* r = &res[b][h][kW * q];
          if (row < p.m) {
            LoadWords<kW>(p.residual + row * p.n + col_t + 8 * kW * q, r);
          } else {
#pragma unroll
            for (int k = 0; k < kW; ++k) r[k] = 0u;
          }
        }
      }
#pragma unroll
    for (int b = 0; b < kEpiBatch; ++b)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int i = i0 + b;
        const int64_t row = row_base + 16 * i + lrow + 8 * h;
        if (row >= p.m) continue;
        const bool gated = gate_row[i][h] >= 0;
#pragma unroll
        for (int q = 0; q < kAccesses; ++q) {
          uint32_t o[kW];
#pragma unroll
          for (int k = 0; k < kW; ++k) {
            const uint32_t r = res[b][h][kW * q + k];
            o[k] = gated ? AddResidualPair(r, tr[i][h][kW * q + k]) : r;
          }
          StoreWords<kW>(p.out + row * p.n + col_t + 8 * kW * q, o);
        }
      }
  }
}

// The epilogue of one warp tile (acc: the contract's f32 sums, before alpha), with the widest
// accesses the operands' alignment allows.
template <class Cfg, class Arch>
__device__ __forceinline__ void EpilogueTile(const WarpAcc<Cfg>& acc, int64_t row_base,
                                             int col_base, const OutProjParams& p, float alpha) {
  if (p.vec16_epilogue) {
    StoreTile<Cfg, Arch, 4>(acc, row_base, col_base, p, alpha);
  } else {
    StoreTile<Cfg, Arch, 1>(acc, row_base, col_base, p, alpha);
  }
}

}  // namespace h3::kernels

#endif  // H3_KERNELS_EPILOGUE_CUH_
