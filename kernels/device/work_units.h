#ifndef H3_KERNELS_WORK_UNITS_H_
#define H3_KERNELS_WORK_UNITS_H_

// The quantizer's work units and the k-chunks of the ready flags (ready_flags.h), host and
// device: a CPU test (work_units_test.cc) enumerates every unit of many shapes.
//
// K is cut into NumChunks(k) chunks of whole kChunkQuantum-element pieces (a chunk boundary is
// always a stage boundary of every config, config.cuh kKMultiple). A row group is kRows rows of
// attn_out. The m-tiles the first wave of CTAs computes ("front": the first FrontMTiles m-tiles)
// are quantized chunk by chunk: chunk 0 of every front row group, then chunk 1, ..., so the first
// tiles start after 1/NumChunks of their rows are quantized instead of all of them (perf_model:
// the v2 ladder's k-chunk quantization order). Every later row group is one unit of all chunks,
// or, with kChunkUnits (the low-rank branch's instances, lowrank.cuh: a unit's down-projection
// then spans one chunk of K wherever it is), every block of front-many m-tiles is quantized as
// the front is, chunk by chunk: each later wave of tiles also starts on its rows' first chunk.
// Units are claimed in increasing order (ready_flags.h), and a unit's chunks are published to the
// flags (m-tile, chunk) each counts finished row groups of.
// With kChunkUnits the front's (group, chunk) pairs come twice: first as quantize-only units
// (published as soon as they are quantized: the first tiles wait for them), then, after all of
// them, as down-only units (the branch's down-projection of the same rows, which the tiles need
// only at their last stage); every later unit does both (Kind).

#include <cstdint>

#include "core/host_device.h"

namespace h3::kernels {

inline constexpr int kMaxChunks = 8;        // flag words per m-tile
inline constexpr int kChunkQuantum = 256;   // k-elements: kOutProjKMultiple
inline constexpr int64_t kWorkTileM = 128;  // rows of an m-tile (kOutProjTileM)
// Rows of a unit of the low-rank branch's instances (kernels/device/lowrank.cuh: the n8 of the
// down-projection's MMAs; the plain instances' units are their config's kQuantRows).
inline constexpr int kBranchUnitRows = 8;
static_assert(kBranchUnitRows >= 8, "kChunkUnits' unit count stays below 2^32 (Unit, Kind)");

// Chunks of K (k a positive multiple of kChunkQuantum): as many as kMaxChunks allows, of equal
// whole-quantum widths (the last may be shorter).
H3_HD int ChunkQuanta(int k) {
  const int quanta = k / kChunkQuantum;
  return (quanta + kMaxChunks - 1) / kMaxChunks;
}
H3_HD int NumChunks(int k) {
  const int quanta = k / kChunkQuantum, per = ChunkQuanta(k);
  return (quanta + per - 1) / per;
}
H3_HD int ChunkElems(int k) { return ChunkQuanta(k) * kChunkQuantum; }

// What a unit does (kChunkUnits; the plain instances' units are all kWhole): quantize and, with
// the branch, down-project (kWhole); only quantize (kQuantize); only down-project (kDown).
enum class UnitKind : uint8_t { kWhole, kQuantize, kDown };

struct WorkUnit {
  int64_t row0, row_end;       // rows [row0, row_end)
  int chunk_begin, chunk_end;  // chunks [chunk_begin, chunk_end)
};

// The unit map of one call: m rows, k columns, kRows rows per group, the first front_m_tiles
// m-tiles quantized chunk-major; with kChunkUnits every block of front_m_tiles m-tiles is.
template <int kRows, bool kChunkUnits = false>
struct WorkUnits {
  static_assert(kWorkTileM % kRows == 0, "row groups never straddle an m-tile");
  static constexpr int64_t kGroupsPerMTile = kWorkTileM / kRows;

  int64_t m;
  int k, chunks;
  int64_t groups;        // row groups of the call
  int64_t front_groups;  // row groups of the front m-tiles
  int64_t count;         // units

  H3_HD WorkUnits(int64_t m_rows, int k_cols, int64_t front_m_tiles) : m(m_rows), k(k_cols) {
    chunks = NumChunks(k);
    groups = (m + kRows - 1) / kRows;
    const int64_t fg = front_m_tiles * kGroupsPerMTile;
    front_groups = fg < groups ? fg : groups;
    count =
        FrontUnits() * (kChunkUnits ? 2 : 1) + (groups - front_groups) * (kChunkUnits ? chunks : 1);
  }

  // kChunkUnits: the front's (group, chunk) pairs, each twice (Kind).
  H3_HD int64_t FrontUnits() const { return front_groups * chunks; }

  H3_HD UnitKind Kind(uint32_t u) const {
    if (!kChunkUnits) return UnitKind::kWhole;
    const uint32_t f = static_cast<uint32_t>(FrontUnits());
    return u < f ? UnitKind::kQuantize : u < 2 * f ? UnitKind::kDown : UnitKind::kWhole;
  }

  // 32-bit division only (a 64-bit one is a subroutine call on the GPU, scheduler.cuh): u and the
  // front's units stay below 2^32 (groups < 2^29, front groups <= grid * 32, chunks <= 8;
  // kChunkUnits: 8-row groups, so groups * chunks <= 2^31, plus the front's again).
  H3_HD WorkUnit Unit(uint32_t u) const {
    WorkUnit w;
    int64_t group;
    const uint32_t fg = static_cast<uint32_t>(front_groups);
    if constexpr (kChunkUnits) {
      // Blocks of front_groups groups (the front is block 0; the last may be partial), each
      // chunk-major; the front's down-only units (Kind) are the front's units again.
      const uint32_t per_block = fg * static_cast<uint32_t>(chunks);
      if (u >= per_block) u -= per_block;
      const uint32_t block = u / per_block, v = u - block * per_block;
      const int64_t first = static_cast<int64_t>(block) * front_groups;
      const uint32_t bg =
          static_cast<uint32_t>(groups - first < front_groups ? groups - first : front_groups);
      group = first + v % bg;
      w.chunk_begin = static_cast<int>(v / bg);
      w.chunk_end = w.chunk_begin + 1;
    } else if (u < fg * static_cast<uint32_t>(chunks)) {
      group = u % fg;
      w.chunk_begin = static_cast<int>(u / fg);
      w.chunk_end = w.chunk_begin + 1;
    } else {
      group = front_groups + (u - fg * static_cast<uint32_t>(chunks));
      w.chunk_begin = 0;
      w.chunk_end = chunks;
    }
    w.row0 = group * kRows;
    w.row_end = w.row0 + kRows < m ? w.row0 + kRows : m;
    return w;
  }

  // Row groups of m-tile mt (all kGroupsPerMTile but in a last, partial m-tile): the count at
  // which each of its chunk flags says "ready".
  H3_HD uint32_t GroupsInMTile(int64_t mt) const {
    const int64_t rows = m - mt * kWorkTileM;
    const int64_t r = rows < kWorkTileM ? rows : kWorkTileM;
    return static_cast<uint32_t>((r + kRows - 1) / kRows);
  }
};

// The m-tiles the first wave of `grid` CTAs starts on when tiles are m-tile-major with n_tiles
// n-tiles per m-tile (scheduler.cuh), at most every m-tile.
H3_HD int64_t FrontMTiles(uint32_t grid, uint32_t n_tiles, int64_t m_tiles) {
  const int64_t f = (grid + n_tiles - 1) / n_tiles;
  return f < m_tiles ? f : m_tiles;
}

}  // namespace h3::kernels

#endif  // H3_KERNELS_WORK_UNITS_H_
