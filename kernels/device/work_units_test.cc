// Every unit map covers each (row, k-chunk) exactly once, front m-tiles chunk-major, and each
// (m-tile, chunk) flag reaches exactly GroupsInMTile: the ready-flag protocol's counting is right
// for every shape and grid, including partial m-tiles and fronts larger than M. With kChunkUnits
// each (row, k-chunk) is also down-projected exactly once (the branch's counters).

#include "kernels/device/work_units.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace h3::kernels {
namespace {

TEST(WorkUnits, Chunks) {
  struct Row {
    int k, chunks, elems;
  };
  // k, chunks, chunk width: at most kMaxChunks chunks of whole 256-element quanta.
  const Row kRows[] = {{256, 1, 256},  {512, 2, 256},   {2048, 8, 256},  {2304, 5, 512},
                       {5120, 7, 768}, {7168, 7, 1024}, {8192, 8, 1024}, {1 << 30, 8, 1 << 27}};
  for (const Row& r : kRows) {
    EXPECT_EQ(NumChunks(r.k), r.chunks) << "k " << r.k;
    EXPECT_EQ(ChunkElems(r.k), r.elems) << "k " << r.k;
    EXPECT_LE(NumChunks(r.k), kMaxChunks);
    EXPECT_GT(NumChunks(r.k) * ChunkElems(r.k), r.k - ChunkElems(r.k)) << "no empty chunk";
    EXPECT_GE(NumChunks(r.k) * ChunkElems(r.k), r.k) << "chunks cover k";
    EXPECT_EQ((r.k - 1) / ChunkElems(r.k), r.chunks - 1) << "the last element in the last chunk";
  }
}

// One unit map per case: every (row, chunk) once, units inside an m-tile, the front chunk-major,
// each flag complete; kChunkUnits: every unit one chunk, the front twice (quantize-only, then
// down-only, each chunk-major), each later block of front-many m-tiles in turn and chunk-major.
template <int kRows, bool kChunkUnits>
void CheckUnitMaps() {
  struct Case {
    int64_t m;
    int k;
    int64_t grid, n_tiles;
  };
  // m around the row group and the 128-row m-tile; fronts of 0 (grid < 1 is impossible, so
  // the smallest front is one m-tile), partial, all of M and beyond it.
  const Case kCases[] = {{1, 256, 1, 1},        {3, 512, 8, 42},       {127, 7168, 170, 21},
                         {128, 2048, 170, 21},  {129, 5120, 170, 21},  {1000, 2304, 132, 42},
                         {4096, 7168, 170, 21}, {4099, 7168, 188, 21}, {20000, 1024, 132, 1},
                         {513, 768, 3, 1}};
  for (const Case& c : kCases) {
    SCOPED_TRACE(testing::Message() << "rows " << kRows << " chunk units " << kChunkUnits << " m "
                                    << c.m << " k " << c.k);
    const int64_t m_tiles = (c.m + kWorkTileM - 1) / kWorkTileM;
    const int64_t front = FrontMTiles(c.grid, c.n_tiles, m_tiles);
    const WorkUnits<kRows, kChunkUnits> units(c.m, c.k, front);
    const int chunks = NumChunks(c.k);
    std::vector<int> seen(static_cast<size_t>(c.m * chunks), 0);
    std::vector<int> down(static_cast<size_t>(c.m * chunks), 0);  // kChunkUnits: down-projected
    UnitKind last_kind = UnitKind::kQuantize;
    std::vector<uint32_t> flags(static_cast<size_t>(m_tiles * chunks), 0);
    int64_t last_front_chunk = 0;
    int64_t last_block = 0;
    int last_block_chunk = 0;
    for (int64_t u = 0; u < units.count; ++u) {
      const WorkUnit w = units.Unit(static_cast<uint32_t>(u));
      ASSERT_LT(w.row0, w.row_end);
      ASSERT_LE(w.row_end, c.m);
      ASSERT_EQ(w.row0 % kRows, 0);
      ASSERT_LE(w.row_end - w.row0, kRows);
      ASSERT_EQ(w.row0 / kWorkTileM, (w.row_end - 1) / kWorkTileM) << "unit inside one m-tile";
      ASSERT_LT(w.chunk_begin, w.chunk_end);
      ASSERT_LE(w.chunk_end, chunks);
      const bool in_front = w.row0 / kWorkTileM < front;
      EXPECT_EQ(w.chunk_end - w.chunk_begin, in_front || kChunkUnits ? 1 : chunks) << "u " << u;
      const UnitKind kind = units.Kind(static_cast<uint32_t>(u));
      if (!kChunkUnits) {
        ASSERT_EQ(kind, UnitKind::kWhole);
      } else {
        // Every quantize-only unit (the front's), then every down-only unit (the front's again),
        // then the later blocks' whole units.
        ASSERT_EQ(kind != UnitKind::kWhole, in_front) << "u " << u;
        auto turn = [](UnitKind k) {
          return k == UnitKind::kQuantize ? 0 : k == UnitKind::kDown ? 1 : 2;
        };
        ASSERT_GE(turn(kind), turn(last_kind)) << "u " << u << ": kinds in turn";
        if (kind != last_kind) last_front_chunk = last_block_chunk = 0;  // chunk-major again
        last_kind = kind;
      }
      if (kind != UnitKind::kQuantize) {
        for (int64_t r = w.row0; r < w.row_end; ++r) ++down[r * chunks + w.chunk_begin];
      }
      if (kind == UnitKind::kDown) continue;  // publishes nothing
      if (in_front) {
        EXPECT_GE(w.chunk_begin, last_front_chunk) << "front units are chunk-major";
        last_front_chunk = w.chunk_begin;
      }
      if (kChunkUnits) {
        const int64_t block = w.row0 / kWorkTileM / front;
        ASSERT_GE(block, last_block) << "u " << u << ": blocks in turn";
        if (block == last_block) {
          EXPECT_GE(w.chunk_begin, last_block_chunk) << "u " << u << ": chunk-major in a block";
        }
        last_block = block;
        last_block_chunk = w.chunk_begin;
      }
      for (int64_t r = w.row0; r < w.row_end; ++r)
        for (int ch = w.chunk_begin; ch < w.chunk_end; ++ch) ++seen[r * chunks + ch];
      for (int ch = w.chunk_begin; ch < w.chunk_end; ++ch)
        ++flags[(w.row0 / kWorkTileM) * chunks + ch];
    }
    for (size_t i = 0; i < seen.size(); ++i) {
      ASSERT_EQ(seen[i], 1) << "row " << i / chunks << " chunk " << i % chunks;
      if (kChunkUnits) {
        ASSERT_EQ(down[i], 1) << "down: row " << i / chunks << " chunk " << i % chunks;
      }
    }
    if (kChunkUnits) {
      EXPECT_EQ(units.count, 2 * units.FrontUnits() + (units.groups - units.front_groups) * chunks);
    }
    for (int64_t mt = 0; mt < m_tiles; ++mt) {
      for (int ch = 0; ch < chunks; ++ch) {
        ASSERT_EQ(flags[mt * chunks + ch], units.GroupsInMTile(mt))
            << "flag (" << mt << ", " << ch << ")";
      }
    }
  }
}

TEST(WorkUnits, EveryRowChunkOnceAndFlagsComplete) { CheckUnitMaps<4, false>(); }

// The low-rank branch's instances: 8-row groups, one chunk a unit.
TEST(WorkUnits, BranchUnitsEveryRowChunkOnceAndFlagsComplete) {
  CheckUnitMaps<kBranchUnitRows, true>();
}

TEST(WorkUnits, FrontMTiles) {
  EXPECT_EQ(FrontMTiles(170, 21, 1000), 9);  // RTX 5090, N = 5376 in 256-wide tiles
  EXPECT_EQ(FrontMTiles(132, 42, 1000), 4);  // H200, 128-wide tiles
  EXPECT_EQ(FrontMTiles(170, 21, 3), 3);     // never beyond M
  EXPECT_EQ(FrontMTiles(1, 1, 5), 1);
}

}  // namespace
}  // namespace h3::kernels
