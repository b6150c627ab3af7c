#ifndef H3_KERNELS_EPILOGUE_CUH_
#define H3_KERNELS_EPILOGUE_CUH_

// The fused epilogue (docs/contract.md section 6), from the accumulator registers to global
// memory:
//   o = acc (x) alpha;  t = bf16(f32(gate[g, n]) (x) o);  out = bf16(f32(residual) (+) f32(t))
// for g = gate_index[m] in [0, G); otherwise out = residual bit for bit. Each element of
// residual is read and then out written by the same thread, so out == residual is safe.

#include <cstdint>

#include "kernels/mainloop.cuh"

namespace h3::kernels {

// f32 -> bf16, round to nearest-even; every NaN -> 0x7FFF (contract notation bf16()).
__device__ __forceinline__ uint32_t F32ToBf16Rne(float f) {
  const uint32_t u = __float_as_uint(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FFFu;
  return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

struct EpilogueArgs {
  int64_t m;
  int n, g;
  float alpha;      // 1 (/) (act_gs (x) w_gs)
  float acc_scale;  // 1 (native) or 2^16 (sm_90 emulation): exact power of two
  const uint16_t* gate;
  const int32_t* gate_index;
  const uint16_t* residual;  // may equal out: no __restrict__
  uint16_t* out;
};

template <class Cfg>
__device__ __forceinline__ void StoreTile(const WarpAcc<Cfg>& acc, int64_t row_base, int col_base,
                                          const EpilogueArgs& e) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int i = 0; i < Cfg::kMFrags; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // C rows g (regs 0,1) and g + 8 (regs 2,3)
      const int64_t row = row_base + 16 * i + g + 8 * h;
      if (row >= e.m) continue;
      const int32_t gi = e.gate_index[row];
      const bool gated = gi >= 0 && gi < e.g;
      const int64_t row_off = row * e.n;
#pragma unroll
      for (int j = 0; j < Cfg::kNFrags; ++j) {
        const int col = col_base + 8 * j + 2 * t;
        const uint32_t* res_p = reinterpret_cast<const uint32_t*>(e.residual + row_off + col);
        const uint32_t res = *res_p;  // bf16 pair (col, col + 1)
        uint32_t result = res;
        if (gated) {
          const uint32_t gate =
              *reinterpret_cast<const uint32_t*>(e.gate + static_cast<int64_t>(gi) * e.n + col);
          uint32_t packed = 0;
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            const float a = __fmul_rn(acc.v[i][j][2 * h + c], e.acc_scale);  // exact
            const float o = __fmul_rn(a, e.alpha);
            const float gf = __uint_as_float(((gate >> (16 * c)) & 0xFFFFu) << 16);
            const float rf = __uint_as_float(((res >> (16 * c)) & 0xFFFFu) << 16);
            const uint32_t tb = F32ToBf16Rne(__fmul_rn(gf, o));
            const uint32_t ob = F32ToBf16Rne(__fadd_rn(rf, __uint_as_float(tb << 16)));
            packed |= ob << (16 * c);
          }
          result = packed;
        }
        *reinterpret_cast<uint32_t*>(e.out + row_off + col) = result;
      }
    }
  }
}

}  // namespace h3::kernels

#endif  // H3_KERNELS_EPILOGUE_CUH_
