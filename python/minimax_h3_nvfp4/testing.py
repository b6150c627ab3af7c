"""Judging results against the contract (docs/contract.md section 8), for tests: the set of
admissible `out` values of every element, from the emulator's checker (emulator/check.h
ComputeOutEnvelope, through the C ABI), and a comparison against it. Any backend's inputs
(torch tensors on any device, NumPy arrays) are copied to host NumPy first."""

import ctypes

import numpy as np

from . import _native
from . import bf16 as _bf16


def to_numpy(x):
    """A host NumPy copy/view: torch bf16 -> uint16 bit patterns; NumPy bf16 -> uint16 bits;
    Python floats -> float32 [1]."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and isinstance(x, torch.Tensor):
        x = x.detach().to("cpu").contiguous()
        if x.dtype == torch.bfloat16:
            return x.view(torch.int16).numpy().view(np.uint16)
        if x.dtype == getattr(torch, "float8_e4m3fn", None):
            return x.view(torch.uint8).numpy()
        return x.numpy()
    if isinstance(x, np.ndarray):
        if _bf16.is_bf16_dtype(x.dtype):
            return np.ascontiguousarray(_bf16.bits(x))
        if x.dtype.itemsize == 1 and x.dtype != np.uint8:
            return np.ascontiguousarray(x).view(np.uint8)
        return np.ascontiguousarray(x)
    return np.array([x], dtype=np.float32)


def out_envelope(attn_out, o_weight_q, o_weight_sf, o_weight_global_scale, act_global_scale,
                 gate, gate_index, residual, rows=None, act_smooth=None, lora_down=None,
                 lora_up=None):
    """(lo, hi, exact) for the op's rows `rows` (None: all): lo, hi uint16 [rows, N], the
    closed interval of admissible bf16 patterns in the contract's total order; exact uint8
    [rows, N], 1 where the admissible out is one value (the accumulation bound is 0; with the
    branch, v's admissible set is one value: contract 13.2). act_smooth: the
    op's smoothing factors (contract section 12), when it smooths; lora_down, lora_up: its
    low-rank branch (section 13), when it has one."""
    ops = [attn_out, o_weight_q, o_weight_sf, o_weight_global_scale, act_global_scale, gate,
           gate_index, residual]
    names = ["attn_out", "o_weight_q", "o_weight_sf", "o_weight_global_scale",
             "act_global_scale", "gate", "gate_index", "residual"]
    for name, x in (("act_smooth", act_smooth), ("lora_down", lora_down), ("lora_up", lora_up)):
        if x is not None:
            ops.append(x)
            names.append(name)
    arrays = [to_numpy(x) for x in ops]
    a = _native.new_args(lambda x: _native.make_array(x.ctypes.data, x.shape),
                         **dict(zip(names, arrays)))
    m = arrays[0].shape[0] if arrays[0].ndim == 2 else 0
    n = arrays[1].shape[0] if arrays[1].ndim == 2 else 0
    rows = (np.arange(m, dtype=np.int64) if rows is None
            else np.ascontiguousarray(rows, dtype=np.int64))
    lo = np.zeros((len(rows), n), dtype=np.uint16)
    hi = np.zeros_like(lo)
    exact = np.zeros((len(rows), n), dtype=np.uint8)
    a.out = _native.make_array(0, (m, n))
    _native.check(_native.lib().h3_out_envelope_cpu(
        ctypes.byref(a), rows.ctypes.data, len(rows), lo.ctypes.data, hi.ctypes.data,
        exact.ctypes.data))
    return lo, hi, exact


def check_out(got, lo, hi, rows=None):
    """Compares `got` (the whole [M, N] out, any backend) rows `rows` (None: all) with the
    envelope. Returns (mismatches, first), first a message naming the first bad element or
    None."""
    g = to_numpy(got)
    if rows is not None:
        g = g[np.asarray(rows, dtype=np.int64)]
    kg, klo, khi = _bf16.order_key(g), _bf16.order_key(lo), _bf16.order_key(hi)
    bad = (kg < klo) | (kg > khi)
    count = int(bad.sum())
    if count == 0:
        return 0, None
    i, j = (int(v) for v in np.argwhere(bad)[0])
    row = i if rows is None else int(np.asarray(rows)[i])
    return count, ("out[m=%d, n=%d]: got 0x%04x, want [0x%04x, 0x%04x]"
                   % (row, j, g[i, j], lo[i, j], hi[i, j]))
