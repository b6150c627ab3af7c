// tile = kAuto resolved on the host per call: the tuning cache's winner, else the heuristic
// (kernels/tuning/tune_cache.h), for the current device.

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/out_proj.h"
#include "kernels/out_proj_internal.h"
#include "kernels/device/tiles.h"
#include "kernels/tuning/tune_cache.h"

namespace h3::internal {

// The config kAuto runs on the current device (kernels/tuning/tune_cache.h): the process's tuning cache
// (ProcessTuneCache, which Python's tile="auto" asks too) for this device, shape and M, else the
// heuristic. The cache file is read at the first kAuto call of the process, each device's
// properties are asked once; after that a call costs a lock and a few map lookups. Nothing here
// enqueues work or synchronizes, so a kAuto call - the first of the process included - may be
// captured. Each warning is printed once per process (once per reading of the file).
absl::StatusOr<OutProjTile> ResolvedOutProjTile(const OutProjArgs& a, const OpDims& dims) {
  if (a.tile != OutProjTile::kAuto) return a.tile;
  struct State {
    std::mutex mu;
    std::map<int, TuneDevice> devices;
    // Choose's answers while the cache's generation stays `generation`: each (device, m, n, k,
    // emulation) has one answer then; kept here instead of formatting the cache's keys again on
    // every call. Bounded.
    std::map<std::tuple<int, int64_t, int64_t, int64_t, int>, OutProjTile> chosen;
    int64_t generation = -1;
  };
  static State* state = new State;
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return OutProjCudaError(e, "cudaGetDevice");
  TuneCacheFile& cache = ProcessTuneCache();
  std::lock_guard<std::mutex> lock(state->mu);
  if (const int64_t g = cache.generation(); g != state->generation) {
    state->chosen.clear();  // the file was read again (written by `tune`): answers may differ
    state->generation = g;
  }
  const auto memo_key =
      std::make_tuple(dev, dims.m, dims.n, dims.k, static_cast<int>(a.sm90_emulation));
  if (auto hit = state->chosen.find(memo_key); hit != state->chosen.end()) return hit->second;
  auto it = state->devices.find(dev);
  if (it == state->devices.end()) {
    cudaDeviceProp p;
    int driver = 0;
    e = cudaGetDeviceProperties(&p, dev);
    if (e == cudaSuccess) e = cudaDriverGetVersion(&driver);
    if (e != cudaSuccess) return OutProjCudaError(e, "reading the device properties (tile auto)");
    TuneDevice d;
    d.name.assign(p.name, strnlen(p.name, sizeof(p.name)));
    d.major = p.major;
    d.minor = p.minor;
    d.sm_count = p.multiProcessorCount;
    d.driver_version = driver;
    it = state->devices.emplace(dev, std::move(d)).first;
  }
  std::vector<std::string> warnings;  // the ones not said before in this process
  const TuneCache::Choice choice = cache.Choose(
      it->second, dims.m, dims.n, dims.k,
      TuneVariant(it->second.major, a.sm90_emulation == Sm90Emulation::kFast), &warnings);
  for (const std::string& w : warnings) {
    std::fprintf(stderr, "minimax_h3_nvfp4: warning: %s\n", w.c_str());
  }
  if (state->chosen.size() >= 4096) state->chosen.clear();
  state->chosen.emplace(memo_key, choice.tile);
  return choice.tile;
}

}  // namespace h3::internal
