#ifndef H3_KERNELS_LAUNCH_CUH_
#define H3_KERNELS_LAUNCH_CUH_

// The launcher of the fused kernel's instances (host code, compiled by nvcc): the (build, tile)
// -> kernel dispatch from the registry (tiles.h), TMA descriptors, per-context configuration and
// the launch. MakeKernelSet<Variant>() is a KernelSet (kernel_set.h); the product's is built in
// out_proj_launch.cu, the bench's timing variants in harness/bench. Arguments are validated by
// out_proj.cc before they get here.

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>

#include "kernels/device/config.cuh"
#include "kernels/device/granularity.h"
#include "kernels/device/kernel_set.h"
#include "kernels/device/out_proj_kernel.cuh"
#include "kernels/device/params.h"
#include "kernels/launch/register_split.h"
#include "kernels/device/rings.cuh"
#include "kernels/launch/targets.cuh"
#include "kernels/device/tiles.h"

namespace h3::kernels {

// The host API's published granularity (granularity.h) is every instance's tiling.
template <class Cfg>
constexpr bool TilesTheApi() {
  return kOutProjTileM == Cfg::kBM && kOutProjNMultiple % Cfg::kNMultiple == 0 &&
         kOutProjKMultiple % Cfg::kKMultiple == 0 && kOutProjKMultiple == kChunkQuantum;
}

// The product's staged config stages its epilogue in each of the product's instances (a policy
// without its own staged hooks would silently run the in-register path: staged_epilogue.cuh).
static_assert(kStagedOf<Sm120Config128x128Staged, Product> &&
                  kStagedOf<Sm120Config128x128Staged, ProductSmoothed> &&
                  kStagedOf<Sm120Config128x128Staged, ProductBranch>,
              "the staged config's product instances stage their epilogue");

// One kernel instance: its config, its shared memory and its __global__ function.
template <class Cfg_, class Storage_, class Fn>
struct KernelInstance {
  using Cfg = Cfg_;
  using Storage = Storage_;
  Fn* fn;
  static constexpr int kSmemBytes = DynamicSmemBytes<Storage>();
  static_assert(kSmemBytes <= Cfg::kSmemBudget, "shared memory over the config's budget");
  static_assert(TilesTheApi<Cfg>(), "the API's granularity tiles this config");
};
template <class Cfg, class Storage, class Fn>
KernelInstance<Cfg, Storage, Fn> MakeInstance(Fn* fn) {
  return {fn};
}

// The SM120 kernel of config Cfg with the policy of `build`'s config target (targets.cuh).
template <class Cfg, class Variant, class F>
auto WithArch(KernelBuild build, F&& f) {
  return WithConfigTarget(build, [&](auto target) {
    using Arch = typename decltype(target)::Arch;
    return f(MakeInstance<Cfg, StorageOf<Cfg>>(&OutProjKernel<Cfg, Arch, Variant>));
  });
}

// The registry config of `tile` with `build`'s config target: calls f(instance).
template <class Variant, class F>
auto WithRegistryConfig(KernelBuild build, OutProjTile tile, F&& f) {
  if (tile == OutProjTile::kAuto) tile = kOutProjTileDefault;
  switch (tile) {
#define H3_TILE_CASE(id, code, name, cfg, what) \
  case OutProjTile::id:                         \
    return WithArch<cfg, Variant>(build, f);
    H3_OUT_PROJ_TILES(H3_TILE_CASE)
#undef H3_TILE_CASE
    case OutProjTile::kAuto:
      break;
  }
  // Unreachable: the host API validated tile. Running some other config instead would hide the
  // bug, so it stops here, saying why.
  std::fprintf(stderr, "h3::kernels::WithKernel: tile code %d is not a registered config\n",
               static_cast<int>(tile));
  std::abort();
}

// The registry's config type of a tile code (tiles.h).
template <OutProjTile kTile>
struct TileConfig;
#define H3_TILE_CONFIG(id, code, name, cfg, what) \
  template <>                                     \
  struct TileConfig<OutProjTile::id> {            \
    using type = cfg;                             \
  };
H3_OUT_PROJ_TILES(H3_TILE_CONFIG)
#undef H3_TILE_CONFIG

// The one place that maps (build, tile) to a kernel instance: calls f(instance). The build picks
// the target (targets.cuh); a target with its own kernel ignores the tile. kDefaultTileOnly (the
// testonly sets of DefaultTileDispatch): the default's config whatever the tile, so that only
// one instance per target is compiled.
template <class Variant, bool kDefaultTileOnly = false, class F>
auto WithKernel(KernelBuild build, OutProjTile tile, F&& f) {
  return WithTarget(build, [&](auto target) {
    using Target = decltype(target);
    if constexpr (Target::kOwnKernel) {
      return f(MakeInstance<typename Target::Cfg, typename Target::Storage>(
          Target::template Kernel<Variant>()));
    } else if constexpr (kDefaultTileOnly) {
      return WithArch<typename TileConfig<kOutProjTileDefault>::type, Variant>(build, f);
    } else {
      return WithRegistryConfig<Variant>(build, tile, f);
    }
  });
}

using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                   const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                   const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled is a driver API: fetched through the runtime so only cudart_static
// is linked.
inline cudaError_t GetEncodeTiled(EncodeTiledFn* fn) {
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
inline cudaError_t EncodeU8Map(EncodeTiledFn encode, CUtensorMap* map, const void* base,
                               uint64_t rows, uint64_t row_bytes, uint32_t box_rows,
                               uint32_t box_bytes, CUtensorMapSwizzle swizzle) {
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

// The last descriptor EncodeU8Map made for one map of one kernel instance, on one thread.
// cuTensorMapEncodeTiled is a pure function of its arguments (it takes no context or stream and
// consults no allocation: the descriptor holds the address and the geometry only), and the
// arguments not keyed here (data type, rank, element strides, interleave, L2 promotion, fill)
// are the same constants on every call; so a call whose keyed arguments repeat may copy the
// kept descriptor. With the eager fast path's cached workspace all three maps repeat at a fixed M.
struct MapMemo {
  bool valid = false;
  const void* base = nullptr;
  uint64_t rows = 0, row_bytes = 0;
  uint32_t box_rows = 0, box_bytes = 0;
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
  // Bytes, copied with memcpy: thread-local storage of a dlopen'ed library need not honour
  // CUtensorMap's 64-byte alignment.
  unsigned char map[sizeof(CUtensorMap)];
};

inline cudaError_t EncodeU8MapMemo(MapMemo* memo, EncodeTiledFn encode, CUtensorMap* map,
                                   const void* base, uint64_t rows, uint64_t row_bytes,
                                   uint32_t box_rows, uint32_t box_bytes,
                                   CUtensorMapSwizzle swizzle) {
  if (memo->valid && memo->base == base && memo->rows == rows && memo->row_bytes == row_bytes &&
      memo->box_rows == box_rows && memo->box_bytes == box_bytes && memo->swizzle == swizzle) {
    std::memcpy(static_cast<void*>(map), memo->map, sizeof(CUtensorMap));
    return cudaSuccess;
  }
  const cudaError_t e =
      EncodeU8Map(encode, map, base, rows, row_bytes, box_rows, box_bytes, swizzle);
  memo->valid = e == cudaSuccess;
  if (memo->valid) {
    memo->base = base;
    memo->rows = rows;
    memo->row_bytes = row_bytes;
    memo->box_rows = box_rows;
    memo->box_bytes = box_bytes;
    memo->swizzle = swizzle;
    std::memcpy(memo->map, static_cast<const void*>(map), sizeof(CUtensorMap));
  }
  return e;
}

// What the kernel's code assumes of its compiled form, from the runtime's view of it: every
// thread's registers can complete the setmaxnreg split (register_split.h), all of its shared
// memory is the dynamic block AlignedSmem realigns, and a CTA of kThreads can launch.
template <class Instance>
std::string CompiledKernelRefusal(const Instance& k, cudaError_t* e) {
  using Cfg = typename Instance::Cfg;
  cudaFuncAttributes attr = {};
  *e = cudaFuncGetAttributes(&attr, k.fn);
  if (*e != cudaSuccess) return "";
  if (attr.maxThreadsPerBlock < Cfg::kThreads) {
    return "the kernel can launch " + std::to_string(attr.maxThreadsPerBlock) +
           " threads per CTA, its warp roles need " + std::to_string(Cfg::kThreads);
  }
  if (attr.sharedSizeBytes != 0) {
    return "the kernel has " + std::to_string(attr.sharedSizeBytes) +
           " bytes of static shared memory; its layout assumes the dynamic block alone";
  }
  if constexpr (Cfg::kSetMaxNReg) {
    const RegisterSplit split{Cfg::kThreads, Cfg::kProducerWarps * 32, Cfg::kProducerRegs,
                              Cfg::kConsumerWarps * 32, Cfg::kConsumerRegs};
    return RegisterSplitRefusal(split, attr.numRegs);
  }
  return "";
}

template <class Instance>
cudaError_t Configure(const Instance& k, int* resident_ctas, std::string* refusal) {
  using Cfg = typename Instance::Cfg;
  cudaError_t e = cudaSuccess;
  *refusal = CompiledKernelRefusal(k, &e);
  if (e != cudaSuccess) return e;
  if (!refusal->empty()) return cudaErrorInvalidConfiguration;
  int dev = 0, sms = 0, per_sm = 0;
  e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (e == cudaSuccess) {
    e = cudaFuncSetAttribute(k.fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             Instance::kSmemBytes);
  }
  if (e == cudaSuccess) {
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k.fn, Cfg::kThreads,
                                                      Instance::kSmemBytes);
  }
  if (e != cudaSuccess) return e;
  if (per_sm < 1) return cudaErrorInvalidConfiguration;
  *resident_ctas = sms * per_sm;
  return cudaSuccess;
}

template <class Variant, class Instance>
cudaError_t Launch(const Instance& k, const OutProjParams& p, int resident_ctas,
                   cudaStream_t stream, const char** what) {
  using Cfg = typename Instance::Cfg;
  EncodeTiledFn encode = nullptr;
  cudaError_t e = GetEncodeTiled(&encode);
  if (e != cudaSuccess) {
    *what = "cudaGetDriverEntryPointByVersion(cuTensorMapEncodeTiled)";
    return e;
  }
  CUtensorMap tmap_aq, tmap_asf, tmap_wq;
  thread_local MapMemo memo[3];  // per thread and instance: no lock (MapMemo)
  const uint64_t m = static_cast<uint64_t>(p.m);
  // Code tiles swizzled with the mode of their row width (fragment_math.h SwizzleOffset); the
  // activation-scale box is [kBM][16 B] (config.cuh kSfaBoxBytes), unswizzled.
  constexpr CUtensorMapSwizzle kCodeSwizzle =
      Cfg::kRowBytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B;
  e = EncodeU8MapMemo(&memo[0], encode, &tmap_aq, p.act_q, m, p.k / 2, Cfg::kBM, Cfg::kRowBytes,
                      kCodeSwizzle);
  if (e == cudaSuccess) {
    e = EncodeU8MapMemo(&memo[1], encode, &tmap_asf, p.act_sf, m, p.k / Cfg::kSfVec, Cfg::kBM,
                        Cfg::kSfaBoxBytes, CU_TENSOR_MAP_SWIZZLE_NONE);
  }
  if (e == cudaSuccess) {
    // One box per ring stage: the whole tile's kBN rows, or (two groups) one group's kGroupBN. The
    // map has n rows: the missing rows of a half tile at the end of N read as zeros.
    e = EncodeU8MapMemo(&memo[2], encode, &tmap_wq, p.o_weight_q, p.n, p.k / 2, Cfg::kGroupBN,
                        Cfg::kRowBytes, kCodeSwizzle);
  }
  if (e != cudaSuccess) {
    *what = "cuTensorMapEncodeTiled";
    return e;
  }
  if (resident_ctas < 1) {
    *what = "launch geometry (the kernel was not configured in this context)";
    return cudaErrorInvalidConfiguration;
  }
  int64_t tiles = ((p.m + Cfg::kBM - 1) / Cfg::kBM) * ((p.n + Cfg::kBN - 1) / Cfg::kBN);
  if (Variant::kGridCap > 0 && tiles > Variant::kGridCap) tiles = Variant::kGridCap;
  // cudaLaunchKernelEx returns this launch's own error; cudaGetLastError after <<<>>> would also
  // report (and clear) an unrelated earlier error of the caller's.
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(tiles < resident_ctas ? tiles : resident_ctas));
  config.blockDim = dim3(Cfg::kThreads);
  config.dynamicSmemBytes = Instance::kSmemBytes;
  config.stream = stream;
  e = cudaLaunchKernelEx(&config, k.fn, tmap_aq, tmap_asf, tmap_wq, p);
  if (e != cudaSuccess) *what = "kernel launch";
  return e;
}

// The registry's dispatch (WithKernel): what the product and most testonly sets launch.
template <class Variant>
struct RegistryDispatch {
  template <class F>
  static auto With(KernelBuild build, OutProjTile tile, F&& f) {
    return WithKernel<Variant>(build, tile, f);
  }
};

// A testonly set's dispatch with the default tile's config alone (the bench's branch halves, the
// branch's stress kernels): asked for another tile, it stops, saying why (a bug in the caller).
template <class Variant>
struct DefaultTileDispatch {
  template <class F>
  static auto With(KernelBuild build, OutProjTile tile, F&& f) {
    if (tile != OutProjTile::kAuto && tile != kOutProjTileDefault) {
      std::fprintf(stderr,
                   "h3::kernels::DefaultTileDispatch: tile code %d asked of a set built for the "
                   "default tile alone\n",
                   static_cast<int>(tile));
      std::abort();
    }
    return WithKernel<Variant, true>(build, tile, f);
  }
};

// Every instance Dispatch maps (build, tile) to, behind the KernelSet entry points; Variant's grid
// cap applies to the launch.
template <class Variant, class Dispatch = RegistryDispatch<Variant>>
KernelSet MakeKernelSet() {
  KernelSet set;
  set.configure = [](KernelBuild build, OutProjTile tile, int* resident_ctas,
                     std::string* refusal) {
    return Dispatch::With(
        build, tile, [&](const auto& k) { return Configure(k, resident_ctas, refusal); });
  };
  set.launch = [](const OutProjParams& p, KernelBuild build, OutProjTile tile, int resident_ctas,
                  cudaStream_t stream, const char** what) {
    return Dispatch::With(
        build, tile,
        [&](const auto& k) { return Launch<Variant>(k, p, resident_ctas, stream, what); });
  };
  set.smem_bytes = [](KernelBuild build, OutProjTile tile) {
    return Dispatch::With(build, tile, [](const auto& k) {
      return int{std::remove_reference_t<decltype(k)>::kSmemBytes};
    });
  };
  set.smooths = Variant::kSmooths;
  set.branch = Variant::kBranch;
  return set;
}

}  // namespace h3::kernels

#endif  // H3_KERNELS_LAUNCH_CUH_
