"""The tile choice behind `tile="auto"`: a per-user JSON cache of tuned winners, else a heuristic.

    python -m minimax_h3_nvfp4 tune     # times every registered config, writes the cache
    minimax_h3_nvfp4.tuning.cache_path()  # $MINIMAX_H3_NVFP4_TUNE_CACHE, else
                                        # ${XDG_CACHE_HOME:-~/.cache}/minimax_h3_nvfp4/tune.json

The cache is keyed by device (name, compute capability, SM count, driver version) and library
version, then by shape (N, K and, on sm_90, the MMA emulation), and holds the winning config
per M bucket. The GPU path of the op calls `resolve()` for every `tile="auto"` call: the file is
read once per process (on the first such call), and each (device, M, N, K, emulation) is then
one dict lookup. Nothing here touches the GPU's streams, so a call resolved this way can be
captured into a CUDA graph, the first call of the process included. A cache that cannot be read
or was written by another library version is ignored with a warning, and so are devices it
does not know: the heuristic decides then.

The heuristic (`heuristic()`): "128x128" for M <= 512 on SM12x (the performance model,
harness/perf_model, predicts it ~1.9x faster than the 128x256 configs, the default among them,
at M = 128 on an RTX 5090; not measured on an SM12x part), else the registry's default
(`default_tile()`, today "128x256_lockstep"). Both, and `Cache.choose()`, answer a concrete
registry name, never "auto", as the C++ TuneHeuristic does.

The C++ host API reads the same file the same way (OutProjTile::kAuto, kernels/tune_cache.h) and
the C++ bench writes it (`--write_tune_cache`); python/tests/tune_cache_cross_test.py holds the
two readers, writers and heuristics to each other.
"""

import json
import math
import os
import tempfile
import threading
import warnings

from . import _native

ENV_PATH = "MINIMAX_H3_NVFP4_TUNE_CACHE"
FORMAT = "minimax_h3_nvfp4 tune cache 1"
DEFAULT_M_BUCKETS = (1, 16, 128, 512, 1024, 4096, 16384)
SMALL_M_SM12X = 512  # the heuristic's bound for the 128x128 tile on SM12x
MAX_BUCKET_M = 2 ** 31 - 1  # a bucket's M: the op's own bound

# Counts changes of what resolve() may answer (a cache written, or reset): callers that keep a
# resolved tile (the eager fast path's plans) resolve again when it moved.
generation = 0


def cache_path():
    """The cache file: $MINIMAX_H3_NVFP4_TUNE_CACHE, else $XDG_CACHE_HOME (or ~/.cache)/
    minimax_h3_nvfp4/tune.json."""
    env = os.environ.get(ENV_PATH)
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "minimax_h3_nvfp4", "tune.json")


def device_key(props, library_version=None):
    """The cache's key of a device: props as _native.device_properties returns them."""
    return "%s | sm_%d%d | %d SMs | driver %d | minimax_h3_nvfp4 %s" % (
        props["name"], props["major"], props["minor"], props["sm_count"],
        props["driver_version"], library_version or _library_version())


def variant(props, sm90_emulation):
    """What the tile choice depends on besides the shape: the sm_90 build's MMA emulation
    ("faithful" / "fast"), "native" elsewhere."""
    return sm90_emulation if props["major"] == 9 else "native"


def shape_key(n, k, variant_name):
    return "n=%d k=%d %s" % (n, k, variant_name)


def default_tile():
    """The registry's default config: the first after "auto" (kernels/tiles.h)."""
    return next(t for t in _native.tiles() if t != "auto")


def concrete(name):
    """A registry name for `name`: "auto" is the registry's default."""
    return default_tile() if name == "auto" else name


def heuristic_with_reason(props, m):
    """(registry name, why) of the built-in choice; reads props["major"] only."""
    if props["major"] == 12 and m <= SMALL_M_SM12X:
        return "128x128", "M <= %d on SM12x" % SMALL_M_SM12X
    return default_tile(), "the default config"


def heuristic(props, m):
    """The built-in choice, a registry name."""
    return heuristic_with_reason(props, m)[0]


def nearest_bucket(buckets, m):
    """The bucket closest to m on a log scale (buckets sorted, non-empty)."""
    m = max(int(m), 1)
    best = buckets[0]
    for b in buckets:
        if abs(math.log2(b) - math.log2(m)) < abs(math.log2(best) - math.log2(m)):
            best = b
    return best


def _library_version():
    from . import __version__
    return __version__


def _warn(msg):
    warnings.warn("minimax_h3_nvfp4: " + msg, RuntimeWarning, stacklevel=3)


class Cache:
    """The cache file's contents for this library version, loaded once, and the per-call memo.
    Every method is thread-safe; resolve() takes no lock once its key is memoized."""

    def __init__(self, path=None):
        self._path = path
        self._lock = threading.Lock()
        self._entries = None        # device key -> {shape key: {bucket m: name}}
        self._devices = {}          # device index -> properties
        self._memo = {}             # (index, m, n, k, sm90_emulation) -> tile code
        self._warned = set()

    @property
    def path(self):
        return self._path or cache_path()

    # ---- reading ----------------------------------------------------------------------------

    def entries(self):
        """{device key: {shape key: {m: name}}} of this library version (loaded once)."""
        if self._entries is None:
            with self._lock:
                if self._entries is None:
                    self._entries = self._load()
        return self._entries

    def _load(self):
        path = self.path
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return {}
        except OSError as e:
            _warn("the tuning cache %s cannot be read (%s); ignored, tile='auto' uses the "
                  "built-in heuristic" % (path, e))
            return {}
        try:
            # Decoded here, strictly: bytes that are not UTF-8 make an invalid cache (a
            # UnicodeDecodeError is a ValueError), as in the C++ reader.
            return self._parse(json.loads(raw.decode("utf-8")), path)
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as e:
            _warn("the tuning cache %s is not a valid cache (%s); ignored, tile='auto' uses the "
                  "built-in heuristic (rerun `python -m minimax_h3_nvfp4 tune` or delete it)"
                  % (path, e))
            return {}

    def _parse(self, doc, path):
        # The same checks, in the same order, as the C++ reader (kernels/tune_cache.cc): a file
        # one of them accepts, the other accepts (python/tests/tune_cache_cross_test.py).
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ValueError("format must be %r, got %r" % (
                FORMAT, doc.get("format") if isinstance(doc, dict) else type(doc).__name__))
        devices = doc.get("devices")
        if not isinstance(devices, dict):
            raise ValueError("devices must be an object, got %s" % type(devices).__name__)
        ours = _library_version()
        entries, foreign = {}, []
        for key, dev in devices.items():
            if not isinstance(dev, dict) or not isinstance(dev.get("library_version"), str):
                raise ValueError("device %r must be an object with a library_version string"
                                 % key)
            version = dev["library_version"]
            if version != ours:
                foreign.append(version)
                continue
            if not isinstance(dev.get("shapes"), dict):
                raise ValueError("device %r: shapes must be an object" % key)
            shapes = {}
            for skey, table in dev["shapes"].items():
                rows = table.get("buckets") if isinstance(table, dict) else None
                if not isinstance(rows, list):
                    raise ValueError("shape %r: buckets must be an array" % skey)
                buckets = {}
                for row in rows:
                    m = row.get("m") if isinstance(row, dict) else None
                    name = row.get("tile") if isinstance(row, dict) else None
                    if (not isinstance(m, int) or isinstance(m, bool)
                            or not 1 <= m <= MAX_BUCKET_M or not isinstance(name, str)):
                        raise ValueError("shape %r: a bucket must have an integer m in [1, %d] "
                                         "and a tile name, got %r" % (skey, MAX_BUCKET_M, row))
                    buckets[m] = name
                if buckets:
                    shapes[skey] = buckets
            entries[key] = shapes
        if foreign:
            _warn("the tuning cache %s holds entries of minimax_h3_nvfp4 %s, not this version "
                  "(%s); those are ignored (rerun `python -m minimax_h3_nvfp4 tune`)"
                  % (path, ", ".join(sorted(set(foreign))), ours))
        return entries

    # ---- resolving ----------------------------------------------------------------------------

    def choose(self, props, m, n, k, sm90_emulation="faithful"):
        """(tile name, where it came from: "tuned" or "heuristic") for a device's properties."""
        key = device_key(props)
        entries = self.entries()
        shapes = entries.get(key)
        if shapes is None:
            if entries and key not in self._warned:
                self._warned.add(key)
                _warn("the tuning cache %s has no entry for this device (%s; it holds: %s); "
                      "tile='auto' uses the built-in heuristic"
                      % (self.path, key, "; ".join(sorted(entries))))
            return heuristic(props, m), "heuristic"
        table = shapes.get(shape_key(n, k, variant(props, sm90_emulation)))
        if not table:
            return heuristic(props, m), "heuristic"
        name = table[nearest_bucket(sorted(table), m)]
        if name not in _native.tiles():
            wkey = (key, name)
            if wkey not in self._warned:
                self._warned.add(wkey)
                _warn("the tuning cache %s names tile %r, which this library does not have "
                      "(it has: %s); the heuristic decides instead"
                      % (self.path, name, ", ".join(_native.tiles())))
            return heuristic(props, m), "heuristic"
        # A cache may name "auto" (the C++ reader accepts it): the registry's default.
        return concrete(name), "tuned"

    def resolve(self, device_index, m, n, k, sm90_emulation):
        """The tile code for a tile="auto" call on CUDA device `device_index`: a dict lookup
        after the first call with these arguments."""
        memo_key = (device_index, m, n, k, sm90_emulation)
        code = self._memo.get(memo_key)
        if code is not None:
            return code
        props = self.device(device_index)
        # choose() never answers "auto": its code 0 would make the library resolve it a
        # second time (OutProjTile::kAuto reads the same cache, in C++).
        name, _ = self.choose(props, m, n, k, sm90_emulation)
        code = _native.tiles()[name]
        if len(self._memo) > 4096:  # many distinct M: keep the memo bounded
            self._memo.clear()
        self._memo[memo_key] = code
        return code

    def device(self, index):
        """The properties of CUDA device `index` (asked once per process)."""
        got = self._devices.get(index)
        if got is None:
            props = _native.device_properties(index)
            self._devices[index] = got = props
        return got

    # ---- writing ------------------------------------------------------------------------------

    def record(self, props, n, k, sm90_emulation, winners, timings=None):
        """Stores the winners {m: tile name} of one device and shape in the file (other devices
        and shapes of this library version are kept) and in this process's view of it. Writes
        a temporary file beside it and renames it over: readers see the old or the new file."""
        path = self.path
        with self._lock:
            doc = {"format": FORMAT, "devices": {}}
            try:
                with open(path, "r", encoding="utf-8") as f:
                    old = json.load(f)
                if isinstance(old, dict) and old.get("format") == FORMAT:
                    ours = _library_version()
                    doc["devices"] = {key: dev for key, dev in old.get("devices", {}).items()
                                      if isinstance(dev, dict)
                                      and dev.get("library_version") == ours}
            except (OSError, ValueError):
                pass  # no file, or one that was ignored when read: replaced
            key = device_key(props)
            dev = doc["devices"].setdefault(key, {
                "device": {"name": props["name"],
                           "compute_capability": "%d.%d" % (props["major"], props["minor"]),
                           "sm_count": props["sm_count"],
                           "driver_version": props["driver_version"]},
                "library_version": _library_version(), "shapes": {}})
            rows = []
            for m in sorted(winners):
                row = {"m": int(m), "tile": winners[m]}
                if timings and m in timings:
                    row["median_ms"] = timings[m]
                rows.append(row)
            dev["shapes"][shape_key(n, k, variant(props, sm90_emulation))] = {"buckets": rows}
            folder = os.path.dirname(os.path.abspath(path))
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tune-", suffix=".json", dir=folder)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(doc, f, indent=1, sort_keys=True)
                    f.write("\n")
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
            self._entries = None
            self._memo = {}
            _bump_generation()
        return path


_cache = Cache()


def _bump_generation():
    global generation
    generation += 1


def cache():
    """The process's cache (path from the environment at first use)."""
    return _cache


def resolve(device_index, m, n, k, sm90_emulation):
    """The tile code tile="auto" runs with on CUDA device `device_index` (diffusion_ops)."""
    return _cache.resolve(device_index, m, n, k, sm90_emulation)


def reset(path=None):
    """Forgets what was loaded (tests; after the environment variable changed)."""
    global _cache
    _cache = Cache(path)
    _bump_generation()
    return _cache
