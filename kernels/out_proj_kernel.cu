// The fused persistent NVFP4 out-projection kernel (contract sections 3 and 6) and its launcher.
//
// Warp roles (config.cuh): warp 0 issues the TMA/bulk loads of a multi-stage ring; warps 1..3
// quantize attn_out into act_q/act_sf in dynamically claimed units and publish per-m-tile ready
// counts; warps 4..11 (two consumer warpgroups) run the block-scaled MMAs and the fused epilogue.

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>

#include "kernels/config.cuh"
#include "kernels/epilogue.cuh"
#include "kernels/mainloop.cuh"
#include "kernels/out_proj_kernel.h"
#include "kernels/ptx.cuh"
#include "kernels/quantize.cuh"
#include "kernels/scheduler.cuh"
#include "kernels/sm90_staged_mainloop.cuh"

namespace h3::kernels {
namespace {

struct KernelParams {
  int64_t m;
  int n, k, g;
  const uint16_t* __restrict__ attn_out;
  const uint8_t* w_sf;
  float w_gs;
  const float* w_gs_dev;
  const float* act_gs;
  const uint16_t* gate;
  const int32_t* gate_index;
  const uint16_t* residual;
  uint16_t* out;
  uint8_t* act_q;
  uint8_t* act_sf;
  uint32_t* sync;
};

// Producer warps 1..3: claim units of kQuantRows rows, quantize them, publish.
template <class Cfg>
__device__ __forceinline__ void QuantizerLoop(const KernelParams& p, float act_gs) {
  const int lane = threadIdx.x & 31;
  const int64_t units = QuantUnits<Cfg>::Count(p.m);
  const QuantParams qp = MakeQuantParams(act_gs);
  const int blocks_per_row = p.k / Cfg::kSfVec;
  constexpr int kDepth = 4;  // blocks in flight per lane (memory-level parallelism)
  uint32_t* flags = p.sync + kSyncFlagsOffset;
  for (;;) {
    uint32_t u = 0;
    if (lane == 0) u = atomicAdd(p.sync + kSyncWorkCounter, 1u);
    u = __shfl_sync(0xFFFFFFFFu, u, 0);
    if (u >= units) break;
    const int64_t row0 = static_cast<int64_t>(u) * Cfg::kQuantRows;
    const int64_t row_end = row0 + Cfg::kQuantRows < p.m ? row0 + Cfg::kQuantRows : p.m;
    for (int64_t row = row0; row < row_end; ++row) {
      const uint16_t* src = p.attn_out + row * p.k;
      uint8_t* codes = p.act_q + row * (p.k / 2);
      uint8_t* scales = p.act_sf + row * blocks_per_row;
      for (int b0 = lane; b0 < blocks_per_row; b0 += 32 * kDepth) {
#pragma unroll
        for (int d = 0; d < kDepth; ++d) {
          const int b = b0 + 32 * d;
          if (b < blocks_per_row) {
            QuantizeBlockFromGlobal(src + b * Cfg::kSfVec, qp, codes + b * 8, scales + b);
          }
        }
      }
    }
    // Publish: the generic stores above are read by other CTAs' TMA (async proxy).
    ptx::FenceProxyAsyncGlobal();
    __threadfence();
    __syncwarp();
    if (lane == 0) ptx::RedReleaseGpuAdd(flags + row0 / Cfg::kBM, 1u);
  }
}

// Producer warp 0, one elected lane: fill the ring.
template <class Cfg>
__device__ __forceinline__ void LoadLoop(const KernelParams& p, const CUtensorMap* tmap_aq,
                                         const CUtensorMap* tmap_asf, const CUtensorMap* tmap_wq,
                                         uint8_t* smem, uint64_t* full, uint64_t* empty) {
  const TileScheduler<Cfg> sched(p.m, p.n);
  const int ksteps = p.k / Cfg::kBK;
  // Bytes of one 128-row group of weight scales: round_up(K/16, 4) / 4 * 512 (K/16 % 16 == 0).
  const int64_t sfb_group_bytes = static_cast<int64_t>(p.k / Cfg::kSfVec / 4) * 512;
  const uint32_t* flags = p.sync + kSyncFlagsOffset;
  int stage = 0;
  uint32_t phase = 0;
  int ready_mt = -1;
  for (int64_t tile = blockIdx.x; tile < sched.num_tiles; tile += gridDim.x) {
    int mt, nt;
    sched.Tile(tile, mt, nt);
    if (mt != ready_mt) {
      const uint32_t need = QuantUnits<Cfg>::UnitsInMTile(p.m, mt);
      while (ptx::LdAcquireGpu(flags + mt) < need) __nanosleep(128);
      ptx::FenceProxyAsyncGlobal();  // acquire, then the async-proxy reads below
      ready_mt = mt;
    }
    for (int ks = 0; ks < ksteps; ++ks) {
      ptx::MbarWait(&empty[stage], phase ^ 1u);
      ptx::MbarArriveExpectTx(&full[stage], Cfg::kStageBytes);
      ptx::TmaLoad2D(smem + Cfg::kAOffset + stage * Cfg::kATileBytes, tmap_aq, &full[stage],
                     ks * Cfg::kRowBytes, mt * Cfg::kBM);
      ptx::TmaLoad2D(smem + Cfg::kSfaOffset + stage * Cfg::kSfaTileBytes, tmap_asf, &full[stage],
                     ks * Cfg::kSfaRowBytes, mt * Cfg::kBM);
      ptx::TmaLoad2D(smem + Cfg::kBOffset + stage * Cfg::kBTileBytes, tmap_wq, &full[stage],
                     ks * Cfg::kRowBytes, nt * Cfg::kBN);
      ptx::BulkLoad(smem + Cfg::kSfbOffset + stage * Cfg::kSfbTileBytes,
                    p.w_sf + nt * sfb_group_bytes + static_cast<int64_t>(ks) * Cfg::kSfbTileBytes,
                    Cfg::kSfbTileBytes, &full[stage]);
      if (++stage == Cfg::kStages) {
        stage = 0;
        phase ^= 1u;
      }
    }
  }
}

// The SM120 (and faithful sm_90) consumer: one tile's stages, one ConsumeStage each.
template <class Cfg>
__device__ __forceinline__ void ConsumeTileStages(uint8_t* smem, uint64_t* full, uint64_t* empty,
                                                  int& stage, uint32_t& phase, int ksteps,
                                                  int warp_m, int warp_n, WarpAcc<Cfg>& acc) {
  for (int ks = 0; ks < ksteps; ++ks) {
    ptx::MbarWait(&full[stage], phase);
    ConsumeStage<Cfg>(smem + Cfg::kAOffset + stage * Cfg::kATileBytes,
                      smem + Cfg::kBOffset + stage * Cfg::kBTileBytes,
                      smem + Cfg::kSfaOffset + stage * Cfg::kSfaTileBytes,
                      smem + Cfg::kSfbOffset + stage * Cfg::kSfbTileBytes, warp_m * Cfg::kWarpTileM,
                      warp_n * Cfg::kWarpTileN, acc);
    ptx::MbarArrive(&empty[stage]);
    if (++stage == Cfg::kStages) {
      stage = 0;
      phase ^= 1u;
    }
  }
}

// Consumer warps: MMA over the ring, then the fused epilogue straight from registers.
template <class Cfg>
__device__ __forceinline__ void ConsumerLoop(const KernelParams& p, uint8_t* smem, uint64_t* full,
                                             uint64_t* empty, const EpilogueArgs& e) {
  const int cw = (threadIdx.x >> 5) - Cfg::kProducerWarps;
  const int warp_m = cw / Cfg::kWarpsN, warp_n = cw % Cfg::kWarpsN;
  const TileScheduler<Cfg> sched(p.m, p.n);
  const int ksteps = p.k / Cfg::kBK;
  int stage = 0;
  uint32_t phase = 0;
  for (int64_t tile = blockIdx.x; tile < sched.num_tiles; tile += gridDim.x) {
    int mt, nt;
    sched.Tile(tile, mt, nt);
    WarpAcc<Cfg> acc;
#pragma unroll
    for (int i = 0; i < Cfg::kMFrags; ++i)
#pragma unroll
      for (int j = 0; j < Cfg::kNFrags; ++j)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc.v[i][j][c] = 0.0f;
    if constexpr (!kNativeBlockScaledMma && Cfg::kEmuBufBytes > 0) {
      // sm_90 staged emulation: the tile's stages as one stream of k-steps, then its wgmma
      // accumulator layout -> the warp-tile layout.
      emu_staged::ConsumeTile<Cfg>(smem, full, empty, stage, phase, ksteps, acc);
      emu_staged::FinishTile<Cfg>(acc);
    } else {
      ConsumeTileStages<Cfg>(smem, full, empty, stage, phase, ksteps, warp_m, warp_n, acc);
    }
    StoreTile<Cfg>(acc, static_cast<int64_t>(mt) * Cfg::kBM + warp_m * Cfg::kWarpTileM,
                   nt * Cfg::kBN + warp_n * Cfg::kWarpTileN, e);
  }
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::kThreads, 1)
    OutProjKernel(const __grid_constant__ CUtensorMap tmap_aq,
                  const __grid_constant__ CUtensorMap tmap_asf,
                  const __grid_constant__ CUtensorMap tmap_wq, const KernelParams p) {
  extern __shared__ uint8_t smem_raw[];
  __shared__ uint32_t s_last_cta;
  // Realign by an offset from the shared array itself, so the compiler keeps knowing these
  // are shared-memory addresses (LDS, not generic LD).
  const uint32_t misalign = ptx::SmemAddr(smem_raw) & (Cfg::kSmemAlign - 1);
  uint8_t* smem = smem_raw + ((Cfg::kSmemAlign - misalign) & (Cfg::kSmemAlign - 1));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + Cfg::kBarOffset);
  uint64_t* empty = full + Cfg::kStages;
  const int warp = threadIdx.x >> 5;

  if (threadIdx.x == 0) {
    for (int s = 0; s < Cfg::kStages; ++s) {
      ptx::MbarInit(&full[s], 1);  // the loader's arrive.expect_tx
      // Every consumer thread arrives: mbarrier.arrive releases only the arriving thread's own
      // shared-memory reads, and each thread read the stage (WAR before the next TMA write).
      ptx::MbarInit(&empty[s], Cfg::kConsumerWarps * 32);
    }
    ptx::FenceBarrierInit();
    ptx::PrefetchTensorMap(&tmap_aq);
    ptx::PrefetchTensorMap(&tmap_asf);
    ptx::PrefetchTensorMap(&tmap_wq);
  }
  __syncthreads();

  const float act_gs = *p.act_gs;
  if (warp == Cfg::kLoadWarp) {
    if ((threadIdx.x & 31) == 0) LoadLoop<Cfg>(p, &tmap_aq, &tmap_asf, &tmap_wq, smem, full, empty);
  } else if (warp < Cfg::kProducerWarps) {
    QuantizerLoop<Cfg>(p, act_gs);
  } else {
    const float w_gs = p.w_gs_dev != nullptr ? *p.w_gs_dev : p.w_gs;
    EpilogueArgs e;
    e.m = p.m;
    e.n = p.n;
    e.g = p.g;
    e.alpha = __fdiv_rn(1.0f, __fmul_rn(act_gs, w_gs));  // alpha = 1 (/) (act_gs (x) w_gs)
    e.acc_scale = kNativeBlockScaledMma ? 1.0f : kEmuAccScale;
    e.gate = p.gate;
    e.gate_index = p.gate_index;
    e.residual = p.residual;
    e.out = p.out;
    ConsumerLoop<Cfg>(p, smem, full, empty, e);
  }

  // Teardown: the last CTA to finish returns every counter and flag to zero, so the next
  // launch (or graph replay) needs no memset. All loads of all CTAs are done by then.
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    s_last_cta = ptx::AtomicAddAcqRelGpu(p.sync + kSyncDoneCounter, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (s_last_cta) {
    const int64_t m_tiles = (p.m + Cfg::kBM - 1) / Cfg::kBM;
    for (int64_t i = threadIdx.x; i < m_tiles; i += blockDim.x) p.sync[kSyncFlagsOffset + i] = 0;
    if (threadIdx.x == 0) {
      p.sync[kSyncWorkCounter] = 0;
      p.sync[kSyncDoneCounter] = 0;
    }
  }
}

// ---- Host side. ----
using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                   const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                   const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled is a driver API: fetched through the runtime so only cudart_static
// is linked.
cudaError_t GetEncodeTiled(EncodeTiledFn* fn) {
  static std::once_flag once;
  static EncodeTiledFn cached = nullptr;
  static cudaError_t status = cudaSuccess;
  std::call_once(once, [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q;
    status = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000,
                                              cudaEnableDefault, &q);
    if (status == cudaSuccess && q != cudaDriverEntryPointSuccess) status = cudaErrorNotSupported;
    cached = reinterpret_cast<EncodeTiledFn>(f);
  });
  *fn = cached;
  return status;
}

// A [rows, row_bytes] u8 matrix, box [box_rows, box_bytes].
cudaError_t EncodeU8Map(EncodeTiledFn encode, CUtensorMap* map, const void* base, uint64_t rows,
                        uint64_t row_bytes, uint32_t box_rows, uint32_t box_bytes,
                        CUtensorMapSwizzle swizzle) {
  const cuuint64_t dims[2] = {row_bytes, rows};
  const cuuint64_t strides[1] = {row_bytes};
  const cuuint32_t box[2] = {box_bytes, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<void*>(base), dims,
                            strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);  // out-of-bounds rows read 0
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

template <class Cfg>
cudaError_t Configure(int* resident_ctas) {
  int dev = 0, sms = 0, per_sm = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (e == cudaSuccess) {
    e = cudaFuncSetAttribute(OutProjKernel<Cfg>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             Cfg::kSmemBytes);
  }
  if (e == cudaSuccess) {
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, OutProjKernel<Cfg>, Cfg::kThreads,
                                                      Cfg::kSmemBytes);
  }
  if (e != cudaSuccess) return e;
  if (per_sm < 1) return cudaErrorInvalidConfiguration;
  *resident_ctas = sms * per_sm;
  return cudaSuccess;
}

template <class Cfg>
int64_t GridFor(const OutProjLaunch& l) {
  const int64_t tiles = ((l.m + Cfg::kBM - 1) / Cfg::kBM) * (l.n / Cfg::kBN);
  return tiles < l.resident_ctas ? tiles : l.resident_ctas;
}

template <class Cfg>
cudaError_t Launch(const OutProjLaunch& l, cudaStream_t stream, const char** what) {
  EncodeTiledFn encode = nullptr;
  cudaError_t e = GetEncodeTiled(&encode);
  if (e != cudaSuccess) {
    *what = "cudaGetDriverEntryPointByVersion(cuTensorMapEncodeTiled)";
    return e;
  }
  CUtensorMap tmap_aq, tmap_asf, tmap_wq;
  const uint64_t m = static_cast<uint64_t>(l.m);
  e = EncodeU8Map(encode, &tmap_aq, l.act_q, m, l.k / 2, Cfg::kBM, Cfg::kRowBytes,
                  CU_TENSOR_MAP_SWIZZLE_128B);
  if (e == cudaSuccess) {
    e = EncodeU8Map(encode, &tmap_asf, l.act_sf, m, l.k / Cfg::kSfVec, Cfg::kBM, Cfg::kSfaRowBytes,
                    CU_TENSOR_MAP_SWIZZLE_NONE);
  }
  if (e == cudaSuccess) {
    e = EncodeU8Map(encode, &tmap_wq, l.w_q, l.n, l.k / 2, Cfg::kBN, Cfg::kRowBytes,
                    CU_TENSOR_MAP_SWIZZLE_128B);
  }
  if (e != cudaSuccess) {
    *what = "cuTensorMapEncodeTiled";
    return e;
  }
  if (l.resident_ctas < 1) {
    *what = "launch geometry (ConfigureOutProj not run in this context)";
    return cudaErrorInvalidConfiguration;
  }
  const int grid = static_cast<int>(GridFor<Cfg>(l));
  KernelParams p;
  p.m = l.m;
  p.n = l.n;
  p.k = l.k;
  p.g = l.g;
  p.attn_out = l.attn_out;
  p.w_sf = l.w_sf;
  p.w_gs = l.w_gs;
  p.w_gs_dev = l.w_gs_dev;
  p.act_gs = l.act_gs;
  p.gate = l.gate;
  p.gate_index = l.gate_index;
  p.residual = l.residual;
  p.out = l.out;
  p.act_q = l.act_q;
  p.act_sf = l.act_sf;
  p.sync = l.sync;
  // cudaLaunchKernelEx returns this launch's own error; cudaGetLastError after <<<>>> would also
  // report (and clear) an unrelated earlier error of the caller's.
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(Cfg::kThreads);
  config.dynamicSmemBytes = Cfg::kSmemBytes;
  config.stream = stream;
  e = cudaLaunchKernelEx(&config, OutProjKernel<Cfg>, tmap_aq, tmap_asf, tmap_wq, p);
  if (e != cudaSuccess) *what = "kernel launch";
  return e;
}

}  // namespace

cudaError_t LaunchOutProj(const OutProjLaunch& l, KernelBuild build, cudaStream_t stream,
                          const char** what) {
  return build == KernelBuild::kSm90Fast ? Launch<Sm90Config>(l, stream, what)
                                         : Launch<Sm120Config>(l, stream, what);
}

cudaError_t ConfigureOutProj(KernelBuild build, int* resident_ctas) {
  return build == KernelBuild::kSm90Fast ? Configure<Sm90Config>(resident_ctas)
                                         : Configure<Sm120Config>(resident_ctas);
}

cudaError_t OutProjGridSize(const OutProjLaunch& l, KernelBuild build, int* grid) {
  OutProjLaunch c = l;
  const cudaError_t e = ConfigureOutProj(build, &c.resident_ctas);
  if (e != cudaSuccess) return e;
  *grid = static_cast<int>(build == KernelBuild::kSm90Fast ? GridFor<Sm90Config>(c)
                                                           : GridFor<Sm120Config>(c));
  return cudaSuccess;
}

}  // namespace h3::kernels
