#ifndef H3_KERNELS_EPILOGUE_CUH_
#define H3_KERNELS_EPILOGUE_CUH_

// The product's epilogue (docs/contract.md section 6) as an epilogue policy, GatedResidual
// (epilogue_policy.cuh: the hooks), from the accumulator registers to global memory:
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

#include "kernels/device/epilogue_policy.cuh"
#include "kernels/device/params.h"
#include "kernels/device/quantize.cuh"  // F32x2ToBf16x2Rn
#include "kernels/device/warp_acc.cuh"

namespace h3::kernels {

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

// The product's epilogue policy (epilogue_policy.cuh has the hooks' contract). Set-up: each row's
// gate row, one round trip for the tile. Apply: t for an access, the gate read in the access
// layout, moved to the accumulators' (kW = 4), multiplied and moved back; gate never aliases out,
// so its loads need not wait for stores. Read: the residual (the read-only path cannot be used:
// out may be residual). Combine: bf16(residual + t) for a gated row, the residual bit for bit
// for the others. Store: out.
struct GatedResidual {
  static constexpr bool kVec16 = true;

  template <class Cfg, class Arch, int kW>
  class Tile {
   public:
    __device__ __forceinline__ Tile(const EpilogueLane<kW>& at, const OutProjParams& p, float alpha)
        : alpha_(alpha) {
      LoadGateRows<Cfg>(at.row_base, at.lrow, p, gate_row_);
    }
    // A staged config's set-up from the gate rows loaded at the tile's start (Early below).
    template <class EarlyT>
    __device__ __forceinline__ Tile(const EpilogueLane<kW>&, const OutProjParams&, float alpha,
                                    const EarlyT& early)
        : alpha_(alpha) {
#pragma unroll
      for (int i = 0; i < Cfg::kMFrags; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) gate_row_[i][h] = early.gate_row[i][h];
    }

    __device__ __forceinline__ void Apply(const EpilogueLane<kW>& at, const OutProjParams& p,
                                          const WarpAcc<Cfg>& acc, int i, int h, int q,
                                          uint32_t (&t)[kW]) const {
      const int32_t gr = gate_row_[i][h];  // uniform over the quad: one row
      const uint16_t* gate = at.Access(p.gate + static_cast<int64_t>(gr) * p.n, q);
      if constexpr (kW == 4) {
        // Every lane takes part in the transposes; an ungated row's t is never used.
        if (gr >= 0) LoadGateWords<4>(gate, t);
        QuadTranspose(t);  // t[jj]: the pair of n fragment 4q + jj
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
          const int j = 4 * q + jj;
          t[jj] = GateProductPair<Arch>(acc.v[i][j][2 * h], acc.v[i][j][2 * h + 1], alpha_, t[jj]);
        }
        QuadTranspose(t);
      } else if (gr >= 0) {
        LoadGateWords<1>(gate, t);
        t[0] = GateProductPair<Arch>(acc.v[i][q][2 * h], acc.v[i][q][2 * h + 1], alpha_, t[0]);
      }
    }

    __device__ __forceinline__ void Read(const EpilogueLane<kW>& at, const OutProjParams& p,
                                         int64_t row, int q, uint32_t* r) const {
      LoadWords<kW>(at.Access(p.residual + row * p.n, q), r);
    }

    __device__ __forceinline__ uint32_t Combine(int i, int h, uint32_t r, uint32_t t) const {
      return gate_row_[i][h] >= 0 ? AddResidualPair(r, t) : r;
    }

    __device__ __forceinline__ void Store(const EpilogueLane<kW>& at, const OutProjParams& p,
                                          int64_t row, int q, const uint32_t (&o)[kW]) const {
      StoreWords<kW>(at.Access(p.out + row * p.n, q), o);
    }

   protected:  // a policy that extends this one (epilogue_policy.cuh) reads them
    float alpha_;
    int32_t gate_row_[Cfg::kMFrags][2];  // [m fragment][h]: gate row, -1 ungated or beyond M
  };

  // A staged config (config.cuh StagedSchedule, staged_epilogue.cuh): the consumers run set-up
  // and Apply and leave t in shared memory; a quantizer warp finishes 16 bytes (8 columns from
  // col) of a row < p.m with the hooks below: the same gate test as LoadGateRows, the same
  // residual read and add as Read and Combine, the same store. kW: the access width as above.
  static constexpr bool kStageable = true;
  // The type whose staged hooks these are: a policy derived from this one that changes Combine or
  // Store is not stageable until it declares its own (staged_epilogue.cuh IsStageable).
  using StagedPolicy = GatedResidual;

  // What a staged config's consumer loads at the start of its warp tile, before the main loop
  // (staged_epilogue.cuh StagedSink): each row's gate row, so that the epilogue after the main
  // loop waits for the gate words alone (one L2 round trip, not two). The same loads and test
  // as the in-register set-up.
  template <class Cfg>
  struct Early {
    int32_t gate_row[Cfg::kMFrags][2];
    __device__ __forceinline__ Early(int64_t row_base, int lrow, const OutProjParams& p) {
      LoadGateRows<Cfg>(row_base, lrow, p, gate_row);
    }
  };

  __device__ __forceinline__ static bool Gated(const OutProjParams& p, int64_t row) {
    const int32_t gi = __ldg(p.gate_index + row);
    return gi >= 0 && gi < p.g;
  }
  template <int kW>
  __device__ __forceinline__ static void ReadStaged(const OutProjParams& p, int64_t row, int col,
                                                    uint32_t (&r)[4]) {
#pragma unroll
    for (int k = 0; k < 4; k += kW) LoadWords<kW>(p.residual + row * p.n + col + 2 * k, &r[k]);
  }
  __device__ __forceinline__ static uint32_t CombineStaged(bool gated, uint32_t r, uint32_t t) {
    return gated ? AddResidualPair(r, t) : r;
  }
  template <int kW>
  __device__ __forceinline__ static void StoreStaged(const OutProjParams& p, int64_t row, int col,
                                                     const uint32_t (&o)[4]) {
#pragma unroll
    for (int k = 0; k < 4; k += kW) {
      uint32_t w[kW];
#pragma unroll
      for (int x = 0; x < kW; ++x) w[x] = o[k + x];
      StoreWords<kW>(p.out + row * p.n + col + 2 * k, w);
    }
  }
};

}  // namespace h3::kernels

#endif  // H3_KERNELS_EPILOGUE_CUH_
