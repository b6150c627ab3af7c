#!/usr/bin/env python3
"""Golden vectors for the minimax_h3_nvfp4_out_proj contract (docs/contract.md).

An implementation of the contract independent of the C++ emulator: the number
formats come from PyTorch's own float8_e4m3fn / bfloat16 casts and ml_dtypes'
float4_e2m1fn cast (each clamped / NaN-handled explicitly where the contract
differs from the library), every other step is a float32 torch operation in the
contract's order, and the GEMM is exact integer arithmetic.

Without torch or ml_dtypes the same code runs on numpy float32 and on nearest-
value tables (how the logic was checked on a machine without them); with them,
--selfcheck additionally asserts that all available implementations of each
conversion agree bit for bit. The goldens in testdata/ were written with torch
and ml_dtypes present (see README.md).

Usage: python3 make_goldens.py --out_dir DIR [--selfcheck] [--require_libs]
"""

import argparse
import json
import os
import sys

import numpy as np

try:
    import torch
except ImportError:  # the development machine has numpy only
    torch = None
try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None

F32 = np.float32
FLT_MAX = np.finfo(np.float32).max
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

# ----------------------------------------------------------------------------
# float32 arithmetic backend: torch CPU tensors when available, else numpy.
# Both are IEEE binary32 with round-to-nearest-even and subnormals kept.


class TorchOps:
    name = "torch"

    def __init__(self):
        torch.set_flush_denormal(False)

    def f32(self, a):
        a = np.ascontiguousarray(np.asarray(a, dtype=F32))
        return torch.from_numpy(a.copy())

    def np(self, t):
        return t.numpy()

    def scalar(self, v):
        return torch.tensor(np.float32(v), dtype=torch.float32)

    def abs(self, x):
        return torch.abs(x)

    def isnan(self, x):
        return torch.isnan(x)

    def where(self, c, a, b):
        return torch.where(c, a, b)

    def fmin(self, a, b):
        return torch.fmin(a, b)  # NaN-ignoring, as C's fminf

    def amax(self, x, axis):
        return torch.amax(x, dim=axis)

    def all(self, x, axis):
        return torch.all(x, dim=axis)

    def expand(self, x, axis):
        return x.unsqueeze(axis)


class NumpyOps:
    name = "numpy"

    def f32(self, a):
        return np.array(a, dtype=F32, copy=True)

    def np(self, t):
        return t

    def scalar(self, v):
        return np.float32(v)

    def abs(self, x):
        return np.abs(x)

    def isnan(self, x):
        return np.isnan(x)

    def where(self, c, a, b):
        return np.where(c, a, b).astype(F32)

    def fmin(self, a, b):
        return np.fmin(a, b)

    def amax(self, x, axis):
        return np.max(x, axis=axis)

    def all(self, x, axis):
        return np.all(x, axis=axis)

    def expand(self, x, axis):
        return np.expand_dims(x, axis)


OPS = TorchOps() if torch is not None else NumpyOps()

# ----------------------------------------------------------------------------
# Number formats (docs/contract.md section 2).


def f32_bits(a):
    return np.asarray(a, dtype=F32).view(np.uint32)


def bits_f32(u):
    return np.asarray(u, dtype=np.uint32).view(F32)


# Non-negative values of the codes, for the table implementations.
E2M1_MAG = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=np.float64)


def _e4m3_mag_table():
    vals = []
    for b in range(0x7F):  # 0x7F is NaN
        e, m = b >> 3, b & 7
        vals.append(m * 2.0**-9 if e == 0 else 2.0 ** (e - 7) * (1 + m / 8))
    return np.array(vals, dtype=np.float64)


E4M3_MAG = _e4m3_mag_table()  # codes 0..0x7E, increasing, max 448


def _nearest_even_code(mag, table):
    """Index of the nearest table value to |v| (ties to the even index),
    saturating at the last entry. mag: float64 >= 0 (exact f32 values)."""
    mag = np.minimum(mag, table[-1])
    hi = np.searchsorted(table, mag, side="left")  # table[hi] >= mag
    hi = np.minimum(hi, len(table) - 1)
    lo = np.maximum(hi - 1, 0)
    d_lo = mag - table[lo]
    d_hi = table[hi] - mag
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0))
    idx = np.where(pick_hi, hi, lo)
    idx = np.where(table[hi] == mag, hi, idx)
    return idx.astype(np.uint8)


def e4m3_table(v):
    """e4m3(v) by nearest-value search (check implementation)."""
    v = np.asarray(v, dtype=F32)
    mag = np.abs(v.astype(np.float64))
    code = _nearest_even_code(np.where(np.isnan(mag), 0, mag), E4M3_MAG)
    code = code | (np.signbit(v).astype(np.uint8) << 7)
    return np.where(np.isnan(v), np.uint8(0x7F), code).astype(np.uint8)


def e4m3_torch(v):
    """e4m3(v) with torch's float8_e4m3fn cast. The cast rounds to nearest-
    even but turns |v| >= 480 into NaN: clamp to +-448 first (Inf too); NaN
    is mapped to 0x7F explicitly (the cast may set the sign bit)."""
    t = torch.from_numpy(np.array(v, dtype=F32))
    nan = torch.isnan(t)
    c = torch.clamp(t, -448.0, 448.0)
    q = c.to(torch.float8_e4m3fn).view(torch.uint8)
    q = torch.where(nan, torch.tensor(0x7F, dtype=torch.uint8), q)
    return q.numpy()


def e4m3_mldtypes(v):
    v = np.asarray(v, dtype=F32)
    c = np.clip(v, F32(-448), F32(448))
    q = c.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    return np.where(np.isnan(v), np.uint8(0x7F), q).astype(np.uint8)


def e2m1_table(v):
    v = np.asarray(v, dtype=F32)
    mag = np.abs(v.astype(np.float64))
    code = _nearest_even_code(np.where(np.isnan(mag), 0, mag), E2M1_MAG)
    code = code | (np.signbit(v).astype(np.uint8) << 3)
    return np.where(np.isnan(v), np.uint8(0x7), code).astype(np.uint8)


def e2m1_mldtypes(v):
    """e2m1(v) with ml_dtypes' float4_e2m1fn cast on |v| clamped to 6 (the
    contract saturates, Inf included); the sign bit is taken from v, so -0 and
    tiny negatives give 0x8; NaN gives 0x7 explicitly (E2M1 has no NaN)."""
    v = np.asarray(v, dtype=F32)
    mag = np.minimum(np.abs(v), F32(6))
    mag = np.where(np.isnan(mag), F32(0), mag)
    q = mag.astype(ml_dtypes.float4_e2m1fn).view(np.uint8) & np.uint8(0x7)
    q = q | (np.signbit(v).astype(np.uint8) << 3)
    return np.where(np.isnan(v), np.uint8(0x7), q).astype(np.uint8)


def bf16_encode_bits(v):
    """RNE by integer arithmetic on the f32 bits (check implementation)."""
    u = f32_bits(v).astype(np.uint64)
    r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    r = r.astype(np.uint16)
    return np.where(np.isnan(np.asarray(v, dtype=F32)), np.uint16(0x7FFF), r)


def bf16_encode_torch(v):
    """bf16(v) with torch's bfloat16 cast (nearest-even); NaN -> 0x7FFF."""
    t = torch.from_numpy(np.array(v, dtype=F32))
    q = t.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    return np.where(np.isnan(np.asarray(v, dtype=F32)), np.uint16(0x7FFF), q)


def bf16_encode_mldtypes(v):
    v = np.asarray(v, dtype=F32)
    q = v.astype(ml_dtypes.bfloat16).view(np.uint16)
    return np.where(np.isnan(v), np.uint16(0x7FFF), q)


def bf16_decode_bits(b):
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(F32)


def bf16_decode_torch(b):
    t = torch.from_numpy(np.array(b, dtype=np.uint16).view(np.int16))
    return t.view(torch.bfloat16).to(torch.float32).numpy()


def e4m3_decode_table(b):
    b = np.asarray(b, dtype=np.uint8)
    mag = np.concatenate([E4M3_MAG, [np.nan]])[b & 0x7F]
    out = np.where(b & 0x80, -mag, mag)
    return out.astype(F32)


def e4m3_decode_torch(b):
    t = torch.from_numpy(np.array(b, dtype=np.uint8))
    return t.view(torch.float8_e4m3fn).to(torch.float32).numpy()


def e4m3_decode_mldtypes(b):
    return np.asarray(b, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(F32)


def e2m1_decode_table(c):
    c = np.asarray(c, dtype=np.uint8)
    mag = E2M1_MAG[c & 7]
    return np.where(c & 8, -mag, mag).astype(F32)


def e2m1_decode_mldtypes(c):
    c = np.asarray(c, dtype=np.uint8) & np.uint8(0xF)
    return c.view(ml_dtypes.float4_e2m1fn).astype(F32)


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype == F32:
        a, b = a.view(np.uint32), np.asarray(b, dtype=F32).view(np.uint32)
        # All NaNs are one value here (decoders may differ in payload).
        na, nb = a & 0x7FFFFFFF > 0x7F800000, b & 0x7FFFFFFF > 0x7F800000
        return np.array_equal(na, nb) and np.array_equal(a[~na], b[~nb])
    return np.array_equal(a, b)


SELFCHECK = {"on": False, "count": 0, "arith": 0, "failures": []}


def _agree(name, x, primary, others):
    out = primary(x)
    if SELFCHECK["on"]:
        for other in others:
            if other is None:
                continue
            ref = other(x)
            if not _same_bits(out, ref):
                bad = np.flatnonzero(~np.equal(out, ref).ravel())[:5]
                xs = np.asarray(x).ravel()[bad]
                if xs.dtype == F32:
                    xs = [hex(int(u)) for u in xs.view(np.uint32)]
                # Reported at the end (exit status 3) so that one run on the
                # GPU machine tells everything that disagrees.
                SELFCHECK["failures"].append(
                    f"{name}: {primary.__name__} and {other.__name__} differ "
                    f"at {bad}: inputs {xs} -> "
                    f"{np.asarray(out).ravel()[bad]!r} vs {np.asarray(ref).ravel()[bad]!r}")
            SELFCHECK["count"] += np.asarray(x).size
    return out


def e4m3(v):
    prim = e4m3_torch if torch is not None else e4m3_table
    return _agree("e4m3", v, prim,
                  [e4m3_table, e4m3_mldtypes if ml_dtypes else None])


def e2m1(v):
    prim = e2m1_mldtypes if ml_dtypes is not None else e2m1_table
    return _agree("e2m1", v, prim, [e2m1_table])


def bf16(v):
    prim = bf16_encode_torch if torch is not None else bf16_encode_bits
    return _agree("bf16", v, prim,
                  [bf16_encode_bits, bf16_encode_mldtypes if ml_dtypes else None])


def bf16_to_f32(b):
    prim = bf16_decode_torch if torch is not None else bf16_decode_bits
    return _agree("bf16_to_f32", b, prim, [bf16_decode_bits])


def e4m3_to_f32(b):
    prim = e4m3_decode_torch if torch is not None else e4m3_decode_table
    return _agree("e4m3_to_f32", b, prim,
                  [e4m3_decode_table, e4m3_decode_mldtypes if ml_dtypes else None])


def e2m1_to_f32(c):
    prim = e2m1_decode_mldtypes if ml_dtypes is not None else e2m1_decode_table
    return _agree("e2m1_to_f32", c, prim, [e2m1_decode_table])


RCP6 = np.float32(1.0) / np.float32(6.0)  # RN(1/6)
assert int(np.array(RCP6).view(np.uint32)) == 0x3E2AAAAB

# ----------------------------------------------------------------------------
# Block-16 quantization (docs/contract.md section 3).


def both(fn, *args):
    """fn(*args) with the primary arithmetic; under --selfcheck with torch,
    again with numpy float32, asserting the same bits."""
    global OPS
    out = fn(*args)
    if SELFCHECK["on"] and OPS.name == "torch":
        saved, OPS = OPS, NumpyOps()
        try:
            alt = fn(*args)
        finally:
            OPS = saved
        outs = out if isinstance(out, tuple) else (out,)
        alts = alt if isinstance(alt, tuple) else (alt,)
        for i, (a, b) in enumerate(zip(outs, alts)):
            if not _same_bits(np.asarray(a), np.asarray(b)):
                SELFCHECK["failures"].append(
                    f"{fn.__name__} output {i}: torch and numpy arithmetic differ")
        SELFCHECK["arith"] += 1
    return out


def quantize_rows(x, gs):
    """x: f32 [R, C] (C % 16 == 0), gs: f32. Returns codes u8 [R, C/2] and
    linear scales u8 [R, C/16]."""
    x = np.asarray(x, dtype=F32)
    rows, cols = x.shape
    assert cols % 16 == 0
    B = OPS
    xb = B.f32(x.reshape(rows, cols // 16, 16))
    ax = B.abs(xb)
    nan = B.isnan(ax)
    # 1. amax, NaN-ignoring (|x| >= 0, so 0 is neutral); NaN if all 16 are.
    amax = B.amax(B.where(nan, B.scalar(0), ax), -1)
    amax = B.where(B.all(nan, -1), B.scalar(np.nan), amax)
    # 2. sfv = amax * (gs * RN(1/6)), two f32 roundings in this order.
    gs_t = B.scalar(gs)
    c = gs_t * B.scalar(RCP6)
    sfv = amax * c
    # 3. sf = e4m3(sfv); sfd = f32(sf).
    sf = e4m3(B.np(sfv))
    sfd = B.f32(e4m3_to_f32(sf))
    # 4. os = 0 if amax == 0 else fminf(1 / (sfd * (1 / gs)), FLT_MAX).
    inv_gs = B.scalar(1) / gs_t
    os_ = B.scalar(1) / (sfd * inv_gs)
    os_ = B.fmin(os_, B.scalar(FLT_MAX))
    os_ = B.where(amax == B.scalar(0), B.scalar(0), os_)
    # 5. code_i = e2m1(x_i * os).
    y = xb * B.expand(os_, -1)
    codes = e2m1(B.np(y)).reshape(rows, cols)
    # 6. low nibble = even index.
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    return packed, sf.reshape(rows, cols // 16).astype(np.uint8)


# ----------------------------------------------------------------------------
# 128x4 swizzle (docs/contract.md section 4), by reshapes as torchao's to_blocked
# does it, checked against the offset formula.


def round_up(a, b):
    return (a + b - 1) // b * b


def swizzle(linear):
    rows, cols = linear.shape
    rp, cp = round_up(rows, 128), round_up(cols, 4)
    padded = np.zeros((rp, cp), dtype=np.uint8)
    padded[:rows, :cols] = linear
    # [rp/128, 128, cp/4, 4] -> tiles [rp/128, cp/4, 128, 4]; in a tile row r
    # = 32 i + j goes to j*16 + i*4 + col.
    tiles = padded.reshape(rp // 128, 128, cp // 4, 4).transpose(0, 2, 1, 3)
    tiles = tiles.reshape(-1, 4, 32, 4).transpose(0, 2, 1, 3)
    out = np.ascontiguousarray(tiles).reshape(rp, cp)
    if SELFCHECK["on"]:
        r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        off = ((r // 128) * (cp // 4) * 512 + (c // 4) * 512 + (r % 32) * 16 +
               ((r % 128) // 32) * 4 + c % 4)
        flat = out.reshape(-1)
        assert np.array_equal(flat[off], linear), "swizzle vs offset formula"
        mask = np.ones(rp * cp, dtype=bool)
        mask[off.ravel()] = False
        assert not flat[mask].any(), "swizzle padding must be zero"
    return out


# ----------------------------------------------------------------------------
# Weight quantization (docs/contract.md section 5).


def global_scale(amax):
    """Section 5's global scale from an f32 amax > 0: RN(RN(1 / amax) * 2688), the reciprocal
    first (FlashInfer's `(448 * 6) / amax` as PyTorch evaluates it), two float32 operations of
    the arithmetic backend (tensor / tensor is a true division in both). The weight quantizer
    and the calibrated activation scales below both use it."""
    B = OPS
    a = B.f32(np.asarray(amax, F32))
    return np.float32(B.np((B.scalar(1) / a) * B.scalar(2688)))


def quantize_weight(w_f32):
    """w_f32: finite f32 [N, K] (bf16 inputs decoded exactly first)."""
    n, k = w_f32.shape
    B = OPS
    amax = np.float32(B.np(B.amax(B.abs(B.f32(w_f32)).reshape(-1), 0)))
    gs = np.float32(1) if amax == 0 else global_scale(amax)
    assert np.isfinite(gs)
    q, sf = both(quantize_rows, w_f32, gs)
    return q, swizzle(sf), gs


# ----------------------------------------------------------------------------
# The op (docs/contract.md section 6), with an exact integer GEMM.


def dequant_int(codes, scales, k):
    """Values * 2^10 as exact int64 [rows, k]: e2m1 * 2 times ue4m3 * 2^9."""
    rows = codes.shape[0]
    nib = np.empty((rows, k), dtype=np.uint8)
    nib[:, 0::2] = codes & 0xF
    nib[:, 1::2] = codes >> 4
    c2 = (e2m1_to_f32(nib).astype(np.float64) * 2).astype(np.int64)
    s = e4m3_to_f32(scales).astype(np.float64)
    assert np.isfinite(s).all(), "op goldens need finite scales"
    s512 = (s * 512).astype(np.int64)
    assert np.array_equal(s512.astype(np.float64), s * 512)
    return c2 * np.repeat(s512, 16, axis=1)


def exact_acc(a_int, w_int):
    """acc * 2^20 exactly (int64; each product < 2^44, asserted no overflow)."""
    k = a_int.shape[1]
    bound = float(np.abs(a_int).max(initial=0)) * float(np.abs(w_int).max(initial=0)) * k
    assert bound < 2.0**62, "int64 accumulator could overflow"
    return a_int @ w_int.T


def epilogue(acc_f32, act_gs, w_gs, gate_bits, gate_index, residual_bits):
    B = OPS
    alpha = B.scalar(1) / (B.scalar(act_gs) * B.scalar(w_gs))
    o = B.f32(acc_f32) * alpha  # f32, not rounded to bf16
    g = gate_bits.shape[0]
    valid = (gate_index >= 0) & (gate_index < g)
    gi = np.where(valid, gate_index, 0)
    gate_rows = B.f32(bf16_to_f32(gate_bits[gi]))
    t = bf16(B.np(gate_rows * o))
    s = B.f32(bf16_to_f32(residual_bits)) + B.f32(bf16_to_f32(t))
    out = bf16(B.np(s))
    return np.where(valid[:, None], out, residual_bits).astype(np.uint16), B.np(o)


def run_op(attn_bits, wq, wsf_swizzled, w_gs, act_gs, gate_bits, gate_index,
           residual_bits):
    m, k = attn_bits.shape
    n = wq.shape[0]
    act_q, act_sf = both(quantize_rows, bf16_to_f32(attn_bits), act_gs)
    # Unswizzle the weight scales with the same reshapes, inverted.
    c = k // 16
    idx = _swizzle_index(n, c)
    wsf = wsf_swizzled.reshape(-1)[idx]
    a_int = dequant_int(act_q, act_sf, k)
    w_int = dequant_int(wq, wsf, k)
    acc_int = exact_acc(a_int, w_int)
    assert np.abs(acc_int).max(initial=0) < 2**53, "acc must be exact in float64"
    acc64 = acc_int.astype(np.float64) * 2.0**-20  # exact
    acc_f32 = acc64.astype(F32)  # one rounding (RN) from the exact value
    out, o = both(epilogue, acc_f32, act_gs, w_gs, gate_bits, gate_index, residual_bits)
    return dict(out=out, act_q=act_q, act_sf=act_sf, acc64=acc64, acc_int=acc_int,
                a_int=a_int, w_int=w_int)


def _swizzle_index(rows, cols):
    """For each linear (row, col), its byte offset in the swizzled buffer,
    found by swizzling an array of distinct ids."""
    ids = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
    rp, cp = round_up(rows, 128), round_up(cols, 4)
    # swizzle() moves bytes; move 8-byte ids with the same reshapes.
    padded = np.full((rp, cp), -1, dtype=np.int64)
    padded[:rows, :cols] = ids
    tiles = padded.reshape(rp // 128, 128, cp // 4, 4).transpose(0, 2, 1, 3)
    tiles = tiles.reshape(-1, 4, 32, 4).transpose(0, 2, 1, 3)
    flat = np.ascontiguousarray(tiles).reshape(-1)
    where = np.empty(rows * cols, dtype=np.int64)
    pos = np.flatnonzero(flat >= 0)
    where[flat[pos]] = pos
    return where.reshape(rows, cols)


# ----------------------------------------------------------------------------
# Case generation.


def to_bf16_bits(x):
    return bf16(np.asarray(x, dtype=F32))


def boundary_values_e4m3():
    v = E4M3_MAG
    mids = (v[:-1] + v[1:]) / 2
    pts = np.concatenate([v, mids, [464, 480, 500, 1e30, 2.0**-10, 2.0**-9,
                                    2.0**-11, 3 * 2.0**-11, 1e-45, 1e-38]])
    pts = pts.astype(F32)
    up = np.nextafter(pts, F32(np.inf))
    dn = np.nextafter(pts, F32(-np.inf))
    pts = np.concatenate([pts, up, dn, [np.inf, np.nan, FLT_MAX]]).astype(F32)
    return np.concatenate([pts, -pts])


def boundary_values_e2m1():
    v = E2M1_MAG
    mids = (v[:-1] + v[1:]) / 2
    pts = np.concatenate([v, mids, [6.5, 7, 100, 1e-45, 1e-30]]).astype(F32)
    up = np.nextafter(pts, F32(np.inf))
    dn = np.nextafter(pts, F32(-np.inf))
    pts = np.concatenate([pts, up, dn, [np.inf, np.nan, FLT_MAX]]).astype(F32)
    return np.concatenate([pts, -pts])


def random_f32_bits(rng, n):
    return rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32).view(F32)


def special_blocks(rng):
    """A list of 16-value f32 blocks (all exact bf16 values)."""
    nan, inf = np.float32(np.nan), np.float32(np.inf)

    def g(scale=1.0):
        return bf16_to_f32(to_bf16_bits(rng.standard_normal(16) * scale))

    blocks = []
    blocks.append(np.zeros(16, F32))                       # all +0
    blocks.append(-np.zeros(16, F32))                      # all -0
    b = np.zeros(16, F32); b[1::2] = -0.0; blocks.append(b)  # mixed zeros
    blocks.append(np.full(16, nan, F32))                   # NaN block
    b = np.zeros(16, F32); b[5] = nan; blocks.append(b)    # zeros and one NaN
    b = g(); b[7] = nan; blocks.append(b)                  # one NaN among finite
    b = g(); b[3] = inf; blocks.append(b)                  # +Inf
    b = g(); b[0] = -inf; blocks.append(b)                 # -Inf
    b = g(); b[2] = inf; b[9] = nan; blocks.append(b)      # Inf and NaN
    b = np.full(16, -inf, F32); blocks.append(b)           # all -Inf
    sub = rng.integers(1, 0x80, size=16).astype(np.uint16)  # bf16 subnormals
    sub |= (rng.integers(0, 2, size=16).astype(np.uint16) << 15)
    blocks.append(bf16_to_f32(sub))
    b = bf16_to_f32(sub).copy(); b[4] = 1.0; blocks.append(b)  # subnormals + 1
    blocks.append(bf16_to_f32(np.full(16, 0x0001, np.uint16)))  # min subnormal
    b = g(); b[11] = bf16_to_f32(np.array([0x7F7F], np.uint16))[0]; blocks.append(b)  # bf16 max
    b = g(); b[11] = -bf16_to_f32(np.array([0x7F7F], np.uint16))[0]; blocks.append(b)
    b = np.zeros(16, F32); b[8] = 1.0; blocks.append(b)     # single nonzero
    b = np.zeros(16, F32); b[8] = -2.0**-100; blocks.append(b)  # tiny negative
    blocks.append(g(1000.0))                                # far above calibration
    blocks.append(g(1e-3))
    blocks.append(g(1e-30))
    blocks.append(g(1e30))
    b = np.full(16, 6.0, F32); b[::2] = -6.0; blocks.append(b)
    blocks.append(np.arange(16, dtype=F32) - 8)
    for _ in range(9):
        blocks.append(g())
    return [np.asarray(x, dtype=F32) for x in blocks]


def tie_blocks():
    """Blocks where x * os lands exactly on e2m1 midpoints (ties) and +-1 ulp
    around them, for gs = 1 (amax 6 gives sfd = 1, os = 1) and scaled by
    powers of two (amax 6 * 2^e gives sfd = 2^e, os = 2^-e)."""
    mids = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0], dtype=F32)
    blocks = []
    for e in [-3, 0, 2, 5]:
        for variant in range(3):
            # The midpoints are bf16 values; variants 1 and 2 step one bf16
            # ulp up and down.
            bits = bf16_encode_bits(mids).astype(np.uint16)
            vals = bf16_to_f32(bits + np.uint16(variant == 1) -
                               np.uint16(variant == 2))
            b = np.zeros(16, F32)
            b[0] = 6.0
            b[1:8] = vals
            b[8] = -6.0
            b[9:16] = -vals
            blocks.append((b * F32(2.0**e)).astype(F32))
    return blocks


def make_rows(blocks, per_row):
    n = len(blocks)
    rows = (n + per_row - 1) // per_row
    out = np.zeros((rows * per_row, 16), F32)
    out[:n] = np.stack(blocks)
    return out.reshape(rows, per_row * 16)


def gen_all(out_dir, rng_seed=20261130):
    rng = np.random.default_rng(rng_seed)
    files = {}
    manifest = []

    def save(name, arr):
        files[name] = np.ascontiguousarray(arr)

    # Formats.
    e4_in = np.concatenate([boundary_values_e4m3(), random_f32_bits(rng, 4096)])
    save("formats_e4m3_in.npy", e4_in)
    save("formats_e4m3_out.npy", e4m3(e4_in))
    e2_in = np.concatenate([boundary_values_e2m1(), random_f32_bits(rng, 4096),
                            (rng.standard_normal(4096) * 3).astype(F32)])
    save("formats_e2m1_in.npy", e2_in)
    save("formats_e2m1_out.npy", e2m1(e2_in))
    bf_in = np.concatenate([
        random_f32_bits(rng, 8192),
        bits_f32(np.array([0x3F808000, 0x3F818000, 0x3F80FFFF, 0x3F817FFF,
                           0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000, 0x7F7F7FFF,
                           0x00008000, 0x00018000, 0x80008000, 0x7F800000,
                           0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001,
                           0x00000000, 0x80000000], dtype=np.uint32))])
    save("formats_bf16_in.npy", bf_in)
    save("formats_bf16_out.npy", bf16(bf_in))
    save("formats_e4m3_decode.npy", e4m3_to_f32(np.arange(256, dtype=np.uint8)))
    save("formats_e2m1_decode.npy", e2m1_to_f32(np.arange(16, dtype=np.uint8)))
    manifest.append("formats e4m3")
    manifest.append("formats e2m1")
    manifest.append("formats bf16")

    # Quantizer: special blocks under several global scales.
    sp = make_rows(special_blocks(rng), 4)
    sp_bits = bf16_encode_bits(sp)  # already bf16 values; NaN -> 0x7FFF
    sp = bf16_to_f32(sp_bits)
    gs_list = {
        "gs1": np.float32(1),
        "gscal10": global_scale(10),                     # calibrated amax 10
        "gscal1": np.float32(2688),                      # amax 1: saturates at 448
        "gs1e-6": np.float32(1e-6),                      # scales to 0 for most
        "gssub": np.float32(1e-40),                      # subnormal: 1/gs = Inf
        "gs1e30": np.float32(1e30),                      # every scale 448
        "gs2m20": np.float32(2.0**-20),
    }
    for tag, gs in gs_list.items():
        q, s = both(quantize_rows, sp, gs)
        name = f"quant_specials_{tag}"
        save(f"{name}_x.npy", sp_bits)
        save(f"{name}_gs.npy", np.array([gs], F32))
        save(f"{name}_codes.npy", q)
        save(f"{name}_scales.npy", s)
        manifest.append(f"quant {name}")

    ties = make_rows(tie_blocks(), 2)
    ties_bits = bf16_encode_bits(ties)
    for tag, gs in {"gs1": np.float32(1), "gs2": np.float32(2)}.items():
        q, s = both(quantize_rows, bf16_to_f32(ties_bits), gs)
        name = f"quant_ties_{tag}"
        save(f"{name}_x.npy", ties_bits)
        save(f"{name}_gs.npy", np.array([gs], F32))
        save(f"{name}_codes.npy", q)
        save(f"{name}_scales.npy", s)
        manifest.append(f"quant {name}")

    def data_case(name, x, gs):
        bits = to_bf16_bits(x)
        q, s = both(quantize_rows, bf16_to_f32(bits), gs)
        save(f"{name}_x.npy", bits)
        save(f"{name}_gs.npy", np.array([gs], F32))
        save(f"{name}_codes.npy", q)
        save(f"{name}_scales.npy", s)
        manifest.append(f"quant {name}")

    gauss = (rng.standard_normal((64, 256)) * 2).astype(F32)
    gb = bf16_to_f32(to_bf16_bits(gauss))
    cal = global_scale(np.abs(gb).max())
    data_case("quant_gauss_cal", gauss, cal)
    # Block scales mostly UE4M3 subnormals (< 2^-6) and some zeros.
    data_case("quant_gauss_small", gauss, np.float32(cal * np.float32(2.0**-17)))
    data_case("quant_gauss_gs1", gauss, np.float32(1))
    heavy = rng.standard_t(2, size=(64, 512)).astype(F32)
    outlier_cols = rng.choice(512, size=6, replace=False)
    heavy[:, outlier_cols] *= 40
    hb = bf16_to_f32(to_bf16_bits(heavy))
    p999 = np.float32(np.quantile(np.abs(hb), 0.999))
    # Calibrated below the true amax: outlier blocks saturate at 448.
    data_case("quant_heavy_p999", heavy, global_scale(p999))
    data_case("quant_heavy_cal", heavy, global_scale(np.abs(hb).max()))

    # Swizzle.
    for r, c in [(1, 1), (5, 3), (37, 5), (128, 4), (129, 4), (130, 7),
                 (256, 8), (300, 9)]:
        lin = rng.integers(1, 256, size=(r, c), dtype=np.uint8)
        name = f"swizzle_{r}x{c}"
        save(f"{name}_linear.npy", lin)
        save(f"{name}_swizzled.npy", swizzle(lin))
        manifest.append(f"swizzle {name}")

    # Weight quantizer.
    def weight_case(name, w, kind):
        if kind == "bf16":
            bits = to_bf16_bits(w)
            wf = bf16_to_f32(bits)
            save(f"{name}_w.npy", bits)
        else:
            wf = np.asarray(w, dtype=F32)
            save(f"{name}_w.npy", wf)
        q, sf, gs = both(quantize_weight, wf)
        save(f"{name}_q.npy", q)
        save(f"{name}_sf.npy", sf)
        save(f"{name}_gs.npy", np.array([gs], F32))
        manifest.append(f"weight_{kind} {name}")

    weight_case("weight_bf16_gauss", rng.standard_normal((40, 128)) * 0.02, "bf16")
    weight_case("weight_bf16_k48", rng.standard_normal((3, 48)), "bf16")
    wz = np.zeros((8, 64), F32); wz[::2] = -0.0
    weight_case("weight_bf16_zero", wz, "bf16")
    wh = rng.standard_t(3, size=(130, 192)).astype(F32)
    wh[:, 7] *= 30
    weight_case("weight_f32_heavy", wh, "f32")
    weight_case("weight_f32_tiny", rng.standard_normal((16, 64)) * 1e-30, "f32")
    # amax where section 5's RN(RN(1/amax) * 2688) and the one division RN(2688/amax) differ, so
    # these goldens tell the two apart (their own generator: the cases above and below keep
    # their random streams).
    rng2 = np.random.default_rng(31)
    wr = np.clip(rng2.standard_normal((128, 256)) * 0.04, -0.17, 0.17)
    wr[77, 130] = -0.171875                   # gs 0x46745D18, the division 0x46745D17
    weight_case("weight_bf16_rcp", wr, "bf16")
    wr = (rng2.standard_normal((32, 64)) * 1e37).astype(F32)
    wr[5, 17] = bits_f32(np.uint32(0x7F47B01D))  # 2.65e38: 1/amax subnormal, 3 ulp apart
    weight_case("weight_f32_rcp_huge", wr, "f32")

    # Whole op on exact-representable data (bit-exact out).
    m, n, k, g = 37, 128, 256, 9
    act_gs, w_gs = np.float32(2), np.float32(0.25)  # alpha = 1/(2*0.25) = 2
    nb = k // 16
    e = rng.integers(-1, 2, size=(m, nb))              # sfd = 2^e
    codes = rng.integers(0, 16, size=(m, nb, 16)).astype(np.uint8)
    codes[:, :, rng.integers(0, 16)] = 7                # amax = 6 * 2^e / 2
    vals = e2m1_to_f32(codes) * (2.0 ** e)[:, :, None] / 2
    vals[rng.random((m, nb)) < 0.05] = 0                # some zero blocks
    attn_bits = to_bf16_bits(vals.reshape(m, k).astype(F32))
    assert np.array_equal(bf16_to_f32(attn_bits), vals.reshape(m, k).astype(F32))
    wq = rng.integers(0, 256, size=(n, k // 2), dtype=np.uint8)
    wsf_lin = rng.choice(np.array([0x28, 0x30, 0x38, 0x40, 0x48], np.uint8),
                         size=(n, nb))                  # 2^-2 .. 2^2
    wsf = swizzle(wsf_lin)
    gate = to_bf16_bits(rng.standard_normal((g, n)).astype(F32))
    gate[3, :5] = np.array([0x0000, 0x8000, 0x3F80, 0xBF80, 0x0001], np.uint16)
    gidx = rng.integers(0, g, size=m).astype(np.int32)
    gidx[[1, 5, 6, 17, 30, 36]] = [-1, 9, INT32_MIN, INT32_MAX, -1, 10]
    gidx[[2, 3, 4]] = [0, 8, 8]
    residual = to_bf16_bits((rng.standard_normal((m, n)) * 4).astype(F32))
    residual[1, :4] = [0x8000, 0x0000, 0x8001, 0x7F80]  # -0 etc. on a pass-through row
    residual[0, :3] = [0x8000, 0x0000, 0x0001]
    res = run_op(attn_bits, wq, wsf, w_gs, act_gs, gate, gidx, residual)
    # Exactness: products are multiples of 2^-5 (= 2^15 units of 2^-20) and
    # sum|products| < 2^(15 + 24) for every element, so every partial sum in
    # any order is exact in f32 (docs/contract.md section 6).
    a, w = res["a_int"], res["w_int"]
    assert (a % 2**8 == 0).all() and (w % 2**7 == 0).all()
    abs_sum = np.abs(a) @ np.abs(w).T
    assert abs_sum.max() < 2**(15 + 24), abs_sum.max()
    op_files = dict(attn_out=attn_bits, o_weight_q=wq, o_weight_sf=wsf,
                    o_weight_global_scale=np.array([w_gs], F32),
                    act_global_scale=np.array([act_gs], F32), gate=gate,
                    gate_index=gidx, residual=residual, out=res["out"],
                    act_q=res["act_q"], act_sf=res["act_sf"])
    for key, arr in op_files.items():
        save(f"op_exact_{key}.npy", arr)
    manifest.append("op op_exact")

    # Whole op on full-entropy data, with the exact accumulator in float64.
    m, n, k = 24, 128, 512
    attn = (rng.standard_normal((m, k)) * 1.5).astype(F32)
    attn[:, rng.choice(k, size=4, replace=False)] *= 25   # outlier channels
    attn_bits = to_bf16_bits(attn)
    act_gs = global_scale(np.abs(bf16_to_f32(attn_bits)).max())
    w_bits = to_bf16_bits(rng.standard_normal((n, k)) * 0.03)
    wq, wsf, w_gs = both(quantize_weight, bf16_to_f32(w_bits))
    gate = to_bf16_bits((rng.standard_normal((g, n)) * 0.5).astype(F32))
    gidx = rng.integers(-1, g + 1, size=m).astype(np.int32)
    residual = to_bf16_bits(rng.standard_normal((m, n)).astype(F32))
    res = run_op(attn_bits, wq, wsf, w_gs, act_gs, gate, gidx, residual)
    op_files = dict(attn_out=attn_bits, o_weight_q=wq, o_weight_sf=wsf,
                    o_weight_global_scale=np.array([w_gs], F32),
                    act_global_scale=np.array([act_gs], F32), gate=gate,
                    gate_index=gidx, residual=residual, out=res["out"],
                    act_q=res["act_q"], act_sf=res["act_sf"],
                    acc_exact=res["acc64"])
    for key, arr in op_files.items():
        save(f"op_entropy_{key}.npy", arr)
    manifest.append("op op_entropy")

    os.makedirs(out_dir, exist_ok=True)
    total = 0
    for name, arr in sorted(files.items()):
        np.save(os.path.join(out_dir, name), arr)
        total += arr.nbytes
    with open(os.path.join(out_dir, "MANIFEST.txt"), "w") as f:
        f.write("# kind case  (written by make_goldens.py; read by golden_test)\n")
        for line in manifest:
            f.write(line + "\n")
    return len(files), total


def self_test():
    """Checks of the implementation's own pieces (run before generating)."""
    # Decoders: all codes.
    assert np.array_equal(e2m1_decode_table(np.arange(8, dtype=np.uint8)),
                          E2M1_MAG.astype(F32))
    if ml_dtypes is not None:
        assert np.array_equal(e2m1_decode_mldtypes(np.arange(16, dtype=np.uint8)),
                              e2m1_decode_table(np.arange(16, dtype=np.uint8)))
    dec = e4m3_to_f32(np.arange(256, dtype=np.uint8))
    assert dec[0x7E] == 448 and dec[1] == 2.0**-9 and np.isnan(dec[0x7F])
    assert np.isnan(dec[0xFF]) and dec[0xFE] == -448
    # Encoders round trip every code (decode then encode is the identity).
    b = np.arange(256, dtype=np.uint8)
    b = b[(b & 0x7F) != 0x7F]
    assert np.array_equal(e4m3(e4m3_to_f32(b)), b)
    c = np.arange(16, dtype=np.uint8)
    assert np.array_equal(e2m1(e2m1_to_f32(c)), c)
    # Contract examples.
    ex = {0.25: 0, 0.75: 2, 1.25: 2, 1.75: 4, 2.5: 4, 3.5: 6, 5.0: 6,
          6.5: 7, np.inf: 7, -0.0: 8, -0.1: 8, np.nan: 7}
    for v, code in ex.items():
        assert e2m1(np.array([v], F32))[0] == code, (v, code)
    e4 = {448: 0x7E, 464: 0x7E, 480: 0x7E, np.inf: 0x7E, -np.inf: 0xFE,
          np.nan: 0x7F, 2.0**-10: 0, -(2.0**-10): 0x80, 2.0**-9: 1,
          3 * 2.0**-10: 2, 2.0**-10 * 1.0000001: 1}
    for v, code in e4.items():
        assert e4m3(np.array([v], F32))[0] == code, (v, hex(code))
    assert bf16(np.array([np.nan], F32))[0] == 0x7FFF
    assert bf16(bits_f32(np.array([0x3F808000], np.uint32)))[0] == 0x3F80
    assert bf16(bits_f32(np.array([0x3F818000], np.uint32)))[0] == 0x3F82
    # Swizzle: bijection, known offsets from the formula.
    SELFCHECK["on"], was = True, SELFCHECK["on"]
    lin = (np.arange(130 * 7) % 255 + 1).astype(np.uint8).reshape(130, 7)
    sw = swizzle(lin)
    assert sw.shape == (256, 8)
    assert sw.reshape(-1)[1 * 16 + 0 * 4 + 2] == lin[1, 2]
    assert sw.reshape(-1)[1024 + 512 + (129 % 32) * 16 + ((129 % 128) // 32) * 4 + 1] == lin[129, 5]
    idx = _swizzle_index(130, 7)
    assert np.array_equal(sw.reshape(-1)[idx], lin)
    SELFCHECK["on"] = was
    # Quantizer on hand-checked blocks. amax 6, gs 1: sfv = 6 * RN(1/6)
    # rounds to 1.0 (0x38), os = 1, codes 6->7, -0.25->0x8 (tie to -0),
    # 0.75->2 (tie to 1), 5->6 (tie to 4), 2.5->4 (tie to 2).
    x = np.zeros((2, 16), F32)
    x[0, :5] = [6, -0.25, 0.75, 5, 2.5]
    # amax 7: sfv = 1.1666667 -> 1.125 (0x39); os = RN(1/1.125) = 0.8888889;
    # 7 * os = 6.2222 -> 6 (code 7); 1 * os -> 1 (code 2).
    x[1, :2] = [7, 1]
    q, s = quantize_rows(x, np.float32(1))
    assert list(s[:, 0]) == [0x38, 0x39], s
    # Section 5's two roundings, where one division would differ (1.25, 7: 1 ulp; 2.65e38:
    # 1/amax subnormal, 3 ulp) and where it would not (6).
    for amax, want in [(1.25, 0x45066667), (7.0, 0x43C00001), (6.0, 0x43E00000),
                       (bits_f32(np.uint32(0x7F47B01D)), 0x05576042)]:
        assert f32_bits(global_scale(amax)) == want, (amax, hex(f32_bits(global_scale(amax))))
    assert list(q[0, :3]) == [0x87, 0x62, 0x04], q[0]
    assert list(q[1, :1]) == [0x27], q[1]
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out_dir", required=True)
    ap.add_argument("--selfcheck", action="store_true",
                    help="assert that all available implementations agree")
    ap.add_argument("--require_libs", action="store_true",
                    help="fail unless torch and ml_dtypes are importable")
    ap.add_argument("--extra_sweep", type=int, default=0,
                    help="with --selfcheck: also compare conversions on N random f32")
    args = ap.parse_args()
    versions = dict(python=sys.version.split()[0], numpy=np.__version__,
                    torch=getattr(torch, "__version__", None),
                    ml_dtypes=getattr(ml_dtypes, "__version__", None),
                    arithmetic=OPS.name)
    print("make_goldens:", json.dumps(versions))
    if args.require_libs and (torch is None or ml_dtypes is None):
        sys.exit("make_goldens: torch and ml_dtypes are required (--require_libs)")
    SELFCHECK["on"] = args.selfcheck
    with np.errstate(all="ignore"):
        self_test()
        if args.selfcheck and args.extra_sweep:
            rng = np.random.default_rng(1)
            v = random_f32_bits(rng, args.extra_sweep)
            e4m3(v); e2m1(v); bf16(v)
            e2m1((rng.standard_normal(args.extra_sweep) * 4).astype(F32))
            e4m3((rng.standard_normal(args.extra_sweep) * 100).astype(F32))
            # Every bf16 value through the f32 -> e4m3/e2m1 conversions.
            allbf = bf16_to_f32(np.arange(65536, dtype=np.uint16))
            e4m3(allbf); e2m1(allbf); bf16(allbf)
        nfiles, nbytes = gen_all(args.out_dir)
    print(f"make_goldens: wrote {nfiles} files, {nbytes} data bytes to "
          f"{args.out_dir}; selfcheck compared {SELFCHECK['count']} conversions "
          f"and {SELFCHECK['arith']} torch-vs-numpy arithmetic runs")
    fails = SELFCHECK["failures"]
    for f in fails[:40]:
        print("SELFCHECK FAILURE:", f)
    if fails:
        sys.exit(f"make_goldens: {len(fails)} selfcheck failures")
    print("make_goldens: selfcheck", "passed" if args.selfcheck else "not run")


if __name__ == "__main__":
    main()
