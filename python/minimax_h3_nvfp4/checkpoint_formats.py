"""The NVFP4 layouts of users' checkpoints, and the conversion of one layer to this package's
operands (o_weight_q, o_weight_sf, o_weight_global_scale, act_global_scale). NumPy only. The
SVDQuant formats (smoothing and a low-rank branch too): checkpoint_svd.py (ModelOpt NVFP4_SVD)
and checkpoint_nunchaku.py (Nunchaku), which these functions dispatch to.

Each format's conventions, as its own sources state them (read, not copied; revisions read on
2026-12-02: NVIDIA/Model-Optimizer 211c6b34, vllm-project/compressed-tensors ac8e2ba8,
Comfy-Org/comfy-kitchen 7d86acf):

ModelOpt NVFP4 (NVIDIA/Model-Optimizer modelopt/torch/quantization/qtensor/nvfp4_tensor.py,
NVFP4QTensor): `<layer>.weight` U8 [N, K/2], the even element in the low nibble (`quantize`
packs `q[..., 1::2] << 4 | q[..., 0::2]`); `<layer>.weight_scale` F8_E4M3 [N, K/16] in row
order (linear, one byte per 16-block; `get_weights_scaling_factor`); `<layer>.weight_scale_2`
F32 scalar = amax / (6 * 448) (`get_weights_scaling_factor_2`), the dequantize direction:
W = e2m1 * weight_scale * weight_scale_2 (`dequantize`); `<layer>.input_scale` F32 scalar =
act_amax / (6 * 448) (`get_activation_scaling_factor`), also the dequantize direction.

compressed-tensors `nvfp4-pack-quantized` (vllm-project/compressed-tensors
compressors/nvfp4/base.py NVFP4PackedCompressor, compressors/nvfp4/helpers.py
pack_fp4_to_uint8): `<layer>.weight_packed` U8 [N, K/2], the even element in the low nibble;
`<layer>.weight_scale` F8_E4M3 [N, K/16] linear; `<layer>.weight_global_scale` F32 [1] =
448 * 6 / amax (quantization/utils/helpers.py generate_gparam), the quantize direction - ours:
W = e2m1 * weight_scale / weight_global_scale (quantization/lifecycle/forward_helpers.py
_dequantize); `<layer>.input_global_scale` F32 [1], the same direction (vLLM quantizes the
activations with it as it is).

ComfyUI / comfy-kitchen NVFP4 (Comfy-Org/comfy-kitchen comfy_kitchen/tensor/nvfp4.py
TensorCoreNVFP4Layout, backends/eager/quantization.py quantize_nvfp4, float_utils.py
pack_uint4 / to_blocked): `<layer>.weight` U8 [round_up(N,16), round_up(K,16)/2] (zero-padded
to multiples of 16), the even element in the HIGH nibble (`hi_first=True`, the default of
every backend; commit ea7a339 "Nibble Swizzle" made the order a parameter and kept it);
`<layer>.weight_scale` F8_E4M3 already in cuBLAS's 128x4 block layout (`to_blocked`:
[round_up(rows,128), round_up(K/16,4)], zero padding), which is contract section 4's layout;
`<layer>.weight_scale_2` F32 0-d = amax / (448 * 6), the dequantize direction;
`<layer>.input_scale` F32 0-d, optional, the same direction; `<layer>.comfy_quant` U8, the
UTF-8 JSON {"format": "nvfp4"} (ComfyUI QUANTIZATION.md; the safetensors metadata
"_quantization_metadata" may list the layers instead). The nibble order is recorded nowhere
in the file: a file written with hi_first=False is read wrong by every loader that assumes
the default (sglang#23625's white FLUX.2 images).

The conversion (docs/contract.md section 5.1): codes and block scales are carried over bit for
bit (nibbles swapped for comfy; linear scales swizzled by section 4, comfy's un-swizzled and
swizzled again, which rewrites only the padding, as 0x00); a global scale in the quantize
direction is carried bit for bit; one in the dequantize direction s becomes RN(1 / s), one f32
division, which puts the dequantized weight within a relative 2^-24 of the source format's own
exact dequantization.

A `<layer>.bias` [N] (BF16, F16 or F32), in any format: the op computes no bias (out = residual
+ gate * o), so an all-zero one is dropped (said in the notes) and any other refused
(`_refuse_bias`, which the SVDQuant adapters share); comfy's [N] may be the unpadded one.
"""

import collections
import json

import numpy as np

from . import bf16 as _bf16

__all__ = ["FORMATS", "CheckpointError", "ConvertedLayer", "E2M1_VALUES", "convert_base",
           "convert_layer", "dequantize", "e4m3_value", "layer_names", "source_dequantize",
           "swap_nibbles", "swizzle", "swizzled_shape", "unswizzle"]

# Format name -> what the user reads in messages.
FORMATS = collections.OrderedDict([
    ("modelopt", "NVIDIA ModelOpt NVFP4"),
    ("compressed-tensors", "compressed-tensors nvfp4-pack-quantized"),
    ("comfy", "ComfyUI / comfy-kitchen NVFP4"),
    # SVDQuant: smoothing and a low-rank branch beside the NVFP4 residual (checkpoint_svd.py).
    ("modelopt-svd", "NVIDIA ModelOpt NVFP4_SVD (SVDQuant)"),
    ("nunchaku", "Nunchaku SVDQuant NVFP4"),
])
_SVD_FORMATS = ("modelopt-svd", "nunchaku")


class CheckpointError(ValueError):
    """A checkpoint this package refuses: unreadable, ambiguous, unsupported, or contradicting
    its format. The message names the file or tensor and the problem."""


# ---- NVFP4 pieces (contract sections 2-4) ---------------------------------------------------

# E2M1 code -> value (contract section 2); 0x8 is -0.
E2M1_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                        -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0], dtype=np.float64)


def _e4m3_table():
    b = np.arange(256)
    e, m = (b >> 3) & 0xF, b & 7
    mag = np.where(e == 0, m * 2.0 ** -9, (1 + m / 8.0) * 2.0 ** (e - 7.0))
    mag = np.where((b & 0x7F) == 0x7F, np.nan, mag)
    return np.where(b & 0x80, -mag, mag)


_E4M3 = _e4m3_table()


def e4m3_value(sf):
    """UE4M3 / E4M3FN bytes -> float64 values (0x7F / 0xFF: NaN)."""
    return _E4M3[np.asarray(sf, dtype=np.uint8)]


def swizzled_shape(rows, cols):
    """Contract section 4: the padded table's [round_up(rows,128), round_up(cols,4)]."""
    return (-(-rows // 128) * 128, -(-cols // 4) * 4)


def _offsets(rows, cols):
    """The byte offset of (r, c) in the swizzled table, contract section 4's formula."""
    r = np.arange(rows, dtype=np.int64)[:, None]
    c = np.arange(cols, dtype=np.int64)[None, :]
    cp = swizzled_shape(rows, cols)[1]
    return ((r // 128) * (cp // 4) * 512 + (c // 4) * 512 + (r % 32) * 16
            + ((r % 128) // 32) * 4 + (c % 4))


def swizzle(linear):
    """Linear scales [R, C] (uint8) -> the 128x4 swizzled table, padding bytes 0x00."""
    linear = np.asarray(linear, dtype=np.uint8)
    rows, cols = linear.shape
    out = np.zeros(swizzled_shape(rows, cols), dtype=np.uint8)
    out.reshape(-1)[_offsets(rows, cols)] = linear
    return out


def unswizzle(table, rows, cols):
    """The swizzled table (any shape with round_up(R,128) x round_up(C,4) bytes) -> [R, C]."""
    return np.ascontiguousarray(np.asarray(table, dtype=np.uint8).reshape(-1)[_offsets(rows,
                                                                                       cols)])


def swap_nibbles(q):
    """0xAB -> 0xBA: the even element moves between the high and the low nibble."""
    q = np.asarray(q, dtype=np.uint8)
    return ((q << 4) | (q >> 4)).astype(np.uint8)


def _codes(q):
    """Packed bytes [N, K/2], even element low -> codes [N, K]."""
    out = np.empty((q.shape[0], q.shape[1] * 2), dtype=np.uint8)
    out[:, 0::2] = q & 0xF
    out[:, 1::2] = q >> 4
    return out


def dequantize(o_weight_q, o_weight_sf, o_weight_global_scale):
    """Our operands -> the weight they stand for, e2m1 * UE4M3 / w_gs, float64 [N, K] (exact
    products; one float64 division)."""
    n, k = o_weight_q.shape[0], o_weight_q.shape[1] * 2
    sf = e4m3_value(unswizzle(o_weight_sf, n, k // 16))
    v = E2M1_VALUES[_codes(o_weight_q)].reshape(n, k // 16, 16) * sf[:, :, None]
    return v.reshape(n, k) / np.float64(np.asarray(o_weight_global_scale).reshape(-1)[0])


# ---- reading one layer ------------------------------------------------------------------------

ConvertedLayer = collections.namedtuple("ConvertedLayer", [
    "name", "format", "o_weight_q", "o_weight_sf", "o_weight_global_scale", "act_global_scale",
    "out_features", "in_features", "notes", "act_smooth", "lora_down", "lora_up"],
    defaults=(None, None, None))
ConvertedLayer.__doc__ = (
    "One layer in our layout: o_weight_q uint8 [N, K/2] (even element low), o_weight_sf uint8 "
    "[round_up(N,128), round_up(K/16,4)] (128x4 swizzled), o_weight_global_scale float32 [1], "
    "act_global_scale float32 [1] or None (calibration required); notes: what was done; the "
    "options of contract sections 12-13, None when absent: act_smooth float32 [K], lora_down "
    "bf16 bits (uint16) [r, K], lora_up bf16 bits (uint16) [N, r].")

# Per format: the suffixes of a layer's tensors (weight, block scales, global scale, input
# scale), and whether the global scales are in the dequantize direction.
_SUFFIX = {
    "modelopt": (".weight", ".weight_scale", ".weight_scale_2", ".input_scale", True),
    "compressed-tensors": (".weight_packed", ".weight_scale", ".weight_global_scale",
                           ".input_global_scale", False),
    "comfy": (".weight", ".weight_scale", ".weight_scale_2", ".input_scale", True),
}


def _f32_hex(v):
    return "0x%08x" % int(np.float32(v).view(np.uint32))


def _fmt_f32(v):
    return "%.9g (%s)" % (float(v), _f32_hex(v))


def comfy_marker(tensors, name):
    """The JSON of `<layer>.comfy_quant` (a U8 tensor of UTF-8), or None if unreadable."""
    t = tensors.get(name)
    if t is None or t.dtype not in ("U8", "I8") or len(t.shape) > 1:
        return None
    try:
        doc = json.loads(bytes(np.asarray(t.array).view(np.uint8).reshape(-1)).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def layer_names(fmt, tensors, metadata_layers=None):
    """The layer prefixes of format `fmt` among `tensors` (name -> safetensors_io.Tensor), and
    {prefix: why skipped} for layers the file marks as another (comfy) format."""
    if fmt in _SVD_FORMATS:
        from . import checkpoint_svd
        return checkpoint_svd.layer_names(fmt, tensors)
    wsuf, ssuf, gsuf, _, _ = _SUFFIX[fmt]
    layers, skipped = set(), {}
    if fmt == "comfy":
        marked = [n[:-len(".comfy_quant")] for n in tensors if n.endswith(".comfy_quant")]
        for p in marked:
            doc = comfy_marker(tensors, p + ".comfy_quant")
            what = None if doc is None else doc.get("format")
            if what == "nvfp4":
                layers.add(p)
            else:
                skipped[p] = ("its .comfy_quant is not readable JSON" if doc is None
                              else "marked %s, not nvfp4" % json.dumps(what))
        for p, what in (metadata_layers or {}).items():
            if what == "nvfp4":
                layers.add(p)
            elif p not in layers:
                skipped[p] = "marked %s in _quantization_metadata, not nvfp4" % json.dumps(what)
        if marked or metadata_layers:
            return sorted(layers), skipped
    for name, t in tensors.items():
        if name.endswith(gsuf):
            layers.add(name[:-len(gsuf)])
        elif name.endswith(wsuf) and t.dtype == "U8" and (name[:-len(wsuf)] + ssuf) in tensors:
            layers.add(name[:-len(wsuf)])
        elif fmt == "compressed-tensors" and name.endswith(wsuf):
            layers.add(name[:-len(wsuf)])
    return sorted(layers), skipped


def _need(tensors, layer, suffix, dtype, what):
    name = layer + suffix
    t = tensors.get(name)
    if t is None:
        raise CheckpointError("layer %r: %s %r is missing (%s)" % (layer, what, name, dtype))
    if t.dtype != dtype:
        raise CheckpointError("tensor %r (%s) must be %s, got dtype %s" % (name, what, dtype,
                                                                            t.dtype))
    return t


def _scalar(tensors, layer, suffix, what, optional=False):
    name = layer + suffix
    if optional and name not in tensors:
        return None
    t = _need(tensors, layer, suffix, "F32", what)
    if t.shape not in ((), (1,)):
        raise CheckpointError("tensor %r (%s) must be a scalar (shape [] or [1]), got shape %s"
                              % (name, what, list(t.shape)))
    v = np.float32(np.asarray(t.array).reshape(-1)[0])
    if not (np.isfinite(v) and v > 0):
        raise CheckpointError("tensor %r (%s) must be finite and > 0, got %r" % (name, what,
                                                                                float(v)))
    return v


def _our_direction(name, what, ours, v, dequant_direction, notes):
    """A global scale in the contract's direction (section 5.1): RN(1 / v) where the format
    stores it to dequantize, else v carried bit for bit; the step said in notes."""
    if dequant_direction:
        r = _reciprocal(name, what, v)
        notes.append("%s = RN(1 / %s) = %s" % (ours, _fmt_f32(v), _fmt_f32(r)))
        return r
    notes.append("%s = %s carried bit for bit" % (ours, _fmt_f32(v)))
    return v


def _reciprocal(name, what, v):
    """RN(1 / v) in f32, one division; refused where it is not a normal positive f32."""
    r = np.float32(1.0) / np.float32(v)
    if not (np.isfinite(r) and r >= np.finfo(np.float32).tiny):
        raise CheckpointError("tensor %r (%s) = %r: its reciprocal 1/x is not a normal float32 "
                              "(%r), so no global scale of ours represents it"
                              % (name, what, float(v), float(r)))
    return r


def _check_scale_bytes(name, sf):
    bad = (sf & 0x80) | ((sf & 0x7F) == 0x7F)
    if bad.any():
        i = tuple(int(x) for x in np.argwhere(bad)[0])
        raise CheckpointError("tensor %r (block scales) must hold UE4M3 values (0x00..0x7E: "
                              "sign 0, not NaN), got 0x%02x at %s (%d such bytes)"
                              % (name, int(sf[i]), list(i), int(bad.sum())))


def _refuse_bias(tensors, layer, n, notes, order=None, padded=False):
    """A `.bias` [N] must be absent or all zero (the op computes none; a dropped nonzero bias
    would change every output silently); order: the function that puts a stored vector in
    channel order (Nunchaku's packing), for the message; padded: the codes' N rows are the
    layer's rows padded to a multiple of 16 (comfy), so a bias of the unpadded length (N - 15
    .. N) is taken too."""
    name = layer + ".bias"
    t = tensors.get(name)
    if t is None:
        return
    lengths = range(max(n - 15, 1), n + 1) if padded else (n,)
    if (t.dtype not in ("BF16", "F16", "F32") or len(t.shape) != 1
            or t.shape[0] not in lengths):
        raise CheckpointError("tensor %r (bias) must be BF16, F16 or F32 [N] = [%s], got %s %s"
                              % (name, "%d .. %d: the codes' %d rows are N padded to a multiple "
                                 "of 16" % (lengths[0], n, n) if padded else "%d" % n,
                                 t.dtype, list(t.shape)))
    a = np.asarray(t.array)
    v = (_bf16.to_float32(a) if t.dtype == "BF16" else a).astype(np.float64)
    if v.any():  # a NaN is nonzero too
        if order is not None:
            v = order(v, n)
        i = int(np.flatnonzero(v)[0])
        raise CheckpointError("tensor %r (bias) must be all zero: the op computes no bias, got "
                              "%r at [%d] (%d nonzero)" % (name, float(v[i]), i,
                                                          int(np.count_nonzero(v))))
    notes.append("%s all zero: dropped (the op computes no bias)" % name)


def convert_layer(fmt, tensors, layer):
    """One layer of format `fmt` -> ConvertedLayer; CheckpointError names the tensor and the
    problem for anything that contradicts the format, and for a nonzero `<layer>.bias`."""
    if fmt in _SVD_FORMATS:
        from . import checkpoint_svd
        return checkpoint_svd.convert_layer(fmt, tensors, layer)
    for extra in (".pre_quant_scale", ".svdquant_lora_a", ".svdquant_lora_b", ".smooth_factor"):
        if layer + extra in tensors:
            raise CheckpointError(
                "layer %r carries %r (smoothing / low-rank operands of SVDQuant or AWQ), which a "
                "%s layer has not: a ModelOpt NVFP4_SVD checkpoint is format 'modelopt-svd', a "
                "Nunchaku one 'nunchaku'" % (layer, layer + extra, FORMATS[fmt]))
    c = convert_base(fmt, tensors, layer)
    _refuse_bias(tensors, layer, c.out_features, c.notes, padded=fmt == "comfy")
    return c


def convert_base(fmt, tensors, layer):
    """The NVFP4 part of a layer of format `fmt` ("modelopt", "compressed-tensors", "comfy"):
    codes, block scales, global scales; tensors beside them are not looked at."""
    wsuf, ssuf, gsuf, isuf, dequant_direction = _SUFFIX[fmt]
    w = _need(tensors, layer, wsuf, "U8", "packed E2M1 codes")
    s = _need(tensors, layer, ssuf, "F8_E4M3", "block scales")
    if len(w.shape) != 2 or w.shape[0] < 1 or w.shape[1] < 1:
        raise CheckpointError("tensor %r (packed E2M1 codes) must be 2-D [N, K/2], got shape %s"
                              % (layer + wsuf, list(w.shape)))
    n, k = w.shape[0], w.shape[1] * 2
    notes = []
    if k % 16:
        raise CheckpointError("tensor %r (packed E2M1 codes) [N, K/2] = %s: K = %d must be a "
                              "multiple of 16 (the block size)" % (layer + wsuf, list(w.shape), k))
    if fmt == "comfy" and n % 16:
        raise CheckpointError("tensor %r (packed E2M1 codes) %s: comfy-kitchen pads rows to a "
                              "multiple of 16, got N = %d" % (layer + wsuf, list(w.shape), n))
    sf_raw = np.asarray(s.array, dtype=np.uint8)
    if fmt == "comfy":
        want = swizzled_shape(n, k // 16)
        if s.shape not in (want, (want[0] * want[1],)):
            raise CheckpointError(
                "tensor %r (block scales) must be the 128x4 swizzled table %s (or its %d bytes "
                "flat) for codes %s, got shape %s" % (layer + ssuf, list(want),
                                                      want[0] * want[1], list(w.shape),
                                                      list(s.shape)))
        _check_scale_bytes(layer + ssuf, sf_raw)
        linear = unswizzle(sf_raw, n, k // 16)
        pad = sf_raw.reshape(-1).copy()
        pad[_offsets(n, k // 16).reshape(-1)] = 0
        if pad.any():
            notes.append("%d nonzero padding bytes in %s dropped (to_blocked pads with zeros)"
                         % (int(np.count_nonzero(pad)), layer + ssuf))
        q = swap_nibbles(w.array)
        notes.append("nibbles swapped (comfy-kitchen hi_first: even element in the high nibble)")
        notes.append("block scales un-swizzled and swizzled again (contract section 4)")
    else:
        if s.shape != (n, k // 16):
            hint = (" (that is the 128x4 swizzled table's shape: this format stores scales "
                    "linear)" if s.shape == swizzled_shape(n, k // 16) else "")
            raise CheckpointError("tensor %r (block scales) must have shape [N, K/16] = %s for "
                                  "codes %s, got %s%s" % (layer + ssuf, [n, k // 16],
                                                          list(w.shape), list(s.shape), hint))
        _check_scale_bytes(layer + ssuf, sf_raw)
        linear = sf_raw
        q = np.array(w.array, dtype=np.uint8)
        notes.append("block scales swizzled (contract section 4)")
    if fmt == "compressed-tensors" and layer + ".weight_shape" in tensors:
        ws = tensors[layer + ".weight_shape"]
        got = [int(x) for x in np.asarray(ws.array).reshape(-1)]
        if got != [n, k]:
            raise CheckpointError("tensor %r must be [N, K] = %s for codes %s, got %s"
                                  % (layer + ".weight_shape", [n, k], list(w.shape), got))
    if k % 64:
        raise CheckpointError("tensor %r (packed E2M1 codes) [N, K/2] = %s: the op takes K a "
                              "multiple of 64, got K = %d" % (layer + wsuf, list(w.shape), k))
    g = _scalar(tensors, layer, gsuf, "global scale")
    gs = _our_direction(layer + gsuf, "global scale", "o_weight_global_scale", g,
                        dequant_direction, notes)
    a = _scalar(tensors, layer, isuf, "input scale", optional=True)
    if a is None:
        act = None
        notes.append("act_global_scale: calibration required (no %r)" % (layer + isuf))
    else:
        act = _our_direction(layer + isuf, "input scale", "act_global_scale", a,
                             dequant_direction, notes)
    return ConvertedLayer(
        layer, fmt, np.ascontiguousarray(q), swizzle(linear), np.array([gs], dtype=np.float32),
        None if act is None else np.array([act], dtype=np.float32), n, k, notes)


def source_dequantize(fmt, tensors, layer):
    """The source format's own dequantization of a layer, evaluated exactly (float64: e2m1 x
    UE4M3 x weight_scale_2 has at most 28 significant bits; compressed-tensors' e2m1 x UE4M3 /
    weight_global_scale rounds once, at 2^-53), [N, K] as stored (comfy: padded). For the
    SVDQuant formats: the layer's effective weight W_eff, float64 [N, K], y = x @ W_eff^T with
    the smoothing and the low-rank branch folded in (checkpoint_svd.source_dequantize)."""
    if fmt in _SVD_FORMATS:
        from . import checkpoint_svd
        return checkpoint_svd.source_dequantize(fmt, tensors, layer)
    wsuf, ssuf, gsuf, _, dequant_direction = _SUFFIX[fmt]
    w = np.asarray(tensors[layer + wsuf].array, dtype=np.uint8)
    n, k = w.shape[0], w.shape[1] * 2
    sf = np.asarray(tensors[layer + ssuf].array, dtype=np.uint8)
    if fmt == "comfy":
        codes = np.empty((n, k), dtype=np.uint8)
        codes[:, 0::2] = w >> 4  # hi_first: the even element is the high nibble
        codes[:, 1::2] = w & 0xF
        sf = unswizzle(sf, n, k // 16)
    else:
        codes = _codes(w)
    g = np.float64(np.asarray(tensors[layer + gsuf].array, dtype=np.float32).reshape(-1)[0])
    v = (E2M1_VALUES[codes].reshape(n, k // 16, 16) * e4m3_value(sf)[:, :, None]).reshape(n, k)
    return v * g if dequant_direction else v / g
