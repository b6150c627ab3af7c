#ifndef H3_KERNELS_SCHEDULER_CUH_
#define H3_KERNELS_SCHEDULER_CUH_

// Persistent tile order and the quantizer's work units.

#include <cstdint>

namespace h3::kernels {

template <class Cfg>
struct TileScheduler {
  int64_t m;
  int num_m_tiles, num_n_tiles;
  int64_t num_tiles;

  __device__ __forceinline__ TileScheduler(int64_t m_rows, int n) : m(m_rows) {
    num_m_tiles = static_cast<int>((m_rows + Cfg::kBM - 1) / Cfg::kBM);
    num_n_tiles = n / Cfg::kBN;
    num_tiles = static_cast<int64_t>(num_m_tiles) * num_n_tiles;
  }
  // m-tile-major order: tile t covers m-tile t / num_n_tiles. The CTAs (tile = blockIdx.x +
  // i * gridDim.x) then sweep the activation rows in the order the quantizer finishes them, and
  // ~gridDim.x / num_n_tiles m-tiles are in flight at once, each activation tile read by up to
  // num_n_tiles CTAs while it is hot in L2. The whole weight (MiniMax: 19 MiB codes + 2.3 MiB
  // scales) stays L2-resident (H200 50 MiB, RTX 5090 96 MiB), so no further grouping is needed.
  __device__ __forceinline__ void Tile(int64_t t, int& m_tile, int& n_tile) const {
    m_tile = static_cast<int>(t / num_n_tiles);
    n_tile = static_cast<int>(t % num_n_tiles);
  }
};

// Quantizer work units: unit u = rows [u * kQuantRows, min((u + 1) * kQuantRows, M)), claimed
// in increasing order through one global atomic counter by the quantizer warps of any CTA. A
// claimed unit is always finished by its claimer, which never waits on anything, so every
// m-tile becomes ready whatever subset of the grid is resident (no deadlock by construction).
template <class Cfg>
struct QuantUnits {
  __device__ __forceinline__ static int64_t Count(int64_t m) {
    return (m + Cfg::kQuantRows - 1) / Cfg::kQuantRows;
  }
  // Units of m-tile mt: all kUnitsPerMTile except possibly in the last, partial m-tile.
  __device__ __forceinline__ static uint32_t UnitsInMTile(int64_t m, int mt) {
    const int64_t rows = m - static_cast<int64_t>(mt) * Cfg::kBM;
    const int64_t r = rows < Cfg::kBM ? rows : Cfg::kBM;
    return static_cast<uint32_t>((r + Cfg::kQuantRows - 1) / Cfg::kQuantRows);
  }
};

}  // namespace h3::kernels

#endif  // H3_KERNELS_SCHEDULER_CUH_
