#ifndef H3_KERNELS_SM90_STAGED_MAINLOOP_CUH_
#define H3_KERNELS_SM90_STAGED_MAINLOOP_CUH_

// The sm_90 "fast" validation consumer loop (Sm90Emulation::kFast): Hopper only, never compiled
// into the sm_120a kernel. mainloop.cuh dispatches here when Cfg::kEmuBufBytes > 0.

#include <cstdint>

#include "kernels/fragment_math.h"
#include "kernels/mma_block_scaled.cuh"
#include "kernels/ptx.cuh"
#include "kernels/warp_acc.cuh"

namespace h3::kernels {

// ---- sm_90 validation, staged (Cfg::kEmuBufBytes > 0): the 8 consumer warps dequantize each
// MMA k-step (64 k) of the CTA's A and B tiles ONCE into bf16 staging tiles in shared memory,
// instead of every warp dequantizing its own fragments (4x redundant for A, 2x for B), then each
// consumer warpgroup runs Hopper wgmma (bf16 x bf16 -> f32) on them straight from shared memory.
// Every staged value is code * scale * 2^-8 exactly (as in the register emulation), so every
// product is exact and the accumulator holds acc * 2^-16; only the (unspecified) order of the
// f32 additions differs (contract section 6: bit-exact on exact data, the f32 bound otherwise).
// Staging tile: [128 rows][64 k] bf16 = [128][128 B], 16-byte chunk c of row r (8 values of
// k 8c..8c+7) at Swizzle128Offset(r, c). Two k-step buffers {A, B}, ping-pong by k-step.
namespace emu_staged {

__device__ __forceinline__ void ConsumerBarSync() {  // named barrier 1: the 256 consumer threads
  asm volatile("bar.sync 1, 256;" ::: "memory");
}
__device__ __forceinline__ void StShared128(uint32_t addr, const uint32_t (&v)[4]) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(v[0]), "r"(v[1]),
               "r"(v[2]), "r"(v[3])
               : "memory");
}

// This thread's share of one k-step: row `row` (0..127) of A and of B, k half `half` (32 k =
// 16 bytes = 4 words of 8 e2m1, two 16-blocks).
struct KStepCodes {
  uint4 a, b;
  uint32_t fa[2], fb[2];  // duplicated bf16x2 scales * 2^kEmuScaleExp2 of blocks 2*half + {0,1}
};

template <class Cfg>
__device__ __forceinline__ void LoadKStep(const uint8_t* a_tile, const uint8_t* b_tile,
                                          const uint8_t* sfa_tile, const uint8_t* sfb_tile, int row,
                                          int half, int kk, KStepCodes& c) {
  c.a = *reinterpret_cast<const uint4*>(a_tile + Swizzle128Offset(row, 2 * kk + half));
  c.b = *reinterpret_cast<const uint4*>(b_tile + Swizzle128Offset(row, 2 * kk + half));
  const uint32_t sa = *reinterpret_cast<const uint32_t*>(sfa_tile + SfaOffset(row, kk));
  const uint32_t sb = *reinterpret_cast<const uint32_t*>(sfb_tile + SfbOffset(row, kk));
  const uint32_t sel = static_cast<uint32_t>((2 * half) | ((2 * half + 1) << 4));
  ScalePairToBf16x2(sa, sel, c.fa[0], c.fa[1]);
  ScalePairToBf16x2(sb, sel, c.fb[0], c.fb[1]);
}

// Word w (k 32*half + 8w .. +7) of the thread's A and B codes -> one 16-byte chunk each.
// The chunk holds the word's 8 values in the order of nibbles 0,4,1,5,2,6,3,7 (bf16 pair j =
// nibbles j and j+4, E2m1NibblePairBf16Enc): A and B are staged in the same order and each MMA
// k16 reads whole chunks, so every MMA sums exactly the same 16 products as in natural order.
__device__ __forceinline__ void DequantWordToSmem(uint32_t word, uint32_t f, uint32_t dst) {
  const uint32_t hi = word >> 8;
  uint32_t v[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) v[j] = MulBf16x2(E2m1NibblePairBf16Enc(word, hi, j), f);
  StShared128(dst, v);
}
__device__ __forceinline__ uint32_t Word(const uint4& q, int w) {
  return w == 0 ? q.x : w == 1 ? q.y : w == 2 ? q.z : q.w;
}
template <class Cfg>
__device__ __forceinline__ void StoreKStepWord(const KStepCodes& c, int row, int half, int w,
                                               uint32_t buf_a, uint32_t buf_b) {
  const uint32_t off = Swizzle128Offset(row, 4 * half + w);
  DequantWordToSmem(Word(c.a, w), c.fa[w >> 1], buf_a + off);
  DequantWordToSmem(Word(c.b, w), c.fb[w >> 1], buf_b + off);
}

// ---- The MMAs: Hopper wgmma from the staging tiles. Each consumer warpgroup wg (= warp_m) runs
// wgmma.m64n128k16 (bf16 x bf16 -> f32, both operands K-major in shared memory) on rows
// 64 wg .. 64 wg + 63 of the A staging tile and all 128 rows of the B staging tile. The staging
// tiles are exactly the canonical K-major SWIZZLE_128B layout (8-row x 128-byte atoms, 1024-byte
// aligned), so a descriptor is start >> 4, SBO = 1024 B, layout type 1 (128B swizzle); k16 slice
// ks starts 32 ks bytes into the row (the hardware applies the XOR on the address).
// Accumulator: wgmma's layout, d[4J + 2h + c] = (row 16 w + g + 8h, column 8J + 2t + c) of the
// warpgroup's 64 x 128 block (w = warp in warpgroup), stored in WarpAcc::v[J/4][J%4][2h+c];
// FinishTile moves it to the mma.sync layout StoreTile expects, once per tile.
__device__ __forceinline__ uint64_t WgmmaDescSw128(uint32_t smem_addr) {
  return static_cast<uint64_t>((smem_addr & 0x3FFFFu) >> 4) |
         (static_cast<uint64_t>(1024u >> 4) << 32) | (1ull << 62);
}
__device__ __forceinline__ void WgmmaFence() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void WgmmaCommit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void WgmmaWaitAll() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#endif
}
// Generic-proxy st.shared -> visible to wgmma's (async proxy) shared-memory reads.
__device__ __forceinline__ void FenceProxyAsyncShared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
// The compiler must not move accumulator accesses across the async MMA's issue / wait.
__device__ __forceinline__ void FenceAcc(float (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
__device__ __forceinline__ void WgmmaM64N128K16(float (&d)[64], uint64_t da, uint64_t db) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "l"(da), "l"(db), "r"(1));
#else
  __trap();  // sm_90a only
#endif
}

template <class Cfg>
__device__ __forceinline__ float (&AccFlat(WarpAcc<Cfg>& acc))[64] {
  static_assert(Cfg::kMFrags * Cfg::kNFrags * 4 == 64, "64 accumulators per thread");
  return *reinterpret_cast<float(*)[64]>(&acc.v[0][0][0]);
}

// k-step kk's MMAs of this warpgroup from staging buffer `buf` (A at buf, B at buf + kTile).
template <class Cfg>
__device__ __forceinline__ void IssueKStep(uint32_t buf, int wg, float (&d)[64]) {
  const uint32_t a0 = buf + wg * 64 * 128, b0 = buf + Cfg::kEmuTileBytes;
  WgmmaFence();
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    WgmmaM64N128K16(d, WgmmaDescSw128(a0 + 32 * ks), WgmmaDescSw128(b0 + 32 * ks));
  }
  WgmmaCommit();
}

// The whole stage. Order per stage: D0 | bar | W0 D1 wait | bar | W1 D2 wait | bar | W2 D3 wait |
// bar | W3 wait, Dk = dequantize k-step k into buffer k&1 (then fence.proxy.async), Wk = the
// warpgroup's async wgmmas of k-step k from buffer k&1. A buffer is rewritten (D(k+2), or D0/D1
// of the next stage) only after a barrier that every thread reaches after waiting for its W(k).
template <class Cfg>
__device__ __forceinline__ void ConsumeStage(const uint8_t* a_tile, const uint8_t* b_tile,
                                             const uint8_t* sfa_tile, const uint8_t* sfb_tile,
                                             int m_base, int n_base, WarpAcc<Cfg>& acc) {
  extern __shared__ uint8_t smem_raw[];  // the kernel's dynamic shared memory (same realignment)
  const uint32_t raw = ptx::SmemAddr(smem_raw);
  const uint32_t base =
      raw + ((Cfg::kSmemAlign - (raw & (Cfg::kSmemAlign - 1))) & (Cfg::kSmemAlign - 1));
  const uint32_t emu = base + Cfg::kEmuOffset;
  constexpr uint32_t kTile = Cfg::kEmuTileBytes;
  const int ct = static_cast<int>(threadIdx.x) - Cfg::kProducerWarps * 32;  // 0..255
  const int row = ct & 127, half = ct >> 7;
  const int wg = m_base / 64;  // consumer warpgroup = warp_m
  (void)n_base;
  float(&d)[64] = AccFlat<Cfg>(acc);
  KStepCodes c;
  LoadKStep<Cfg>(a_tile, b_tile, sfa_tile, sfb_tile, row, half, 0, c);
#pragma unroll
  for (int w = 0; w < 4; ++w) StoreKStepWord<Cfg>(c, row, half, w, emu, emu + kTile);
  FenceProxyAsyncShared();
  ConsumerBarSync();
#pragma unroll
  for (int kk = 0; kk < Cfg::kKSteps; ++kk) {
    const uint32_t cur = emu + (kk & 1) * 2 * kTile, nxt = emu + ((kk + 1) & 1) * 2 * kTile;
    FenceAcc(d);
    IssueKStep<Cfg>(cur, wg, d);
    FenceAcc(d);
    if (kk + 1 < Cfg::kKSteps) {
      LoadKStep<Cfg>(a_tile, b_tile, sfa_tile, sfb_tile, row, half, kk + 1, c);
#pragma unroll
      for (int w = 0; w < 4; ++w) StoreKStepWord<Cfg>(c, row, half, w, nxt, nxt + kTile);
      FenceProxyAsyncShared();
    }
    WgmmaWaitAll();
    FenceAcc(d);
    if (kk + 1 < Cfg::kKSteps) ConsumerBarSync();
  }
}

// Once per tile, before StoreTile: wgmma layout -> the mma.sync layout of the warp tile
// (warp (wg, w) holds rows 64 wg + 16 i + g + 8h, columns 32 w + 8 j + 2t + c in v[i][j][2h+c]),
// through the staging buffers as a [128][128] f32 tile.
template <class Cfg>
__device__ __forceinline__ void FinishTile(WarpAcc<Cfg>& acc) {
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = ptx::SmemAddr(smem_raw);
  const uint32_t base =
      raw + ((Cfg::kSmemAlign - (raw & (Cfg::kSmemAlign - 1))) & (Cfg::kSmemAlign - 1));
  float* tile = reinterpret_cast<float*>(smem_raw + (base - raw) + Cfg::kEmuOffset);
  static_assert(Cfg::kEmuBufBytes >= 128 * 128 * 4, "f32 tile fits the staging buffers");
  const int cw = (threadIdx.x >> 5) - Cfg::kProducerWarps;
  const int wg = cw / 4, w = cw % 4;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  ConsumerBarSync();  // every warp's last wgmma has completed (waited) and staging reads done
#pragma unroll
  for (int J = 0; J < 16; ++J)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = 64 * wg + 16 * w + g + 8 * h, col = 8 * J + 2 * t;
      *reinterpret_cast<float2*>(tile + r * 128 + col) =
          make_float2(acc.v[J / 4][J % 4][2 * h], acc.v[J / 4][J % 4][2 * h + 1]);
    }
  ConsumerBarSync();
#pragma unroll
  for (int i = 0; i < Cfg::kMFrags; ++i)
#pragma unroll
    for (int j = 0; j < Cfg::kNFrags; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = 64 * wg + 16 * i + g + 8 * h, col = 32 * w + 8 * j + 2 * t;
        const float2 v = *reinterpret_cast<const float2*>(tile + r * 128 + col);
        acc.v[i][j][2 * h] = v.x;
        acc.v[i][j][2 * h + 1] = v.y;
      }
  ConsumerBarSync();  // the tile is read before the next tile's staging writes
}

}  // namespace emu_staged

}  // namespace h3::kernels

#endif  // H3_KERNELS_SM90_STAGED_MAINLOOP_CUH_
