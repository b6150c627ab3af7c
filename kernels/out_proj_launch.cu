// The host launcher of the fused kernel (out_proj_kernel.cuh): TMA descriptors, one-time
// configuration per context, launch geometry and the launch. Arguments are validated by
// out_proj.cc before they get here.

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>

#include "kernels/config.cuh"
#include "kernels/granularity.h"
#include "kernels/out_proj_kernel.cuh"
#include "kernels/out_proj_launch.h"
#include "kernels/sm90/config.cuh"

namespace h3::kernels {
namespace {

// The host API's published granularity (kernels/out_proj.h) is every build's tiling.
template <class Cfg>
constexpr bool TilesTheApi() {
  return kOutProjTileM == Cfg::kBM && kOutProjNMultiple % Cfg::kNMultiple == 0 &&
         kOutProjKMultiple % Cfg::kKMultiple == 0 && kOutProjKMultiple == kChunkQuantum;
}
static_assert(TilesTheApi<Sm120Config>() && TilesTheApi<Sm120ConfigLockstep>() &&
              TilesTheApi<Sm120Config128>() && TilesTheApi<sm90::Sm90Config>());

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
  const int64_t tiles = ((l.m + Cfg::kBM - 1) / Cfg::kBM) * ((l.n + Cfg::kBN - 1) / Cfg::kBN);
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
  // Code tiles swizzled with the mode of their row width (fragment_math.h SwizzleOffset); the
  // activation-scale box is [kBM][16 B] (config.cuh kSfaBoxBytes), unswizzled.
  constexpr CUtensorMapSwizzle kCodeSwizzle =
      Cfg::kRowBytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B;
  e = EncodeU8Map(encode, &tmap_aq, l.act_q, m, l.k / 2, Cfg::kBM, Cfg::kRowBytes, kCodeSwizzle);
  if (e == cudaSuccess) {
    e = EncodeU8Map(encode, &tmap_asf, l.act_sf, m, l.k / Cfg::kSfVec, Cfg::kBM, Cfg::kSfaBoxBytes,
                    CU_TENSOR_MAP_SWIZZLE_NONE);
  }
  if (e == cudaSuccess) {
    // One box per ring stage: the whole tile's kBN rows, or (skewed) one group's kGroupBN.
    e = EncodeU8Map(encode, &tmap_wq, l.w_q, l.n, l.k / 2, Cfg::kGroupBN, Cfg::kRowBytes,
                    kCodeSwizzle);
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
  p.ready_flags = l.ready_flags;
  p.skip_epilogue = l.skip_epilogue;
  p.one_group_mma = l.one_group_mma;
  // Bulk prefetches need 16-byte aligned rows: the base (the API only asks 4 bytes) and the row
  // pitch (n % 8 == 0 always: n is a multiple of 128). The B tensor map has n rows: the missing
  // rows of a half tile at the end of N read as zeros (and their warps compute nothing).
  p.prefetch_residual = reinterpret_cast<uintptr_t>(l.residual) % 16 == 0;
  p.vec16_epilogue = (reinterpret_cast<uintptr_t>(l.residual) | reinterpret_cast<uintptr_t>(l.out) |
                      reinterpret_cast<uintptr_t>(l.gate)) %
                         16 ==
                     0;
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

// The one place that maps (build, tile) to a config: calls f(ConfigTag<Cfg>{}).
template <class Cfg>
struct ConfigTag {
  using type = Cfg;
};
template <class F>
auto WithConfig(KernelBuild build, KernelTile tile, F&& f) {
  if (build == KernelBuild::kSm90Fast) return f(ConfigTag<sm90::Sm90Config>{});
  switch (tile) {
    case KernelTile::k128x128:
      return f(ConfigTag<Sm120Config128>{});
    case KernelTile::k128x256Lockstep:
      return f(ConfigTag<Sm120ConfigLockstep>{});
    case KernelTile::k128x256:
      break;
  }
  return f(ConfigTag<Sm120Config>{});
}

}  // namespace

cudaError_t LaunchOutProj(const OutProjLaunch& l, KernelBuild build, KernelTile tile,
                          cudaStream_t stream, const char** what) {
  return WithConfig(
      build, tile, [&](auto tag) { return Launch<typename decltype(tag)::type>(l, stream, what); });
}

cudaError_t ConfigureOutProj(KernelBuild build, KernelTile tile, int* resident_ctas) {
  return WithConfig(build, tile, [&](auto tag) {
    return Configure<typename decltype(tag)::type>(resident_ctas);
  });
}

int OutProjSmemBytes(KernelBuild build, KernelTile tile) {
  return WithConfig(build, tile, [](auto tag) { return int{decltype(tag)::type::kSmemBytes}; });
}

}  // namespace h3::kernels
