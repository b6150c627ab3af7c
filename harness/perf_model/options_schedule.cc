// The schedule behind issue 30's keep-up term (options_schedule.h): the unit map, the quantizer
// warps' event simulation, the per-CTA GEMM replay, and options.h's replicas built on them. A
// model, NOT a measurement.

#include "harness/perf_model/options_schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "harness/perf_model/model.h"
#include "harness/perf_model/model_internal.h"
#include "harness/perf_model/options.h"
#include "kernels/device/work_units.h"

namespace h3::perf_model {
namespace internal {

UnitMap Units(const Hardware& hw, const Design& d, const Problem& p, const Prediction& pr, int rows,
              bool chunk_units) {
  UnitMap u;
  u.rows = rows;
  u.chunk_units = chunk_units;
  u.m = p.m;
  u.k = static_cast<double>(p.k);
  u.m_tiles = pr.m_tiles;
  u.n_tiles = pr.n_tiles;
  u.tiles = pr.tiles;
  u.grid = std::min<int64_t>(static_cast<int64_t>(hw.sms.value), pr.tiles);
  u.chunk_elems = u.k;
  if (d.quant_order == QuantOrder::kFirstWaveKChunks) {
    u.chunk_elems = d.quant_chunk_elems != nullptr
                        ? std::min<double>(u.k, d.quant_chunk_elems(static_cast<int>(p.k)))
                        : d.bk;
  }
  u.chunks = static_cast<int>(std::ceil(u.k / u.chunk_elems));
  u.groups = CeilDivI(p.m, rows);
  u.front_m_tiles = kernels::FrontMTiles(static_cast<uint32_t>(u.grid),
                                         static_cast<uint32_t>(pr.n_tiles), pr.m_tiles);
  u.front_groups = std::min(u.groups, u.front_m_tiles * (kernels::kWorkTileM / rows));
  return u;
}

QuantSchedule RunQuantizer(const UnitMap& u, int64_t warps, const UnitTime& seconds,
                           double combine) {
  const bool branch = combine >= 0;
  QuantSchedule s;
  s.published.assign(static_cast<size_t>(u.m_tiles * u.chunks), -1e30);
  if (branch) s.l_ready.assign(static_cast<size_t>(u.m_tiles), -1e30);
  // A unit's time depends on its chunks and its kind alone: [(front0 * (chunks + 1) + begin) *
  // (chunks + 1) + end].
  const int stride = u.chunks + 1;
  std::vector<UnitSplit> times(static_cast<size_t>(2 * stride * stride));
  for (int f = 0; f < 2; ++f) {
    for (int b = 0; b < u.chunks; ++b) {
      for (int e = b + 1; e <= u.chunks; ++e) {
        times[static_cast<size_t>((f * stride + b) * stride + e)] = seconds(b, e, f == 1);
      }
    }
  }
  // A binary min-heap of events by (time, then FIFO), by hand: std::priority_queue's layers cost
  // the unoptimized test build most of its time.
  struct Event {
    double t;
    int64_t seq;   // FIFO among equal times
    int64_t unit;  // the unit that arrives (the plain op's: ends); < 0: a combine ends
  };
  std::vector<Event> heap;
  heap.reserve(static_cast<size_t>(warps));
  auto before = [](const Event& x, const Event& y) {
    return x.t < y.t || (x.t == y.t && x.seq < y.seq);
  };
  auto push = [&](const Event& e) {
    size_t i = heap.size();
    heap.push_back(e);
    while (i > 0 && before(e, heap[(i - 1) / 2])) {
      heap[i] = heap[(i - 1) / 2];
      i = (i - 1) / 2;
    }
    heap[i] = e;
  };
  auto pop = [&]() {
    const Event top = heap[0], last = heap.back();
    heap.pop_back();
    const size_t n = heap.size();
    size_t i = 0;
    while (n > 0) {
      size_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && before(heap[child + 1], heap[child])) ++child;
      if (!before(heap[child], last)) break;
      heap[i] = heap[child];
      i = child;
    }
    if (n > 0) heap[i] = last;
    return top;
  };
  int64_t seq = 0;
  for (int64_t w = 0; w < warps; ++w) push({0, seq++, -1});
  const int64_t groups_per_m_tile = kernels::kWorkTileM / u.rows;
  std::vector<int> arrived(branch ? static_cast<size_t>(u.groups) : 0, 0);
  double total = 0;
  int64_t next = 0;
  const int64_t count = u.Count();
  while (!heap.empty()) {
    const Event e = pop();
    int64_t group;
    int begin, end;
    if (branch && e.unit >= 0) {
      u.Decode(e.unit, &group, &begin, &end);
      if (++arrived[static_cast<size_t>(group)] == u.chunks) {  // the group's last: combine
        total += combine;
        double& l = s.l_ready[static_cast<size_t>(group / groups_per_m_tile)];
        l = std::max(l, e.t + combine);
        push({e.t + combine, seq++, -1});
        continue;
      }
    }
    if (next == count) continue;  // the warp is free at e.t: it claims the next unit, if any
    u.Decode(next, &group, &begin, &end);
    // The plain op's every unit, and the branch's later ones: whole (publish, then finish). The
    // branch's front: a quantize-only unit publishes and frees its warp (no arrival); its
    // down-only unit, claimed later, publishes nothing and arrives after its down-projection.
    using kernels::UnitKind;
    const UnitKind kind = branch ? u.Kind(next) : UnitKind::kWhole;
    const int front0 = kind != UnitKind::kWhole ? 1 : 0;
    const UnitSplit& t = times[static_cast<size_t>((front0 * stride + begin) * stride + end)];
    const double publish = kind == UnitKind::kDown ? 0 : t.publish;
    const double finish = kind == UnitKind::kQuantize ? 0 : t.finish;
    total += publish + finish;
    const int64_t m_tile = group / groups_per_m_tile;
    if (kind != UnitKind::kDown) {
      for (int c = begin; c < end; ++c) {
        double& p = s.published[static_cast<size_t>(m_tile * u.chunks + c)];
        p = std::max(p, e.t + publish);
      }
    }
    push({e.t + publish + finish, seq++, kind == UnitKind::kQuantize ? -1 : next});
    ++next;
  }
  s.busy = total / static_cast<double>(warps);
  return s;
}

ModelReplay ReplayGemm(const UnitMap& u, const Design& d, const Prediction& pr,
                       const std::vector<double>& published, const std::vector<double>& l_ready,
                       double t0) {
  ModelReplay r;
  const bool gate = !l_ready.empty();
  const double period = pr.tile_main + pr.epilogue_exposed_tile;
  std::vector<double> before(u.chunks + 1, 0);  // the main loop's share before chunk c
  for (int c = 0; c < u.chunks; ++c) before[c + 1] = before[c] + u.Cols(c, c + 1) / u.k;
  // The main loop's share before its last k-step (k_blocks of bk columns).
  const double last = static_cast<double>(pr.k_blocks - 1) * d.bk / u.k;
  auto ready = [&](int64_t m_tile, int c) {
    if (c == 0 && m_tile < u.front_m_tiles) return -1e30;
    return published[static_cast<size_t>(m_tile * u.chunks + c)];
  };
  double finish = -1e30, unstalled = -1e30;
  for (int64_t b = 0; b < u.grid; ++b) {
    double t = t0, t_free = t0;  // with the waits, and the same sums without them
    for (int64_t i = b; i < u.tiles; i += u.grid) {
      const int64_t m_tile = i / u.n_tiles;
      for (int c = 0; c < u.chunks; ++c) {
        t = std::max(t, ready(m_tile, c));
        if (gate && last >= before[c] && last < before[c + 1]) {
          t += (last - before[c]) * pr.tile_main;
          t = std::max(t, l_ready[static_cast<size_t>(m_tile)]);
          t += (before[c + 1] - last) * pr.tile_main;
        } else {
          t += (before[c + 1] - before[c]) * pr.tile_main;
        }
        t_free += (before[c + 1] - before[c]) * pr.tile_main;
      }
      t += pr.epilogue_exposed_tile;
      t_free += pr.epilogue_exposed_tile;
    }
    finish = std::max(finish, t);
    unstalled = std::max(unstalled, t_free);
  }
  r.stall = std::max(0.0, finish - unstalled);
  for (int64_t mt = 0; mt < u.m_tiles; ++mt) {
    const double wave = std::floor(static_cast<double>(mt * u.n_tiles) / u.grid);
    const double start = t0 + wave * period;
    for (int c = 0; c < u.chunks; ++c) {
      r.lateness = std::max(r.lateness, ready(mt, c) - (start + before[c] * pr.tile_main));
    }
    if (gate) {
      r.l_lateness =
          std::max(r.l_lateness, l_ready[static_cast<size_t>(mt)] - (start + last * pr.tile_main));
    }
  }
  return r;
}

}  // namespace internal

using internal::ReplayGemm;
using internal::UnitMap;
using internal::Units;

ModelReplay ModelGemmReplay(const Hardware& hw, const Design& d, const Problem& p,
                            const std::vector<double>& published,
                            const std::vector<double>& l_ready, double t0) {
  const Prediction pr = Predict(hw, d, p);
  const UnitMap u = Units(hw, d, p, pr, kernels::kBranchUnitRows, /*chunk_units=*/true);
  return ReplayGemm(u, d, pr, published, l_ready, t0);
}

std::vector<ModelUnit> ModelUnitOrder(const Hardware& hw, const Design& d, const Problem& p,
                                      int rows, bool chunk_units) {
  const UnitMap u = Units(hw, d, p, Predict(hw, d, p), rows, chunk_units);
  std::vector<ModelUnit> order(static_cast<size_t>(u.Count()));
  for (int64_t i = 0; i < u.Count(); ++i) {
    ModelUnit& w = order[static_cast<size_t>(i)];
    int64_t group;
    u.Decode(i, &group, &w.chunk_begin, &w.chunk_end);
    w.row0 = group * rows;
    w.row_end = std::min(u.m, w.row0 + rows);
    w.kind = u.Kind(i);
  }
  return order;
}

}  // namespace h3::perf_model
