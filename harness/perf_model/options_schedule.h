#ifndef H3_HARNESS_PERF_MODEL_OPTIONS_SCHEDULE_H_
#define H3_HARNESS_PERF_MODEL_OPTIONS_SCHEDULE_H_

// Private to the model library: the schedule behind the options' keep-up term (options.h (e)):
// the quantizer's unit map (a replica of kernels/device/work_units.h), the quantizer warps'
// event simulation and the per-CTA replay of the GEMM against it. options.cc times the units.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "harness/perf_model/model.h"
#include "harness/perf_model/options.h"

namespace h3::perf_model::internal {

// The quantizer's unit map (kernels/device/work_units.h) for `rows`-row units; chunk_units: the
// branch's kChunkUnits, every unit one chunk, else the later groups one unit of all K.
struct UnitMap {
  int rows = 0;
  bool chunk_units = false;
  int64_t m = 0, groups = 0, front_groups = 0, front_m_tiles = 0;
  int64_t m_tiles = 0, n_tiles = 0, tiles = 0, grid = 0;  // grid: persistent CTAs, min(SMs, tiles)
  int chunks = 1;
  double chunk_elems = 0, k = 0;
  int64_t Count() const {
    return front_groups * chunks * (chunk_units ? 2 : 1) +
           (groups - front_groups) * (chunk_units ? chunks : 1);
  }
  // chunk_units: the front's units [0, F) quantize only, [F, 2F) down-project the same (group,
  // chunk) pairs in the same order, the rest do both (F = front_groups x chunks; a replica of
  // WorkUnits::Kind).
  kernels::UnitKind Kind(int64_t u) const {
    const int64_t f = front_groups * chunks;
    if (!chunk_units || u >= 2 * f) return kernels::UnitKind::kWhole;
    return u < f ? kernels::UnitKind::kQuantize : kernels::UnitKind::kDown;
  }
  // Unit u's group and chunks [begin, end): a replica of WorkUnits<rows, chunk_units>::Unit
  // (options_test checks them equal). The front (the first front_groups groups) chunk-major: chunk
  // 0 of each front group, then chunk 1, ...; chunk_units: the front once more (its down-only
  // units, Kind), then every later block of front_groups groups in turn (the last may be
  // partial), block b's chunk 0 of each of its groups, then its chunk 1, ..., before block b + 1;
  // else each later group one unit of all chunks, in order.
  void Decode(int64_t u, int64_t* group, int* begin, int* end) const {
    const int64_t front_units = front_groups * chunks;
    if (chunk_units) {
      if (u >= front_units) u -= front_units;  // the front's down-only units: its units again
      const int64_t block = u / front_units, v = u % front_units;
      const int64_t first = block * front_groups;
      const int64_t block_groups = std::min(front_groups, groups - first);
      *group = first + v % block_groups;
      *begin = static_cast<int>(v / block_groups);
      *end = *begin + 1;
    } else if (u < front_units) {
      *group = u % front_groups;
      *begin = static_cast<int>(u / front_groups);
      *end = *begin + 1;
    } else {
      *group = front_groups + (u - front_units);
      *begin = 0;
      *end = chunks;
    }
  }
  double Cols(int begin, int end) const {
    return std::min(k, end * chunk_elems) - std::min(k, begin * chunk_elems);
  }
};

// The unit map of the call on the model's grid (min(SMs, tiles)) for `rows`-row units.
UnitMap Units(const Hardware& hw, const Design& d, const Problem& p, const Prediction& pr, int rows,
              bool chunk_units);

// A unit's time on its warp, in two parts: from its claim to its publish, and from its publish
// to its arrival on its group's counter (0 in the plain op). The plain op's: its quantization,
// then nothing. The branch's (producers.cuh QuantizerLoop): for a front (group, chunk) (front0),
// the quantize-only unit's quantization (publish) and the down-only unit's down-projection,
// partials' stores, fence and atomic (finish), each on its own claim (Kind); every other unit
// its quantize + down-project loop, then the partials, fence, atomic.
struct UnitSplit {
  double publish = 0, finish = 0;
};
// A unit of chunks [begin, end); front0: one of the front's (Kind 1 or 2).
using UnitTime = std::function<UnitSplit(int begin, int end, bool front0)>;

// The quantizer warps over the call, from the kernel's start.
struct QuantSchedule {
  std::vector<double> published;  // [m_tile * chunks + c]: chunk c of the m-tile published
  std::vector<double> l_ready;    // [m_tile]: every group's l written (the branch's; else empty)
  double busy = 0;                // every unit's time (and every combine) over the warps
};

// The units claimed in increasing order from one counter (work_units.h), each by the warp that
// frees first; a unit publishes its chunks at the end of its first part (a chunk of an m-tile is
// published with the last of its groups' units). With the branch (combine >= 0, UnitMap::Kind),
// a front quantize-only unit has only that first part (no arrival); a down-only unit only the
// second (no publish); a later unit both. The second part (the down-projection where the unit's
// own, the partials) ends in the arrival on the group's counter: the group's last arrival (in time,
// as the atomic orders them; the group's every unit one chunk) sums the partials and writes l,
// `combine` more, and an m-tile's l is ready when its last group's is. A warp claims its next unit
// only then. Simulated event by event in time order (one event a unit: its arrival, the plain op's
// its end; one more a group's last arrival: its combine's end), so a unit learns whether it is its
// group's last at its arrival, every unit claimed before then having its arrival time.
QuantSchedule RunQuantizer(const UnitMap& u, int64_t warps, const UnitTime& seconds,
                           double combine);

// The GEMM against the publications, per CTA: CTA b runs tiles b, b + grid, ... (the static
// persistent schedule, m-tile-major), each tile's main loop reaching chunk c after the share of K
// before it and waiting there until (its m-tile, c) is published, and (l_ready not empty: the
// branch's) reaching its last k-step (the load warp's last A stage, loader.cuh) after the share of
// K before that and waiting there until its m-tile's l is ready; a wait delays the rest of that
// CTA, and only the latest CTA's finish counts: a late chunk or l on a CTA with a tile less to
// run, or early enough that the quantizer catches up, is hidden. A wait ends when the word is
// written [ASSUMED: the TMA round trip of the stage the load warp issues only then is not
// counted, for the chunks as for l]. Chunk 0 of the front m-tiles is the start-up's ((c), in t0).
// The need of the lateness: the first tile of the m-tile, unstalled.
ModelReplay ReplayGemm(const UnitMap& u, const Design& d, const Prediction& pr,
                       const std::vector<double>& published, const std::vector<double>& l_ready,
                       double t0);

}  // namespace h3::perf_model::internal

#endif  // H3_HARNESS_PERF_MODEL_OPTIONS_SCHEDULE_H_
