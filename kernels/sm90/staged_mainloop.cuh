#ifndef H3_KERNELS_SM90_STAGED_MAINLOOP_CUH_
#define H3_KERNELS_SM90_STAGED_MAINLOOP_CUH_

// Hopper validation only: the consumer loop of the fast sm_90 kernel (fast_kernel.cuh,
// Sm90Emulation::kFast): ConsumeTile and FinishTile.

#include <cstdint>

#include "kernels/device/bounded_wait.cuh"
#include "kernels/device/fragment_math.h"
#include "kernels/device/ptx.cuh"
#include "kernels/sm90/config.cuh"
#include "kernels/sm90/mma_emulated.cuh"
#include "kernels/device/warp_acc.cuh"

namespace h3::kernels::sm90 {

// ---- Per MMA k-step (64 k) of the CTA tile:
//  - A (activations) never touches shared memory as bf16: each consumer warp takes its 16 rows'
//    e2m1 fragments by ldmatrix (the SM120 A-fragment layout), dequantizes them in registers and
//    feeds them to wgmma as its register A operand (m64n128k16, the warpgroup's 64 rows).
//  - B (weights) is dequantized ONCE per CTA into a bf16 staging tile in shared memory (each of the
//    256 consumer threads: one row, one 32-k half) that both warpgroups' wgmmas read.
// Every dequantized value is code * scale * 2^-8 exactly (as in the register emulation), so every
// product is exact and the accumulator holds acc * 2^-16; only the (unspecified) order of the
// f32 additions differs (contract section 6: bit-exact on exact data, the f32 bound otherwise).
//
// The k order inside a k-step is permuted, identically for A and B (so every wgmma k16 sums 16
// true products): bf16 pair j of an e2m1 word = its nibbles j and j + 4 (E2m1NibblePairBf16Enc).
// wgmma k16 slice j, slot (2t + e) of the low 8 k' <- physical k = 8t + j + 4e (word t of the
// k-step), slot 8 + 2t + e <- k = 32 + 8t + j + 4e (word t + 4). The A register fragment
// (CUTLASS ALayout_64x16 = the mma.m16n8k16 A layout per warp: reg 0 = row g, k' 2t..2t+1;
// reg 1 = row g + 8; reg 2 = row g, k' 2t+8..; reg 3 = row g + 8, k' 2t+8..) then takes pair j of
// the ldmatrix registers a0..a3 (row g / g + 8, word t / t + 4) directly. B staging tile:
// [128 n][64 k'] bf16 = [128][128 B], 16-byte chunk q = 2j + h at Swizzle128Offset(n, q) holds
// pair j of words 4h .. 4h + 3 of row n.
__device__ __forceinline__ void ConsumerBarSync() {  // named barrier 1: the 256 consumer threads
  asm volatile("bar.sync 1, 256;" ::: "memory");
}
__device__ __forceinline__ void StShared128(uint32_t addr, const uint32_t (&v)[4]) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(v[0]), "r"(v[1]),
               "r"(v[2]), "r"(v[3])
               : "memory");
}

// One pipeline stage's four tiles in shared memory.
struct StageTiles {
  const uint8_t *a, *b, *sfa, *sfb;
};
template <class Cfg>
__device__ __forceinline__ StageTiles Stage(const SharedStorage<Cfg>& st, int stage) {
  return {st.a[stage], st.b[stage], st.sfa[stage] /* one slot per stage here */, st.sfb[stage]};
}

// The raw codes and scale words of this thread's share of one k-step (loaded a k-step ahead).
struct KStepCodes {
  uint32_t a[4];   // ldmatrix A fragment: row g / g+8 (i & 1), word t / t+4 (i >> 1)
  uint32_t sa[2];  // activation scale words of rows g, g+8 (4 ue4m3: blocks 0..3)
  uint4 b;         // weight row `row`, words 4 half .. 4 half + 3
  uint32_t sb;     // weight scale word of row `row`
};

// Per-thread coordinates, fixed for the kernel.
struct Lanes {
  uint32_t a_ldsm;  // A ldmatrix source: row (in tile), minus the k-step chunk
  int a_chunk_hi;   // ldmatrix matrix q >= 2 reads the k-step's second 16 bytes
  int a_row_g;      // A rows of the thread: a_row_g, a_row_g + 8
  int b_row, b_half;
  uint32_t a_sel, b_sel;  // prmt selectors of the two scale bytes each thread applies
};
template <class Cfg>
__device__ __forceinline__ Lanes MakeLanes() {
  const int ct = static_cast<int>(threadIdx.x) - Cfg::kProducerWarps * 32;  // 0..255
  const int lane = ct & 31, cw = ct >> 5, g = lane >> 2, t = lane & 3;
  const int m0 = 16 * cw;  // warp cw = (wg, w) owns tile rows 64 wg + 16 w .. +15
  Lanes l;
  l.a_ldsm = LdmatrixARow(lane, m0);
  l.a_chunk_hi = lane >> 4;
  l.a_row_g = m0 + g;
  l.b_row = ct & 127;
  l.b_half = ct >> 7;
  // Word t of the k-step is in block t/2, word t+4 in block 2 + t/2.
  l.a_sel = static_cast<uint32_t>((t >> 1) | ((2 + (t >> 1)) << 4));
  // Words 4h, 4h+1 are in block 2h, words 4h+2, 4h+3 in block 2h+1.
  l.b_sel = static_cast<uint32_t>((2 * l.b_half) | ((2 * l.b_half + 1) << 4));
  return l;
}

template <class Cfg>
__device__ __forceinline__ void LoadKStep(const StageTiles& st, const Lanes& l, int kk,
                                          KStepCodes& c) {
  ptx::LdMatrixX4(c.a, ptx::SmemAddr(st.a) + Swizzle128Offset(l.a_ldsm, 2 * kk + l.a_chunk_hi));
  c.sa[0] = *reinterpret_cast<const uint32_t*>(st.sfa + SfaOffset(l.a_row_g, kk));
  c.sa[1] = *reinterpret_cast<const uint32_t*>(st.sfa + SfaOffset(l.a_row_g + 8, kk));
  c.b = *reinterpret_cast<const uint4*>(st.b + Swizzle128Offset(l.b_row, 2 * kk + l.b_half));
  c.sb = *reinterpret_cast<const uint32_t*>(st.sfb + SfbOffset(l.b_row, kk));
}

// B: the thread's 4 words -> 4 staging chunks (pair j of each word, scaled) in buffer `buf`.
__device__ __forceinline__ void StoreB(const KStepCodes& c, const Lanes& l, uint32_t buf) {
  uint32_t f[2];
  ScalePairToBf16x2(c.sb, l.b_sel, f[0], f[1]);
  const uint32_t w[4] = {c.b.x, c.b.y, c.b.z, c.b.w};
  const uint32_t hi[4] = {w[0] >> 8, w[1] >> 8, w[2] >> 8, w[3] >> 8};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    uint32_t v[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) v[q] = MulBf16x2(E2m1NibblePairBf16Enc(w[q], hi[q], j), f[q >> 1]);
    StShared128(buf + Swizzle128Offset(l.b_row, 2 * j + l.b_half), v);
  }
}

// A: the ldmatrix fragment -> the 4 k16 slices' wgmma register operands a16[j][0..3].
__device__ __forceinline__ void DequantA(const KStepCodes& c, const Lanes& l,
                                         uint32_t (&a16)[4][4]) {
  uint32_t f[2][2];  // [row g / g+8][word t / t+4]
  ScalePairToBf16x2(c.sa[0], l.a_sel, f[0][0], f[0][1]);
  ScalePairToBf16x2(c.sa[1], l.a_sel, f[1][0], f[1][1]);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t hi = c.a[i] >> 8;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      a16[j][i] = MulBf16x2(E2m1NibblePairBf16Enc(c.a[i], hi, j), f[i & 1][i >> 1]);
    }
  }
}

// ---- The MMAs: Hopper wgmma.m64n128k16 (bf16 x bf16 -> f32), A from registers (the warp's 16
// rows of the warpgroup's 64), B from the staging tile (K-major, all 128 rows). The staging tile
// is exactly the canonical K-major SWIZZLE_128B layout (8-row x 128-byte atoms, 1024-byte
// aligned), so its descriptor is start >> 4, SBO = 1024 B, layout type 1 (128B swizzle); k16
// slice j starts 32 j bytes into the row (the hardware applies the XOR on the address).
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
__device__ __forceinline__ void WgmmaWaitAllButNewest() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900
  asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
#endif
}
// wgmma.mma_async ... d, a (4 registers), b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-b
// (PTX ISA: the register-A form has no trans-a).
__device__ __forceinline__ void WgmmaM64N128K16Rs(float (&d)[64], const uint32_t (&a)[4],
                                                  uint64_t db) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, p, 1, 1, 0;\n"
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
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
#else
  __trap();  // sm_90a only
#endif
}

template <class Cfg>
__device__ __forceinline__ float (&AccFlat(WarpAcc<Cfg>& acc))[64] {
  static_assert(Cfg::kMFrags * Cfg::kNFrags * 4 == 64, "64 accumulators per thread");
  return *reinterpret_cast<float(*)[64]>(&acc.v[0][0][0]);
}

// One k-step's 4 wgmmas of this warpgroup: A slices a16[j], B from staging buffer `b_buf`.
__device__ __forceinline__ void IssueKStep(const uint32_t (&a16)[4][4], uint32_t b_buf,
                                           float (&d)[64]) {
  WgmmaFence();
#pragma unroll
  for (int j = 0; j < 4; ++j) WgmmaM64N128K16Rs(d, a16[j], WgmmaDescSw128(b_buf + 32 * j));
  WgmmaCommit();
}

// Shared-memory address of the staging buffers (Sm90Storage::emu after the kernel's realignment,
// rings.cuh AlignedSmem), recomputed from the symbol where needed: a pointer kept live across the
// main loop costs registers.
__device__ __forceinline__ uint32_t StagingBase() {
  extern __shared__ uint8_t smem_raw[];
  constexpr uint32_t kAlign = alignof(Sm90Storage);
  const uint32_t raw = ptx::SmemAddr(smem_raw);
  const uint32_t base = raw + ((kAlign - (raw & (kAlign - 1))) & (kAlign - 1));
  return base + static_cast<uint32_t>(offsetof(Sm90Storage, emu));
}

// A whole tile: num_stages pipeline stages (4 k-steps each) from the TMA ring, consumed as one
// stream of k-steps k = 0 .. 4 num_stages - 1. B staging buffer kk = k % 4 holds k-step k's B;
// A register set k % 2 its A. Per k-step k:
//   issue W(k) (async) | load the codes of k-step k+2 | dequantize B(k+1) into buffer (k+1) % 4
//   | wait until only W(k) is pending | dequantize A(k+1) into register set (k+1) % 2 |
//   fence.proxy.async | barrier
// B buffer (k+1) % 4 was last read by W(k-3) and A set (k+1) % 2 by W(k-1): both complete (the
// wait above, and every warpgroup's wait before the barrier ending k-step k-2). W(k) keeps the
// tensor pipe busy across the barrier, and the loads of k+2 overlap the dequantization of k+1.
// A TMA stage is released (every consumer thread arrives on its empty barrier) right after the
// loads of its last k-step. On return stage/phase point to the next unconsumed stage and every
// wgmma of the tile has completed.
template <class Cfg>
__device__ __forceinline__ void ConsumeTile(const OutProjParams& p, int mt, int nt,
                                            SharedStorage<Cfg>& smem, int& stage, uint32_t& phase,
                                            int num_stages, WarpAcc<Cfg>& acc) {
  static_assert(Cfg::kKSteps == 4 && Cfg::kEmuBufs == 4, "one B buffer per k-step of a stage");
  const uint32_t emu = StagingBase();
  uint64_t* full = smem.full;
  uint64_t* empty = smem.empty;
  const auto wait_full = [&] {
    MbarWaitBounded(&full[stage], phase, p,
                    {WaitKind::kFullStaged, stage, static_cast<int>(phase), mt, nt,
                     kConsumerBound});
  };
  const Lanes l = MakeLanes<Cfg>();
  float(&d)[64] = AccFlat<Cfg>(acc);
  auto advance = [&] {
    if (++stage == Cfg::kStages) {
      stage = 0;
      phase ^= 1u;
    }
  };

  uint32_t a16[2][4][4];  // two A register sets: [k % 2][k16 slice j][wgmma A register]
  wait_full();
  KStepCodes c;  // codes of the k-step dequantized next
  LoadKStep<Cfg>(Stage<Cfg>(smem, stage), l, 0, c);
  StoreB(c, l, emu);
  DequantA(c, l, a16[0]);
  LoadKStep<Cfg>(Stage<Cfg>(smem, stage), l, 1, c);
  FenceProxyAsyncShared();
  ConsumerBarSync();
  for (int s = 0; s < num_stages; ++s) {
    const bool last_stage = s + 1 == num_stages;
#pragma unroll
    for (int kk = 0; kk < Cfg::kKSteps; ++kk) {
      FenceAcc(d);
      IssueKStep(a16[kk & 1], emu + kk * Cfg::kEmuTileBytes, d);
      FenceAcc(d);
      KStepCodes c2;  // codes of k-step k+2
      const bool load_ahead = !last_stage || kk < 2;
      if (load_ahead) {
        if (kk == 2) {  // k+2 starts the next stage
          advance();
          wait_full();
        }
        LoadKStep<Cfg>(Stage<Cfg>(smem, stage), l, (kk + 2) & 3, c2);
        if (kk == 1) ptx::MbarArrive(&empty[stage]);  // its last k-step is loaded
      }
      if (!last_stage || kk + 1 < Cfg::kKSteps) {
        StoreB(c, l, emu + ((kk + 1) & 3) * Cfg::kEmuTileBytes);
        WgmmaWaitAllButNewest();
        FenceAcc(d);
        DequantA(c, l, a16[(kk + 1) & 1]);
        if (load_ahead) c = c2;
        FenceProxyAsyncShared();
        ConsumerBarSync();
      }
    }
  }
  WgmmaWaitAll();  // unconditional, so ptxas sees every accumulator settled here
  FenceAcc(d);
  advance();
}

// Once per tile, before StoreTile: wgmma layout -> the mma.sync layout of the warp tile
// (warp (wg, w) holds rows 64 wg + 16 i + g + 8h, columns 32 w + 8 j + 2t + c in v[i][j][2h+c]),
// through the staging buffers as a [128][128] f32 tile.
template <class Cfg>
__device__ __forceinline__ void FinishTile(WarpAcc<Cfg>& acc) {
  extern __shared__ uint8_t smem_raw[];
  float* tile = reinterpret_cast<float*>(  // [128][128] f32 (fits: config.cuh)
      smem_raw + (StagingBase() - ptx::SmemAddr(smem_raw)));
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

}  // namespace h3::kernels::sm90

#endif  // H3_KERNELS_SM90_STAGED_MAINLOOP_CUH_
