#ifndef H3_PYTHON_NATIVE_CAPI_TUNING_H_
#define H3_PYTHON_NATIVE_CAPI_TUNING_H_

/* The tile choice behind tile="auto" (the C ABI's tile code 0), in plain C: the tuning cache and
 * the heuristic live in C++ (kernels/tuning/tune_cache.h) and Python asks them here
 * (python/minimax_h3_nvfp4/tuning.py binds these functions itself, with ctypes). Python keeps the
 * timing loop of `tune` and hands its winners to h3_tune_record.
 *
 * A cache is a file read at its first use (a file that is not a valid cache, of another library
 * version, or unreadable, counts as empty: a warning, never an error). H3TuneCache* NULL means
 * the process's cache: $MINIMAX_H3_NVFP4_TUNE_CACHE, else
 * ${XDG_CACHE_HOME:-$HOME/.cache}/minimax_h3_nvfp4/tune.json, the one OutProjTile::kAuto reads
 * too; h3_tune_reload points it elsewhere. Other caches come from h3_tune_cache_open.
 *
 * Errors as in capi.h: 0 on success, else an absl::StatusCode value, and the message in
 * h3_last_error() ("<function>: <argument> must be <expected>, got <given>").
 * Strings come back NUL-terminated in a caller's buffer (buf, buf_len). Where a function has a
 * `needed` argument, *needed is set to the bytes the string takes with its NUL; a smaller buffer
 * gets "" and the call fails with H3_OUT_OF_RANGE (call again with *needed bytes). Elsewhere the
 * string is truncated to buf_len, and H3_TUNE_TEXT_BYTES bytes always hold it whole.
 * Thread-safe. No function here touches a CUDA stream (callable while capturing); only
 * h3_tune_resolve asks the CUDA runtime anything (the device's properties, once per device). */

#include <stdint.h>

#include "python/native/capi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define H3_TUNE_TEXT_BYTES 512

/* sm90_emulation as in H3OutProjArgs: 0 faithful, 1 fast (the cache tells them apart on sm_90
 * only). `tuned`: 1 when the tile is the cache's winner, 0 when the heuristic chose it. */

typedef struct H3TuneCache H3TuneCache;

/* A cache of the file at `path` (NULL or "": the default path above, looked up at each read),
 * read at its first use; close it with h3_tune_cache_close. */
int32_t h3_tune_cache_open(const char* path, H3TuneCache** cache);
void h3_tune_cache_close(H3TuneCache* cache);

/* The file `cache` reads. */
int32_t h3_tune_cache_path(H3TuneCache* cache, char* buf, int64_t buf_len, int64_t* needed);

/* Points the process's cache at `path` (NULL or "": the default path) and forgets what it read:
 * its next use reads the file again, and OutProjTile::kAuto's answers follow. */
int32_t h3_tune_reload(const char* path);

/* The config tile="auto" runs on CUDA device `device` (>= 0) for an M x K by N x K problem:
 * *tile a registry code, never 0 (h3_tile_code), from the process's cache, else the heuristic;
 * `why` says which, as `python -m minimax_h3_nvfp4 info` prints it: "tuning cache winner", or
 * "heuristic: " and the rule h3_tune_heuristic names. */
int32_t h3_tune_resolve(int32_t device, int64_t m, int64_t n, int64_t k, int32_t sm90_emulation,
                        int32_t* tile, int32_t* tuned, char* why, int64_t why_len);

/* The same for a device given by its properties (no GPU needed), from `cache`. */
int32_t h3_tune_choose(H3TuneCache* cache, const H3DeviceProperties* device, int64_t m, int64_t n,
                       int64_t k, int32_t sm90_emulation, int32_t* tile, int32_t* tuned,
                       char* why, int64_t why_len);

/* The built-in heuristic alone (what "auto" runs without a cache entry): *tile and its rule in
 * words (kernels/tuning/tune_cache.h TuneHeuristicRule, e.g. "the default config"). */
int32_t h3_tune_heuristic(const H3DeviceProperties* device, int64_t m, int32_t* tile, char* rule,
                          int64_t rule_len);

/* The registry's default config's code (kernels/device/tiles.h kOutProjTileDefault): what the
 * heuristic falls back to; named there, not the registry's first. */
int32_t h3_tune_default_tile(void);

/* The keys the cache files a device and a shape under (the device's with this library's
 * version). */
int32_t h3_tune_device_key(const H3DeviceProperties* device, char* buf, int64_t buf_len);
int32_t h3_tune_shape_key(const H3DeviceProperties* device, int64_t n, int64_t k,
                          int32_t sm90_emulation, char* buf, int64_t buf_len);

/* Records the winners of one device and shape in `cache`'s file: count buckets, m[i] in
 * [1, 2^31 - 1] with the registry name tiles[i] (h3_tile_name) and its time median_ms[i]
 * (median_ms NULL, or an entry that is NaN or negative: none written). Other devices and shapes
 * of this library version stay, entries of other versions go; the file is replaced atomically
 * (a temporary file renamed over it), then read again by `cache`. */
int32_t h3_tune_record(H3TuneCache* cache, const H3DeviceProperties* device, int64_t n, int64_t k,
                       int32_t sm90_emulation, int64_t count, const int64_t* m,
                       const char* const* tiles, const double* median_ms);

/* The cache's entries of this library version, one row per (device key, shape key, M bucket)
 * in that order; a device entry without a tuned shape is one row with shape key "" and m 0.
 * h3_tune_cache_rows lists them (reading the file first if need be) and keeps that list for
 * h3_tune_cache_row, which reads row `row` of it (0 <= row < *count); `needed` covers the
 * largest of the three strings. */
int32_t h3_tune_cache_rows(H3TuneCache* cache, int64_t* count);
int32_t h3_tune_cache_row(H3TuneCache* cache, int64_t row, char* device_key, char* shape_key,
                          char* tile, int64_t buf_len, int64_t* m, int64_t* needed);

/* The warnings `cache` has not handed out yet (each is handed out once per reading of the file),
 * one a line (a newline inside one becomes a space), then forgotten; "" when there is none. */
int32_t h3_tune_cache_warnings(H3TuneCache* cache, char* buf, int64_t buf_len, int64_t* needed);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* H3_PYTHON_NATIVE_CAPI_TUNING_H_ */
