// The latency probe of tma_latency.h. Every time is an SM clock64 difference read by the thread
// that issued the access; each kernel also reads %globaltimer at its first and last access (and
// %smid), so clocks convert to ns at the clock that kernel ran at.
//
// What each measurement is (PTX facts from kernels/device/ptx.cuh):
// - L2 chase: one thread, ld.global.cg (cached in L2 only) through a random cycle of nodes 512 B
//   apart in 8 MiB, warmed by one pass: the mean load-to-use round trip of an L2 hit.
// - TMA round trip: one thread, mbarrier.arrive.expect_tx then the copy, then try_wait (as the
//   kernel's consumers wait) until the phase completes; the source rotates over L2-resident data
//   warmed by a read. 1-D cp.async.bulk of 512 B .. 64 KiB, 2-D cp.async.bulk.tensor boxes of
//   64 B x rows (the GEMM's code boxes, 64 B swizzle), and the GEMM's stage (A 128 rows + B 256
//   rows on one barrier), that one also with a test_wait spin (no suspend) for comparison.
// - Loaded: one CTA per SM (each takes more than half an SM's shared memory; %smid checks it),
//   one thread keeping stage loads in flight from its CTA's own rows (no consumer: the shared
//   memory is overwritten, never read), 2048 stages each: closed rings of 1 .. 8 stages, then a
//   stage issued every period for shares of the closed rings' best rate.

#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "harness/bench/tma_latency.h"
#include "kernels/device/ptx.cuh"
#include "kernels/launch/launch.cuh"  // GetEncodeTiled, EncodeU8Map

namespace h3::bench {
namespace {

namespace ptx = h3::kernels::ptx;

// Operands as the GEMM's maps see them (u8 codes, 64-byte rows per k-step): A 4096 rows and
// B 8192 rows of 1 KiB (16 k-steps), 12 MiB in all: L2-resident on the H200 (50 MB) and SM12x.
constexpr int kRowBytes = 1024;
constexpr int kARows = 4096, kBRows = 8192;
constexpr int kBoxBytes = 64;
constexpr int kStageARows = 128, kStageBRows = 256;
constexpr uint32_t kStageBytes = (kStageARows + kStageBRows) * kBoxBytes;  // 24 KiB
constexpr int kSlotAlign = 1024;
constexpr int kReps = 64, kWarm = 8;
constexpr int kLoadedStages = 2048;
constexpr int kLoadedRowBytes = 256;  // the loaded rows' operands: 4 k-steps of their own rows

constexpr int kMaxStages = 8;

__device__ __forceinline__ uint64_t Clock() { return clock64(); }

// The dynamic shared memory's first kSlotAlign-aligned byte (the launch adds kSlotAlign bytes):
// the 64-byte swizzle wants its boxes aligned.
__device__ __forceinline__ unsigned char* Aligned(unsigned char* p) {
  const uint32_t a = ptx::SmemAddr(p);
  return p + ((kSlotAlign - a % kSlotAlign) % kSlotAlign);
}

__device__ __forceinline__ uint64_t LoadCg(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

// out: [0] clocks, [1] ns, [2] the chase's end (kept so the loads are not dead), [3] the SM's id.
__global__ void ChaseKernel(const uint64_t* next, int64_t steps, uint64_t* out) {
  uint64_t i = 0;
  for (int64_t s = 0; s < steps; ++s) i = LoadCg(next + i);  // warm: one pass
  const uint64_t c0 = Clock(), t0 = ptx::GlobalTimerNs();
  for (int64_t s = 0; s < steps; ++s) i = LoadCg(next + i);
  const uint64_t c1 = Clock(), t1 = ptx::GlobalTimerNs();
  uint32_t smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  out[0] = c1 - c0, out[1] = t1 - t0, out[2] = i, out[3] = smid;
}

// Reads every 16-byte word once so the operands sit in L2.
__global__ void WarmKernel(const uint4* p, int64_t words, uint32_t* sink) {
  uint32_t x = 0;
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += gridDim.x * blockDim.x)
    x ^= p[i].x;
  if (x == 0x9E3779B9u) *sink = x;
}

enum Mode : int { kBulk1D = 0, kBox2D = 1, kStage = 2 };

__device__ __forceinline__ void WaitPhase(uint64_t* bar, uint32_t parity, bool blocking) {
  if (blocking) {
    while (!ptx::MbarTryWait(bar, parity)) {
    }
  } else {
    while (!ptx::MbarTest(bar, parity)) {
    }
  }
}

// One thread: kWarm + kReps round trips of one kind; clk[r] for the kReps timed ones; span[0..1]
// clocks and ns over all of them, span[2] the SM's id.
__global__ void RoundTripKernel(const __grid_constant__ CUtensorMap a_map,
                                const __grid_constant__ CUtensorMap b_map, const uint8_t* src,
                                int mode, uint32_t bytes, int rows, bool blocking, uint32_t* clk,
                                uint64_t* span) {
  extern __shared__ unsigned char dyn[];
  __shared__ uint64_t bar;
  if (threadIdx.x != 0) return;
  unsigned char* smem = Aligned(dyn);
  ptx::MbarInit(&bar, 1);
  ptx::FenceBarrierInit();
  const uint64_t c0 = Clock(), t0 = ptx::GlobalTimerNs();
  for (int r = 0; r < kWarm + kReps; ++r) {
    const int k = r % (kRowBytes / kBoxBytes);
    const uint64_t c = Clock();
    ptx::MbarArriveExpectTx(&bar, bytes);
    if (mode == kBulk1D) {
      const int64_t region = int64_t{kARows} * kRowBytes;  // A's bytes, warmed
      ptx::BulkLoad(smem, src + (int64_t{r} * bytes) % (region - bytes + 16) / 16 * 16, bytes,
                    &bar);
    } else if (mode == kBox2D) {
      ptx::TmaLoad2D(smem, &a_map, &bar, k * kBoxBytes, (r * rows) % kARows);
    } else {
      ptx::TmaLoad2D(smem, &a_map, &bar, k * kBoxBytes, (r * kStageARows) % kARows);
      ptx::TmaLoad2D(smem + kStageARows * kBoxBytes, &b_map, &bar, k * kBoxBytes,
                     (r * kStageBRows) % kBRows);
    }
    WaitPhase(&bar, r & 1, blocking);
    const uint64_t d = Clock() - c;
    if (r >= kWarm) clk[r - kWarm] = static_cast<uint32_t>(d);
  }
  span[0] = Clock() - c0, span[1] = ptx::GlobalTimerNs() - t0;
  uint32_t smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  span[2] = smid;
}

// One thread per CTA keeps up to `slots` (<= kMaxStages) stage loads in flight, issuing stage i
// no earlier than i x period_ns after its start (0: as soon as a slot is free, a closed ring).
// Between issues it polls the oldest stage (test_wait), so each latency is read when the stage
// lands, not when its slot is next needed. CTA b reads only its own rows (A rows [128 b, +128),
// B rows [256 b, +256) of 256-byte rows: 4 k-steps), so no two SMs ask for the same line.
// per_cta[kPerCta b ..]: latency clocks summed, stages counted, start and end (%globaltimer ns),
// the span's clocks and ns, the SM's id.
constexpr int kPerCta = 7;
__global__ void LoadedKernel(const __grid_constant__ CUtensorMap a_map,
                             const __grid_constant__ CUtensorMap b_map, int slots,
                             uint32_t period_ns, uint64_t* per_cta) {
  extern __shared__ unsigned char dyn[];
  __shared__ uint64_t bars[kMaxStages];
  __shared__ uint64_t issued[kMaxStages];
  if (threadIdx.x != 0) return;
  unsigned char* smem = Aligned(dyn);
  for (int s = 0; s < slots; ++s) ptx::MbarInit(&bars[s], 1);
  ptx::FenceBarrierInit();
  const int b = blockIdx.x;
  uint64_t sum = 0;
  int head = 0, tail = 0;  // the oldest stage in flight, the next to issue
  const uint64_t c0 = Clock(), t0 = ptx::GlobalTimerNs();
  while (head < kLoadedStages) {
    if (head < tail && ptx::MbarTest(&bars[head % slots], (head / slots) & 1)) {
      sum += Clock() - issued[head % slots];
      ++head;
      continue;
    }
    if (tail < kLoadedStages && tail - head < slots &&
        (period_ns == 0 || ptx::GlobalTimerNs() - t0 >= uint64_t{period_ns} * tail)) {
      const int s = tail % slots, k = tail % (kLoadedRowBytes / kBoxBytes);
      unsigned char* slot = smem + s * kStageBytes;
      issued[s] = Clock();
      ptx::MbarArriveExpectTx(&bars[s], kStageBytes);
      ptx::TmaLoad2D(slot, &a_map, &bars[s], k * kBoxBytes, b * kStageARows);
      ptx::TmaLoad2D(slot + kStageARows * kBoxBytes, &b_map, &bars[s], k * kBoxBytes,
                     b * kStageBRows);
      ++tail;
    }
  }
  const uint64_t c1 = Clock(), t1 = ptx::GlobalTimerNs();
  uint32_t smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  uint64_t* o = per_cta + kPerCta * b;
  o[0] = sum, o[1] = kLoadedStages, o[2] = t0, o[3] = t1, o[4] = c1 - c0, o[5] = t1 - t0;
  o[6] = smid;
}

double Median(std::vector<uint32_t> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

// Returns the first CUDA error, naming the call that failed and its line on stderr.
#define H3_TRY(expr)                                                                   \
  do {                                                                                 \
    const cudaError_t e_ = (expr);                                                     \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "tma_latency: %s failed at line %d: %s\n", #expr, __LINE__, \
                   cudaGetErrorString(e_));                                            \
      return e_;                                                                       \
    }                                                                                  \
  } while (0)

cudaError_t MeasureTmaLatency(TmaLatencyReport* report) {
  int dev = 0, sms = 0, smem_optin = 0;
  H3_TRY(cudaGetDevice(&dev));
  H3_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  H3_TRY(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));

  // L2 chase: a random cycle over 16384 nodes 512 B apart (8 MiB).
  {
    constexpr int64_t kNodes = 16384, kStride = 512 / sizeof(uint64_t);
    std::vector<uint64_t> order(kNodes);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin() + 1, order.end(), std::mt19937_64(29));
    std::vector<uint64_t> next(kNodes * kStride, 0);
    for (int64_t i = 0; i < kNodes; ++i)
      next[order[i] * kStride] = order[(i + 1) % kNodes] * kStride;
    uint64_t *d_next = nullptr, *d_out = nullptr;
    H3_TRY(cudaMalloc(&d_next, next.size() * sizeof(uint64_t)));
    H3_TRY(cudaMalloc(&d_out, 4 * sizeof(uint64_t)));
    H3_TRY(cudaMemcpy(d_next, next.data(), next.size() * sizeof(uint64_t), cudaMemcpyHostToDevice));
    ChaseKernel<<<1, 1>>>(d_next, kNodes, d_out);
    H3_TRY(cudaGetLastError());
    uint64_t out[4] = {};
    H3_TRY(cudaMemcpy(out, d_out, 4 * sizeof(uint64_t), cudaMemcpyDeviceToHost));
    const double per = static_cast<double>(out[0]) / kNodes;
    report->round_trips.push_back({"ld.global.cg chase, 8 MiB (L2 hit; mean)", 0, per, per,
                                   static_cast<double>(out[0]) / static_cast<double>(out[1]),
                                   static_cast<int>(out[3])});
    H3_TRY(cudaFree(d_next));
    H3_TRY(cudaFree(d_out));
  }

  // Operands and their maps.
  uint8_t *a = nullptr, *bm = nullptr;
  uint32_t* sink = nullptr;
  H3_TRY(cudaMalloc(&a, int64_t{kARows} * kRowBytes));
  H3_TRY(cudaMalloc(&bm, int64_t{kBRows} * kRowBytes));
  H3_TRY(cudaMalloc(&sink, sizeof(uint32_t)));
  H3_TRY(cudaMemset(a, 0x5A, int64_t{kARows} * kRowBytes));
  H3_TRY(cudaMemset(bm, 0xA5, int64_t{kBRows} * kRowBytes));
  kernels::EncodeTiledFn encode = nullptr;
  H3_TRY(kernels::GetEncodeTiled(&encode));
  CUtensorMap b_map;
  H3_TRY(kernels::EncodeU8Map(encode, &b_map, bm, kBRows, kRowBytes, kStageBRows, kBoxBytes,
                              CU_TENSOR_MAP_SWIZZLE_64B));
  const auto warm = [&]() -> cudaError_t {
    WarmKernel<<<2 * sms, 256>>>(reinterpret_cast<const uint4*>(a),
                                 int64_t{kARows} * kRowBytes / 16, sink);
    WarmKernel<<<2 * sms, 256>>>(reinterpret_cast<const uint4*>(bm),
                                 int64_t{kBRows} * kRowBytes / 16, sink);
    return cudaGetLastError();
  };
  // The ring's depth is what fits beside the realignment and LoadedKernel's 256 bytes of static
  // barriers and stamps: 8 stages on the H200, 4 in an SM12x part's 99 KiB.
  const int max_stages =
      std::min<int>(kMaxStages, (smem_optin - kSlotAlign - 256) / static_cast<int>(kStageBytes));
  if (max_stages < 1) return cudaErrorInvalidConfiguration;
  const int max_smem = max_stages * static_cast<int>(kStageBytes) + kSlotAlign;
  H3_TRY(cudaFuncSetAttribute(RoundTripKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                              64 * 1024 + kSlotAlign));
  H3_TRY(cudaFuncSetAttribute(LoadedKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem));
  uint32_t* d_clk = nullptr;
  uint64_t* d_span = nullptr;
  H3_TRY(cudaMalloc(&d_clk, kReps * sizeof(uint32_t)));
  H3_TRY(cudaMalloc(&d_span, 3 * sizeof(uint64_t)));

  struct Case {
    const char* what;
    int mode;
    uint32_t bytes;
    int rows;
    bool blocking;
  };
  std::vector<Case> cases;
  for (uint32_t by : {512u, 1024u, 2048u, 4096u, 8192u, 16384u, 32768u, 65536u})
    cases.push_back({"cp.async.bulk 1-D", kBulk1D, by, 0, true});
  for (int r : {8, 16, 32, 64, 128, 256})
    cases.push_back({"cp.async.bulk.tensor 2-D box 64 B x rows", kBox2D,
                     static_cast<uint32_t>(r * kBoxBytes), r, true});
  cases.push_back({"GEMM stage (A 128 + B 256 rows), test_wait", kStage, kStageBytes, 0, false});
  cases.push_back({"GEMM stage (A 128 + B 256 rows), try_wait", kStage, kStageBytes, 0, true});
  for (const Case& c : cases) {
    CUtensorMap a_map;
    H3_TRY(kernels::EncodeU8Map(encode, &a_map, a, kARows, kRowBytes,
                                c.mode == kBox2D ? c.rows : kStageARows, kBoxBytes,
                                CU_TENSOR_MAP_SWIZZLE_64B));
    H3_TRY(warm());
    RoundTripKernel<<<1, 32, std::max<uint32_t>(c.bytes, kStageBytes) + kSlotAlign>>>(
        a_map, b_map, a, c.mode, c.bytes, c.rows, c.blocking, d_clk, d_span);
    H3_TRY(cudaGetLastError());
    std::vector<uint32_t> clk(kReps);
    uint64_t span[3] = {};
    H3_TRY(cudaMemcpy(clk.data(), d_clk, kReps * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    H3_TRY(cudaMemcpy(span, d_span, sizeof(span), cudaMemcpyDeviceToHost));
    report->round_trips.push_back({c.what, c.bytes, Median(clk),
                                   static_cast<double>(*std::min_element(clk.begin(), clk.end())),
                                   static_cast<double>(span[0]) / static_cast<double>(span[1]),
                                   static_cast<int>(span[2])});
  }

  // Loaded: every CTA its own rows (256-byte rows: A [128 b, +128), B [256 b, +256)), one CTA
  // per SM (the most shared memory a block may take, more than half an SM's).
  const int64_t la_bytes = int64_t{sms} * kStageARows * kLoadedRowBytes;
  const int64_t lb_bytes = int64_t{sms} * kStageBRows * kLoadedRowBytes;
  uint8_t *la = nullptr, *lb = nullptr;
  H3_TRY(cudaMalloc(&la, la_bytes));
  H3_TRY(cudaMalloc(&lb, lb_bytes));
  H3_TRY(cudaMemset(la, 0x3C, la_bytes));
  H3_TRY(cudaMemset(lb, 0xC3, lb_bytes));
  CUtensorMap la_map, lb_map;
  H3_TRY(kernels::EncodeU8Map(encode, &la_map, la, int64_t{sms} * kStageARows, kLoadedRowBytes,
                              kStageARows, kBoxBytes, CU_TENSOR_MAP_SWIZZLE_64B));
  H3_TRY(kernels::EncodeU8Map(encode, &lb_map, lb, int64_t{sms} * kStageBRows, kLoadedRowBytes,
                              kStageBRows, kBoxBytes, CU_TENSOR_MAP_SWIZZLE_64B));
  uint64_t* d_per = nullptr;
  H3_TRY(cudaMalloc(&d_per, kPerCta * sizeof(uint64_t) * sms));
  const auto run = [&](int ctas, int slots, uint32_t period_ns) -> cudaError_t {
    WarmKernel<<<2 * sms, 256>>>(reinterpret_cast<const uint4*>(la), la_bytes / 16, sink);
    WarmKernel<<<2 * sms, 256>>>(reinterpret_cast<const uint4*>(lb), lb_bytes / 16, sink);
    LoadedKernel<<<ctas, 32, max_smem>>>(la_map, lb_map, slots, period_ns, d_per);
    H3_TRY(cudaGetLastError());
    std::vector<uint64_t> per(static_cast<size_t>(kPerCta) * ctas);
    H3_TRY(cudaMemcpy(per.data(), d_per, per.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
    uint64_t sum = 0, count = 0, first = ~uint64_t{0}, last = 0, clk = 0, ns = 0;
    std::vector<uint64_t> smids;
    for (int b = 0; b < ctas; ++b) {
      const uint64_t* o = &per[static_cast<size_t>(kPerCta) * b];
      sum += o[0], count += o[1], clk += o[4], ns += o[5];
      first = std::min(first, o[2]), last = std::max(last, o[3]);
      smids.push_back(o[6]);
    }
    std::sort(smids.begin(), smids.end());
    const bool distinct = std::adjacent_find(smids.begin(), smids.end()) == smids.end();
    report->loaded.push_back({ctas, slots, period_ns, kStageBytes,
                              static_cast<double>(sum) / static_cast<double>(count),
                              static_cast<double>(ctas) * kLoadedStages * kStageBytes /
                                  (static_cast<double>(last - first) * 1e-9),
                              static_cast<double>(clk) / static_cast<double>(ns), distinct});
    return cudaSuccess;
  };
  // Closed rings: one SM alone, then every SM at 1 .. max_stages in flight.
  H3_TRY(run(1, 1, 0));
  H3_TRY(run(1, std::min(3, max_stages), 0));
  double wall = 0;
  for (int s : {1, 2, 3, 4, 6, 8}) {
    if (s > max_stages) continue;
    H3_TRY(run(sms, s, 0));
    wall = std::max(wall, report->loaded.back().bytes_per_s);
  }
  // Open: every SM issuing a stage every period, the period set for a share of the closed rings'
  // best rate (the wall), up to max_stages in flight: the latency against the L2's load.
  for (double share : {0.1, 0.25, 0.5, 0.7, 0.8, 0.9, 0.95}) {
    const double period = sms * static_cast<double>(kStageBytes) / (share * wall) * 1e9;
    H3_TRY(run(sms, max_stages, static_cast<uint32_t>(period)));
  }
  H3_TRY(cudaFree(d_per));
  H3_TRY(cudaFree(la));
  H3_TRY(cudaFree(lb));
  H3_TRY(cudaFree(d_clk));
  H3_TRY(cudaFree(d_span));
  H3_TRY(cudaFree(a));
  H3_TRY(cudaFree(bm));
  H3_TRY(cudaFree(sink));
  return cudaDeviceSynchronize();
}

#undef H3_TRY

}  // namespace h3::bench
