#ifndef H3_KERNELS_SYNC_WORDS_H_
#define H3_KERNELS_SYNC_WORDS_H_

// Size of the per-device synchronization buffer (host view of config.cuh's kSync* constants,
// without including CUDA device headers in host code).

#include <cstdint>

namespace h3::kernels {

inline constexpr int64_t kSyncMaxMTiles = int64_t{1} << 18;
inline constexpr int64_t kSyncWordCount = 32 + kSyncMaxMTiles;

}  // namespace h3::kernels

#endif  // H3_KERNELS_SYNC_WORDS_H_
