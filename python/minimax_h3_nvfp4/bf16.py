"""bfloat16 for NumPy, which has no such type: bf16 travels as uint16 bit patterns (or as
ml_dtypes.bfloat16 where ml_dtypes is installed; both are accepted by the op).

    bits = from_float32(x)       # float32 -> bf16 bit patterns (uint16), round to nearest even
    x = to_float32(bits)         # bf16 (uint16 bits or ml_dtypes.bfloat16) -> float32, exact

The rounding is the contract's bf16() (docs/contract.md, Notation): nearest, ties to even,
overflow to +-Inf, every NaN to the single pattern 0x7FFF.
"""

import numpy as np


def is_bf16_dtype(dtype):
    """uint16 (bit patterns) or ml_dtypes.bfloat16."""
    dtype = np.dtype(dtype)
    return dtype == np.uint16 or (dtype.name == "bfloat16" and dtype.itemsize == 2)


def bits(a):
    """The uint16 bit patterns of a bf16 array (uint16 or ml_dtypes.bfloat16), a view."""
    a = np.asarray(a)
    if a.dtype == np.uint16:
        return a
    if a.dtype.name == "bfloat16" and a.dtype.itemsize == 2:
        return a.view(np.uint16)
    raise TypeError("expected bf16 bit patterns (uint16) or ml_dtypes.bfloat16, got %s" % a.dtype)


def from_float32(x):
    """float32 (or anything NumPy converts to it) -> bf16 bit patterns (uint16)."""
    x = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    u = x.view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    out = rounded.astype(np.uint16)
    out[np.isnan(x)] = 0x7FFF
    return out


def to_float32(b):
    """bf16 (uint16 bit patterns or ml_dtypes.bfloat16) -> float32, exact."""
    b = np.ascontiguousarray(bits(b))
    return (b.astype(np.uint32) << 16).view(np.float32)


def round_float32(x):
    """x rounded to bf16 and widened back to float32 (one bf16 rounding)."""
    return to_float32(from_float32(x))


def order_key(b):
    """Position of each bf16 pattern in the contract's total order (section 8):
    -NaN < -Inf < ... < -0 < +0 < ... < +Inf < 0x7FFF. int32."""
    b = bits(b).astype(np.int32)
    return np.where(b & 0x8000, 0x7FFF - (b & 0x7FFF), 0x8000 + b).astype(np.int32)
