#ifndef H3_KERNELS_PTX_CUH_
#define H3_KERNELS_PTX_CUH_

// Thin inline-PTX wrappers. Each cites the PTX ISA fact it relies on (PTX ISA 8.7+, CUDA 13).

#include <cuda.h>

#include <cstdint>

namespace h3::kernels::ptx {

__device__ __forceinline__ uint32_t SmemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarrier (PTX "Parallel Synchronization and Communication Instructions: mbarrier"). ----
// init sets the expected arrival count; the phase starts at 0.
__device__ __forceinline__ void MbarInit(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(SmemAddr(bar)), "r"(count)
               : "memory");
}
// Makes the initialized barriers visible to the async proxy (TMA completes on them).
__device__ __forceinline__ void FenceBarrierInit() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
// arrive + expect_tx: one arrival, and the phase also waits for `bytes` of async transactions.
__device__ __forceinline__ void MbarArriveExpectTx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(SmemAddr(bar)),
               "r"(bytes)
               : "memory");
}
// Plain arrival (release semantics at CTA scope by default); bar: a shared-memory address.
__device__ __forceinline__ void MbarArriveAddr(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void MbarArrive(uint64_t* bar) { MbarArriveAddr(SmemAddr(bar)); }
// The arrival only where `pred`: one predicated instruction, no branch around it.
__device__ __forceinline__ void MbarArriveIf(bool pred, uint32_t bar) {
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.u32 p, %1, 0;\n @p mbarrier.arrive.shared::cta.b64 _, [%0];\n}\n"
      ::"r"(bar), "r"(static_cast<uint32_t>(pred))
      : "memory");
}
// try_wait.parity returns true once the phase with the given parity has completed (acquire
// semantics at CTA scope by default); a fresh barrier counts as having completed parity 1. The
// thread may be suspended inside it for a system-dependent time before it returns false.
// bar: the barrier's shared-memory address (SmemAddr).
__device__ __forceinline__ bool MbarTryWaitAddr(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      " selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}
// Both phases complete: the second barrier is tried only where the first succeeded (one
// predicate, so the caller branches once).
__device__ __forceinline__ bool MbarTryWaitBoth(uint32_t bar0, uint32_t parity0, uint32_t bar1,
                                                uint32_t parity1) {
  uint32_t done = 0;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      " @p mbarrier.try_wait.parity.shared::cta.b64 p, [%3], %4;\n"
      " selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar0), "r"(parity0), "r"(bar1), "r"(parity1)
      : "memory");
  return done != 0;
}
__device__ __forceinline__ bool MbarTryWait(uint64_t* bar, uint32_t parity) {
  return MbarTryWaitAddr(SmemAddr(bar), parity);
}
// try_wait.parity with a suspend-time hint: the thread sleeps until the phase completes or about
// `ns` nanoseconds pass (PTX: suspendTimeHint), then returns whether it completed.
__device__ __forceinline__ bool MbarTryWaitFor(uint64_t* bar, uint32_t parity, uint32_t ns) {
  uint32_t done = 0;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\n"
      " selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(SmemAddr(bar)), "r"(parity), "r"(ns)
      : "memory");
  return done != 0;
}
// test_wait.parity: the same test without blocking (PTX: mbarrier.test_wait is non-blocking).
__device__ __forceinline__ bool MbarTest(uint64_t* bar, uint32_t parity) {
  uint32_t done = 0;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      " selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(SmemAddr(bar)), "r"(parity)
      : "memory");
  return done != 0;
}

// The same test by address (bar: a shared-memory address).
__device__ __forceinline__ bool MbarTestAddr(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      " selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}

// ---- Shared memory by address (generic-proxy ld / st.shared; addr: SmemAddr). ----
__device__ __forceinline__ void StShared32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void StShared128(uint32_t addr, const uint32_t (&v)[4]) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(v[0]), "r"(v[1]),
               "r"(v[2]), "r"(v[3])
               : "memory");
}
__device__ __forceinline__ void LdShared128(uint32_t addr, uint32_t (&v)[4]) {
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
               : "r"(addr)
               : "memory");
}

// %globaltimer: nanoseconds (PTX special registers; the resolution is implementation-defined, a
// microsecond or better), for wait bounds only.
__device__ __forceinline__ uint64_t GlobalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// ---- Bulk copies (PTX "cp.async.bulk", "cp.async.bulk.tensor"). ----
// 2-D tiled tensor copy global -> shared, completion counted in bytes on the mbarrier. The
// destination is .shared::cta (PTX ISA 8.6+), not .shared::cluster: with the cluster form ptxas
// 13.0 compiles an address mapping call and then ignores setmaxnreg in the whole kernel (C7506
// "'setmaxnreg' ignored to maintain compatibility into 'extern' call", NOTES.md).
__device__ __forceinline__ void TmaLoad2D(void* dst, const CUtensorMap* map, uint64_t* bar,
                                          int32_t c0, int32_t c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];" ::"r"(SmemAddr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(SmemAddr(bar)), "r"(c0), "r"(c1)
      : "memory");
}
// 1-D bulk copy: size and both addresses multiples of 16 bytes (.shared::cta: see TmaLoad2D).
__device__ __forceinline__ void BulkLoad(void* dst, const void* src, uint32_t bytes,
                                         uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cta.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
          SmemAddr(dst)),
      "l"(src), "r"(bytes), "r"(SmemAddr(bar))
      : "memory");
}
// Bulk prefetch of `bytes` (a multiple of 16) at a 16-byte aligned global address into L2: a
// hint, no completion to wait for (PTX "cp.async.bulk.prefetch", sm_90+).
__device__ __forceinline__ void BulkPrefetchL2(const void* src, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void PrefetchTensorMap(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// ---- Memory ordering across CTAs (PTX memory consistency model). ----
__device__ __forceinline__ uint32_t LdAcquireGpu(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void RedReleaseGpuAdd(uint32_t* p, uint32_t v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// Orders generic-proxy global accesses with later async-proxy (TMA) accesses: generic stores
// of act_q/act_sf must be visible to cp.async.bulk.tensor reads (PTX "Proxies" / membar.proxy).
__device__ __forceinline__ void FenceProxyAsyncGlobal() {
  asm volatile("fence.proxy.async.global;" ::: "memory");
}

// ---- Named barriers (PTX "barrier"): `threads` threads (a multiple of 32) of the CTA meet on
// barrier `id`. Not .aligned: a warp's lanes may reach it from different paths. ----
__device__ __forceinline__ void BarrierSync(uint32_t id, uint32_t threads) {
  asm volatile("barrier.cta.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
// The same, returning whether `pred` was true in any of the threads (barrier.red.or).
__device__ __forceinline__ bool BarrierOr(uint32_t id, uint32_t threads, bool pred) {
  uint32_t any;
  asm volatile(
      "{\n\t.reg .pred p, q;\n\tsetp.ne.u32 p, %1, 0;\n\t"
      "barrier.cta.red.or.pred q, %2, %3, p;\n\tselp.u32 %0, 1, 0, q;\n\t}"
      : "=r"(any)
      : "r"(static_cast<uint32_t>(pred)), "r"(id), "r"(threads)
      : "memory");
  return any != 0;
}

// ---- Registers (PTX setmaxnreg, sm_90a / sm_100f / sm_120f): every warp of a warpgroup executes
// the same one; dec releases registers to the SM's pool, inc waits until it can take them. ----
template <int kRegs>
__device__ __forceinline__ void SetMaxNRegDec() {
  static_assert(kRegs % 8 == 0 && kRegs >= 24 && kRegs <= 256, "setmaxnreg range");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void SetMaxNRegInc() {
  static_assert(kRegs % 8 == 0 && kRegs >= 24 && kRegs <= 256, "setmaxnreg range");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
}

// The warp's index in the CTA, read from lane 0 (every lane of a warp has the same one), so that
// the compiler knows it and what derives from it alone to be warp-uniform: it then keeps them
// instead of re-reading SR_TID.X inside the consumer loop. Every lane of the warp must call it.
__device__ __forceinline__ int WarpIdxUniform() {
  return __shfl_sync(0xFFFFFFFFu, static_cast<int>(threadIdx.x >> 5), 0);
}

// ---- Register pinning. ----
// Makes x opaque to the compiler (an empty asm that "changes" it): a value computed once before
// a loop is then kept in its register instead of being recomputed inside the loop from
// threadIdx / the shared-memory base, which the compiler otherwise prefers (rematerialization).
__device__ __forceinline__ void Opaque(uint32_t& x) { asm volatile("" : "+r"(x)); }

// ---- Fragments. ----
// ldmatrix.x4.m8n8.b16: lane l gives the row address of matrix l/8; thread t of the result
// holds, for matrix q, 32-bit word t%4 of row t/4 in register q.
__device__ __forceinline__ void LdMatrixX4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

}  // namespace h3::kernels::ptx

#endif  // H3_KERNELS_PTX_CUH_
