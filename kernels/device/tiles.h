#ifndef H3_KERNELS_TILES_H_
#define H3_KERNELS_TILES_H_

// The registry of the SM120 kernel's tile configs: one line per config. Everything that names a
// config derives from it: the public enum OutProjTile (out_proj.h), the host API's validation,
// the launcher's dispatch (launch.cuh), the C ABI's codes and Python's accepted names
// (h3_tile_name), the GPU tests' and the bench's lists. Plain C++: g++ and nvcc both read it.
//
// Adding a config: define its OutProjConfig in config.cuh (its static_asserts check the shared-
// memory budget and the pipeline), add one H3_OUT_PROJ_TILE line below with a fresh code (codes
// are ABI: never reuse one; the lines' order is not the codes'), and run the GPU tests, which
// cover every registered config. kOutProjTileDefault below names the default. kAuto (C++, the
// C ABI's code 0, Python's and the tools' "auto") is one choice everywhere: the tuning cache's
// winner for the device, shape and M, else a small-M heuristic, else the default
// (kernels/tuning/tune_cache.h, which Python asks through python/native/capi_tuning.h).
//
//   X(enumerator, code, name, config type in h3::kernels, what it is)
//
// The registry's order is the order names are listed in (errors, `info`, the GPU tests); the
// default is named below (kOutProjTileDefault), not by its place.
#define H3_OUT_PROJ_TILES(X)                                                                    \
  X(k128x256Lockstep, 3, "128x256_lockstep", Sm120Config128x256Lockstep,                        \
    "128 x 256, BK 128, 3 stages, both consumer warpgroups in step")                            \
  X(k128x256, 1, "128x256", Sm120Config128x256Skewed,                                           \
    "128 x 256, BK 128, skewed consumer groups: each warpgroup owns an N half and runs a few "  \
    "stages behind the other, so one half's epilogue runs under the other's MMAs")              \
  X(k128x128, 2, "128x128", Sm120Config128x128Lockstep,                                         \
    "128 x 128, BK 128, 4 stages, 64 x 32 warp tiles")                                          \
  X(k128x128Staged, 4, "128x128_staged", Sm120Config128x128Staged,                              \
    "128 x 128, BK 128, 3 stages, staged epilogue: consumers leave gate * o in shared memory "  \
    "and the quantizer warps add the residual and store out under the next tile's MMAs")

#include <cstdint>
#include <string>

namespace h3 {

// The tile config of one call: kAuto (code 0: chosen per call, see above) or a registry entry.
enum class OutProjTile : int32_t {
  kAuto = 0,
#define H3_TILE_ENUMERATOR(id, code, name, cfg, what) id = code,
  H3_OUT_PROJ_TILES(H3_TILE_ENUMERATOR)
#undef H3_TILE_ENUMERATOR
};

struct OutProjTileInfo {
  OutProjTile tile;
  const char* name;  // what Python's tile= and the tools' --tile= accept
  const char* what;
};

// Every registered config, in registry order (kAuto is not one).
inline constexpr OutProjTileInfo kOutProjTiles[] = {
#define H3_TILE_INFO(id, code, name, cfg, what) {OutProjTile::id, name, what},
    H3_OUT_PROJ_TILES(H3_TILE_INFO)
#undef H3_TILE_INFO
};
inline constexpr int kOutProjTileCount = sizeof(kOutProjTiles) / sizeof(kOutProjTiles[0]);

// What kAuto runs where the tuning cache does not decide: the 128x128 with the staged epilogue,
// the built config the performance model (`./bazelw run //harness:perf_model`, its "built
// configs" lines) ranks first at every M on an RTX 5090 and an RTX PRO 6000 (RTX 5090, M = 4096:
// 1273 TFLOP/s against the skewed 128x256's 1239, within 1% of the model's best design). A model
// only, unmeasured on SM12x, and its Monte Carlo low end is below the skewed config's (more
// exposed to L2 queueing); on the H200's emulation, whose MMA runs on the CUDA cores, the staged
// and skewed configs swap places from run to run (~2-3%) and the lockstep and plain 128x128 ran
// faster (NOTES.md, issue 29). `tune` measures and decides per device.
inline constexpr OutProjTile kOutProjTileDefault = OutProjTile::k128x128Staged;

// The registry entry of `tile` (kAuto: the default's, whatever a call resolves it to), or nullptr
// for a code not registered.
constexpr const OutProjTileInfo* FindOutProjTile(OutProjTile tile) {
  if (tile == OutProjTile::kAuto) tile = kOutProjTileDefault;
  for (const OutProjTileInfo& t : kOutProjTiles) {
    if (t.tile == tile) return &t;
  }
  return nullptr;
}
constexpr bool IsRegisteredOutProjTile(OutProjTile tile) {
  for (const OutProjTileInfo& t : kOutProjTiles) {
    if (t.tile == tile) return true;
  }
  return false;
}
static_assert(IsRegisteredOutProjTile(kOutProjTileDefault), "the default is a registry config");

// The codes a call's tile may take, as the errors for any other list them:
// "0 (auto), 3 (128x256_lockstep), 1 (128x256), 2 (128x128), 4 (128x128_staged)".
inline std::string OutProjTileCodes() {
  std::string codes = "0 (auto)";
  for (const OutProjTileInfo& t : kOutProjTiles) {
    codes += ", " + std::to_string(static_cast<int>(t.tile)) + " (" + t.name + ")";
  }
  return codes;
}

}  // namespace h3

#endif  // H3_KERNELS_TILES_H_
