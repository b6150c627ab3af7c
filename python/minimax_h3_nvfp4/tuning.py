"""The tile choice behind `tile="auto"`, asked of the library (python/native/capi_tuning.h).

    python -m minimax_h3_nvfp4 tune     # times every registered config, records the winners
    minimax_h3_nvfp4.tuning.cache_path()  # $MINIMAX_H3_NVFP4_TUNE_CACHE, else
                                        # ${XDG_CACHE_HOME:-~/.cache}/minimax_h3_nvfp4/tune.json

The heuristic and the tuning cache (its reader, its writer, its keys) are C++
(kernels/tuning/tune_cache.h), the same code the C++ host API's OutProjTile::kAuto runs; this module
binds their C functions with ctypes and keeps what Python must do: a per-process memo, so that
a `tile="auto"` call costs one dict lookup after the first call of a shape, the warnings as
RuntimeWarnings, and dicts for `info` and `tune` (autotune.py times the configs).

The cache is keyed by device (name, compute capability, SM count, driver version) and library
version, then by shape (N, K and, on sm_90, the MMA emulation), and holds the winning config
per M bucket; the file is read once per process, at the first `tile="auto"` call on a GPU. A
cache that cannot be read, or was written by another library version, is ignored with a
warning, and so are devices it does not know: the heuristic decides then (a small-M rule per
target, none today, else the registry's default; `heuristic_with_reason` gives the rule's
words).
Nothing here touches the GPU's streams: a call resolved this way can be captured into a CUDA
graph, the first call of the process included.
"""

import ctypes
import math
import os
import warnings

from . import _native

ENV_PATH = "MINIMAX_H3_NVFP4_TUNE_CACHE"  # the variable that names the file (capi_tuning.h)
DEFAULT_M_BUCKETS = (1, 16, 128, 512, 1024, 4096, 16384)  # what `tune` times by default
_EMULATIONS = {"faithful": 0, "fast": 1}  # H3OutProjArgs.sm90_emulation's codes
_TEXT_BYTES = 512  # H3_TUNE_TEXT_BYTES: holds every string of a function without `needed`

# Counts changes of what resolve() may answer (a cache written, or reset): callers that keep a
# resolved tile (the eager fast path's plans) resolve again when it moved.
generation = 0
_memo = {}  # (device index, m, n, k, sm90_emulation) -> (generation asked in, tile code)
_lib = None


def _bound():
    """The library with this module's functions declared (once)."""
    global _lib
    if _lib is None:
        lib = _native.lib()
        i32, i64, vp, cp = ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p, ctypes.c_char_p
        ptr, props = ctypes.POINTER, ctypes.POINTER(_native.H3DeviceProperties)
        for name, argtypes in (
                ("h3_tune_cache_open", [cp, ptr(vp)]),
                ("h3_tune_cache_path", [vp, cp, i64, ptr(i64)]),
                ("h3_tune_reload", [cp]),
                ("h3_tune_resolve", [i32, i64, i64, i64, i32, ptr(i32), ptr(i32), cp, i64]),
                ("h3_tune_choose", [vp, props, i64, i64, i64, i32, ptr(i32), ptr(i32), cp, i64]),
                ("h3_tune_heuristic", [props, i64, ptr(i32), cp, i64]),
                ("h3_tune_device_key", [props, cp, i64]),
                ("h3_tune_shape_key", [props, i64, i64, i32, cp, i64]),
                ("h3_tune_record", [vp, props, i64, i64, i32, i64, ptr(i64), ptr(cp),
                                    ptr(ctypes.c_double)]),
                ("h3_tune_cache_rows", [vp, ptr(i64)]),
                ("h3_tune_cache_row", [vp, i64, cp, cp, cp, i64, ptr(i64), ptr(i64)]),
                ("h3_tune_cache_warnings", [vp, cp, i64, ptr(i64)])):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = i32, argtypes
        lib.h3_tune_cache_close.restype, lib.h3_tune_cache_close.argtypes = None, [vp]
        lib.h3_tune_default_tile.restype, lib.h3_tune_default_tile.argtypes = i32, []
        _lib = lib
    return _lib


def _props(props):
    """H3DeviceProperties of a dict as _native.device_properties returns it (driver_version
    may be left out where only the heuristic is asked)."""
    p = _native.H3DeviceProperties()
    p.name = props["name"].encode("utf-8")[:255]
    p.major, p.minor, p.sm_count = props["major"], props["minor"], props["sm_count"]
    p.driver_version = props.get("driver_version", 0)
    return ctypes.byref(p)


def _emulation(sm90_emulation):
    code = _EMULATIONS.get(sm90_emulation)
    if code is None:
        raise ValueError("sm90_emulation must be one of %s, got %r"
                         % (", ".join(_EMULATIONS), sm90_emulation))
    return code


def _text(fn, *args):
    """The string a function without `needed` writes (H3_TUNE_TEXT_BYTES always hold it)."""
    buf = ctypes.create_string_buffer(_TEXT_BYTES)
    _native.check(fn(*args, buf, _TEXT_BYTES))
    return buf.value.decode("utf-8", "replace")


def _sized(fn, *args, count=1, after=()):
    """The `count` strings a function with `needed` writes (its arguments: args, the buffers,
    their size, `after`, needed): again with a larger buffer when the first is too small (the
    function says how large)."""
    size = 1024
    while True:
        bufs = [ctypes.create_string_buffer(size) for _ in range(count)]
        needed = ctypes.c_int64(0)
        code = fn(*args, *bufs, size, *after, ctypes.byref(needed))
        if code == _native.OUT_OF_RANGE and needed.value > size:
            size = needed.value
            continue
        _native.check(code)
        return [b.value.decode("utf-8", "replace") for b in bufs]


_code_names = None


def _names():
    """{tile code: registry name} (once)."""
    global _code_names
    if _code_names is None:
        _code_names = {code: name for name, code in _native.tiles().items()}
    return _code_names


def cache_path():
    """The file tile="auto" reads: $MINIMAX_H3_NVFP4_TUNE_CACHE, else $XDG_CACHE_HOME (or
    ~/.cache)/minimax_h3_nvfp4/tune.json, unless reset() named another."""
    return _cache.path


def device_key(props):
    """The cache's key of a device (props as _native.device_properties returns them)."""
    return _text(_bound().h3_tune_device_key, _props(props))


def shape_key(props, n, k, sm90_emulation="faithful"):
    """The cache's key of a shape on that device (the emulation counts on sm_90 only)."""
    return _text(_bound().h3_tune_shape_key, _props(props), n, k, _emulation(sm90_emulation))


def default_tile():
    """The registry's default config (kernels/device/tiles.h kOutProjTileDefault), by name."""
    return _names()[_bound().h3_tune_default_tile()]


def heuristic_with_reason(props, m):
    """(registry name, its rule) of the built-in choice for a device's properties."""
    tile = ctypes.c_int32(0)
    rule = _text(_bound().h3_tune_heuristic, _props(props), int(m), ctypes.byref(tile))
    return _names()[tile.value], rule


def heuristic(props, m):
    """The built-in choice, a registry name."""
    return heuristic_with_reason(props, m)[0]


def _say(handle):
    """The cache's warnings nobody was told yet, as RuntimeWarnings."""
    text, = _sized(_bound().h3_tune_cache_warnings, handle)
    for line in text.splitlines():
        warnings.warn("minimax_h3_nvfp4: " + line, RuntimeWarning, stacklevel=4)


class Cache:
    """A tuning cache as the library reads it. Cache() is the process's: the file tile="auto"
    (and C++'s kAuto) reads; Cache(path) another file, read at its first use."""

    def __init__(self, path=None):
        self._handle = None  # NULL: the process's
        if path is not None:
            handle = ctypes.c_void_p()
            _native.check(_bound().h3_tune_cache_open(os.fsencode(path), ctypes.byref(handle)))
            self._handle = handle

    def __del__(self):
        if self._handle is not None and _lib is not None:
            _lib.h3_tune_cache_close(self._handle)

    @property
    def path(self):
        return _sized(_bound().h3_tune_cache_path, self._handle)[0]

    def entries(self):
        """{device key: {shape key: {m: tile name}}} of this library version."""
        lib, count = _bound(), ctypes.c_int64(0)
        _native.check(lib.h3_tune_cache_rows(self._handle, ctypes.byref(count)))
        out, m = {}, ctypes.c_int64(0)
        for row in range(count.value):
            dev, shape, tile = _sized(lib.h3_tune_cache_row, self._handle, row, count=3,
                                      after=(ctypes.byref(m),))
            shapes = out.setdefault(dev, {})
            if shape:  # "" and m 0: a device entry without a tuned shape
                shapes.setdefault(shape, {})[m.value] = tile
        _say(self._handle)
        return out

    def choose_with_reason(self, props, m, n, k, sm90_emulation="faithful"):
        """(tile name, why: "tuning cache winner" or "heuristic: <rule>") for a device's
        properties; never "auto"."""
        tile, tuned = ctypes.c_int32(0), ctypes.c_int32(0)
        why = _text(_bound().h3_tune_choose, self._handle, _props(props), int(m), int(n), int(k),
                    _emulation(sm90_emulation), ctypes.byref(tile), ctypes.byref(tuned))
        _say(self._handle)
        return _names()[tile.value], why

    def choose(self, props, m, n, k, sm90_emulation="faithful"):
        """(tile name, where it came from: "tuned" or "heuristic")."""
        name, why = self.choose_with_reason(props, m, n, k, sm90_emulation)
        return name, "tuned" if why == "tuning cache winner" else "heuristic"

    def record(self, props, n, k, sm90_emulation, winners, timings=None):
        """Stores the winners {m: tile name} of one device and shape in the file (other devices
        and shapes of this library version are kept), with their times {m: ms} where given;
        the file is replaced atomically and read again. Returns its path."""
        ms = sorted(winners)
        count = len(ms)
        times = [float((timings or {}).get(m, math.nan)) for m in ms]
        code = _bound().h3_tune_record(
            self._handle, _props(props), int(n), int(k), _emulation(sm90_emulation), count,
            (ctypes.c_int64 * count)(*[int(m) for m in ms]),
            (ctypes.c_char_p * count)(*[str(winners[m]).encode("utf-8") for m in ms]),
            (ctypes.c_double * count)(*times))
        if self._handle is None:
            _changed()
        _native.check(code)
        return self.path


_cache = Cache()


def _changed():
    global generation
    _memo.clear()
    generation += 1


def cache():
    """The process's cache: what tile="auto" runs."""
    return _cache


def resolve(device_index, m, n, k, sm90_emulation):
    """The tile code tile="auto" runs with on CUDA device `device_index` (_eager, _torch_op): the
    library's answer, a dict lookup after the first call with these arguments."""
    key = (device_index, m, n, k, sm90_emulation)
    hit = _memo.get(key)
    if hit is not None and hit[0] == generation:
        return hit[1]
    asked_in = generation
    tile, tuned = ctypes.c_int32(0), ctypes.c_int32(0)
    _text(_bound().h3_tune_resolve, int(device_index), int(m), int(n), int(k),
          _emulation(sm90_emulation), ctypes.byref(tile), ctypes.byref(tuned))
    _say(None)
    # ctypes releases the GIL during the call, and a reset() may clear the memo between any two
    # bytecodes here: each answer carries the generation it was asked in and is used only in
    # that generation, so a stale one is never read.
    if len(_memo) > 4096:  # many distinct M: keep the memo bounded
        _memo.clear()
    _memo[key] = (asked_in, tile.value)
    return tile.value


def reset(path=None):
    """Points the process's cache at `path` (None: the environment's file) and forgets what it
    read (tests; after the environment variable changed)."""
    _native.check(_bound().h3_tune_reload(None if path is None else os.fsencode(path)))
    _changed()
    return _cache
