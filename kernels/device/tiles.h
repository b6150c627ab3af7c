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

// What kAuto runs where neither the tuning cache nor the heuristic decides: the skewed 128x256,
// the built config the performance model (`./bazelw run //harness:perf_model`, its candidate
// lines) ranks first at M = 4096 on an RTX 5090, ~5% above the lockstep 128x256; the model's best
// design there is not built (NOTES.md, issue 29). Unmeasured on SM12x: the skew's gain rests on
// one MMA warp per sub-partition running at 0.70 of two (measured on the H200's emulation only),
// and the H200's emulation times the lockstep one 1.5-3.5% faster; `tune` measures and decides
// per device.
inline constexpr OutProjTile kOutProjTileDefault = OutProjTile::k128x256;

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
