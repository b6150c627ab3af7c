"""ctypes binding of libminimax_h3_nvfp4.so (the C ABI of python/native/capi.h).

The structs and signatures here mirror capi.h: H3OutProjArgs is built from the operand table
(_operands.py, generated from core/operands.def) and checked, field by field, against the
library's own layout when it loads (h3_args_size / h3_args_offset); H3_CAPI_VERSION guards the
rest.
The library is looked up, in order: $MINIMAX_H3_NVFP4_LIB, next to this file (the installed
package), and one folder up (Bazel's runfiles, where the package sits beside the .so).
"""

import ctypes
import os
import threading

from . import _operands

CAPI_VERSION = _operands.CAPI_VERSION
LIB_NAME = "libminimax_h3_nvfp4.so"

# absl::StatusCode values returned by the C ABI.
OK = 0
INVALID_ARGUMENT = 3
FAILED_PRECONDITION = 9
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
CAPTURING = 1000  # not an error: H3OutProjArgs.cached_workspace under capture (capi.h)


class H3Array(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("ndim", ctypes.c_int64),
        ("shape", ctypes.c_int64 * 4),
    ]


def _args_fields():
    """capi.h's H3OutProjArgs: the version, each operand (with its host value where it may be
    one), the options."""
    fields = [("version", ctypes.c_int64)]
    for o in _operands.OPERANDS:
        fields.append((o.name, H3Array))
        if o.presence == "OR_VALUE":
            fields.append((o.name + "_value", ctypes.c_float))
    return fields + [(name, ctypes.c_int32) for name in (
        "cached_workspace", "sm90_emulation", "cpu_gemm", "device", "tile",
        "ready_flags_zeroed")]


class H3OutProjArgs(ctypes.Structure):
    _fields_ = _args_fields()


def _check_layout(l, path):
    """ImportError unless H3OutProjArgs here is the library's, field for field."""
    l.h3_args_size.restype = ctypes.c_int64
    l.h3_args_size.argtypes = []
    l.h3_args_offset.restype = ctypes.c_int64
    l.h3_args_offset.argtypes = [ctypes.c_char_p]
    drift = ["%s at %d (the library: %d)" % (name, getattr(H3OutProjArgs, name).offset, got)
             for name, _ in H3OutProjArgs._fields_
             for got in [l.h3_args_offset(name.encode())]
             if got != getattr(H3OutProjArgs, name).offset]
    size = l.h3_args_size()
    if drift or size != ctypes.sizeof(H3OutProjArgs):
        raise ImportError(
            "minimax_h3_nvfp4: %s lays out H3OutProjArgs otherwise than this package (%d bytes, "
            "the library %d; %s): they come from different builds; reinstall"
            % (path, ctypes.sizeof(H3OutProjArgs), size, ", ".join(drift) or "sizes differ"))


class H3DeviceProperties(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char * 256),
        ("major", ctypes.c_int32),
        ("minor", ctypes.c_int32),
        ("sm_count", ctypes.c_int32),
        ("driver_version", ctypes.c_int32),
    ]


def make_array(data_ptr, shape):
    """An H3Array for a dense row-major buffer at data_ptr (an int, 0 = not given)."""
    a = H3Array()
    a.data = data_ptr or None
    a.ndim = len(shape)
    for i, d in enumerate(tuple(shape)[:4]):
        a.shape[i] = int(d)
    return a


_lock = threading.Lock()
_lib = None


def _candidates():
    env = os.environ.get("MINIMAX_H3_NVFP4_LIB")
    if env:
        yield env
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, LIB_NAME)
    yield os.path.join(os.path.dirname(here), LIB_NAME)


def lib():
    """The loaded library (loaded once, on first use)."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        path = None
        for c in _candidates():
            tried.append(c)
            if os.path.exists(c):
                path = c
                break
        if path is None:
            raise ImportError(
                "minimax_h3_nvfp4: %s not found (looked in: %s); install the package with "
                "`./bazelw run //python:install -- DIR` or set MINIMAX_H3_NVFP4_LIB"
                % (LIB_NAME, ", ".join(tried)))
        l = ctypes.CDLL(path)
        l.h3_capi_version.restype = ctypes.c_int32
        l.h3_capi_version.argtypes = []
        l.h3_last_error.restype = ctypes.c_char_p
        l.h3_last_error.argtypes = []
        got = l.h3_capi_version()
        if got != CAPI_VERSION:
            raise ImportError(
                "minimax_h3_nvfp4: %s has C ABI version %d, this package needs %d (they come "
                "from different builds; reinstall)" % (path, got, CAPI_VERSION))
        _check_layout(l, path)
        l.h3_version.restype = ctypes.c_char_p
        l.h3_version.argtypes = []
        l.h3_stall_message.restype = ctypes.c_char_p
        l.h3_stall_message.argtypes = []
        l.h3_device_count.restype = ctypes.c_int32
        l.h3_device_count.argtypes = [ctypes.POINTER(ctypes.c_int32)]
        l.h3_device_properties.restype = ctypes.c_int32
        l.h3_device_properties.argtypes = [ctypes.c_int32, ctypes.POINTER(H3DeviceProperties)]
        l.h3_out_proj_gpu.restype = ctypes.c_int32
        l.h3_out_proj_gpu.argtypes = [ctypes.POINTER(H3OutProjArgs), ctypes.c_void_p]
        l.h3_out_proj_cpu.restype = ctypes.c_int32
        l.h3_out_proj_cpu.argtypes = [ctypes.POINTER(H3OutProjArgs)]
        l.h3_tile_count.restype = ctypes.c_int32
        l.h3_tile_count.argtypes = []
        l.h3_tile_name.restype = ctypes.c_char_p
        l.h3_tile_name.argtypes = [ctypes.c_int32]
        l.h3_tile_code.restype = ctypes.c_int32
        l.h3_tile_code.argtypes = [ctypes.c_int32]
        l.h3_ready_flag_bytes.restype = ctypes.c_int64
        l.h3_ready_flag_bytes.argtypes = [ctypes.c_int64]
        l.h3_swizzled_scale_bytes.restype = ctypes.c_int64
        l.h3_swizzled_scale_bytes.argtypes = [ctypes.c_int64, ctypes.c_int64]
        l.h3_backend_name.restype = ctypes.c_int32
        l.h3_backend_name.argtypes = [ctypes.c_int32, ctypes.c_int32, ctypes.c_char_p,
                                      ctypes.c_int64]
        l.h3_quantize_weight_cpu.restype = ctypes.c_int32
        l.h3_quantize_weight_cpu.argtypes = [
            ctypes.POINTER(H3Array), ctypes.c_int32, ctypes.POINTER(H3Array),
            ctypes.POINTER(H3Array), ctypes.POINTER(ctypes.c_float)]
        l.h3_quantize_weight_gpu.restype = ctypes.c_int32
        l.h3_quantize_weight_gpu.argtypes = [
            ctypes.POINTER(H3Array), ctypes.c_int32, ctypes.POINTER(H3Array),
            ctypes.POINTER(H3Array), ctypes.POINTER(ctypes.c_float), ctypes.c_int32,
            ctypes.c_void_p]
        l.h3_out_envelope_cpu.restype = ctypes.c_int32
        l.h3_out_envelope_cpu.argtypes = [
            ctypes.POINTER(H3OutProjArgs), ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
            ctypes.c_void_p, ctypes.c_void_p]
        l.path = path
        _lib = l
        return l


_tiles = None


def tiles():
    """The tile configs the library knows, {name: code}, "auto" first (kernels/device/tiles.h)."""
    global _tiles
    if _tiles is None:
        l = lib()
        _tiles = {l.h3_tile_name(i).decode("ascii"): l.h3_tile_code(i)
                  for i in range(l.h3_tile_count())}
    return _tiles


def library_version():
    """The version the loaded library was built as (core/version.h)."""
    return lib().h3_version().decode("ascii")


def device_count():
    """(count, reason): the number of CUDA devices, and None; or (0, why none is usable)."""
    n = ctypes.c_int32(0)
    code = lib().h3_device_count(ctypes.byref(n))
    if code != OK:
        return 0, lib().h3_last_error().decode("utf-8", "replace")
    return n.value, None


def device_properties(index):
    """A dict: name, major, minor, sm_count, driver_version of CUDA device `index`."""
    p = H3DeviceProperties()
    check(lib().h3_device_properties(int(index), ctypes.byref(p)))
    return {"name": p.name.decode("utf-8", "replace"), "major": p.major, "minor": p.minor,
            "sm_count": p.sm_count, "driver_version": p.driver_version}


def check(code):
    """Raises the Python exception for a C ABI return code (the C++ message unchanged)."""
    if code == OK:
        return
    msg = lib().h3_last_error().decode("utf-8", "replace")
    if code in (INVALID_ARGUMENT, OUT_OF_RANGE):
        raise ValueError(msg)
    raise RuntimeError(msg)


MAX_NDIM = 4  # H3Array.shape's length: the C ABI cannot describe more dimensions


def check_ndim(fn, name, value):
    """ValueError when `value` (an array, a tensor or None) has more dimensions than an H3Array
    holds: the C ABI would otherwise see only the first four and misjudge the size."""
    shape = getattr(value, "shape", None)
    if shape is None or len(shape) <= MAX_NDIM:
        return
    numel = 1
    for d in shape:
        numel *= int(d)
    raise ValueError("%s: %s must have at most %d dimensions, got shape [%s] (%d-D, %d elements)"
                     % (fn, name, MAX_NDIM, ", ".join(str(int(d)) for d in shape), len(shape),
                        numel))


def new_args(to_array=None, **arrays):
    """New H3OutProjArgs. With to_array, each named array field (attn_out=..., out=...) is set
    to to_array(value); to_array(None) must give an empty H3Array (argument not given)."""
    a = H3OutProjArgs()
    a.version = CAPI_VERSION
    a.device = -1
    for name, value in arrays.items():
        check_ndim("minimax_h3_nvfp4_out_proj", name, value)
        setattr(a, name, to_array(value))
    return a
