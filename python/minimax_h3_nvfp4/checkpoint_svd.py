"""SVDQuant checkpoints -> this package's operands: ModelOpt NVFP4_SVD ("modelopt-svd") and
Nunchaku SVDQuant NVFP4 ("nunchaku"). A layer is an NVFP4 residual weight, a per-input-channel
smoothing and a rank-r bf16 branch: o_weight_q / o_weight_sf / o_weight_global_scale plus
act_smooth, lora_down, lora_up (docs/contract.md sections 5.1, 12, 13). NumPy only.

Sources (read, not copied; on 2026-12-02): NVIDIA/Model-Optimizer
a2fbac7bad8ab446d3f8783dadb0c3366eb0ad73 (paths below under modelopt/torch/); the review
threads of NVIDIA/TensorRT-LLM#15532 and #15693 (its NVFP4_SVD loader), and TensorRT-LLM's unit
test of Wan2.2 NVFP4_SVD loading (found by content, path not recorded): bf16 pre_quant_scale [K],
bf16 svdquant_lora_a [r, K] / _b [N, r], config.json quant_algo "NVFP4_SVD" with lora_rank.

ModelOpt NVFP4_SVD: `quant_algo: "NVFP4_SVD"` in hf_quant_config.json or config.json's
quantization_config (quant_method "modelopt"; export/quant_utils.py maps qformat
"nvfp4_svdquant" to it, convert_hf_config.py adds `pre_quant_scale: true`, `lora_rank`). The
NVFP4 tensors are ModelOpt NVFP4's (checkpoint_formats.py), of the residual weight; beside them
(export/unified_export_hf.py `_promote_quantizer_tensors_to_module`): `.pre_quant_scale` [K] in
the weight's dtype (quantization/model_calib.py `apply_pre_quant_scale_and_smooth`), which the
input is MULTIPLIED by (nn/modules/quant_linear.py SVDQuantLinear.forward; the weight was
divided by it); `.svdquant_lora_a` [r, K] and `.svdquant_lora_b` [N, r] in the weight's dtype
(model_calib.py `svd`: lora_a = V^T[:r], lora_b = U[:, :r] S[:r], residual = weight - b @ a),
applied to the smoothed input, y = NVFP4(x pqs) + ((x pqs) @ a^T) @ b^T (`_compute_lora_residual`;
TensorRT-LLM#15532 `matmul(matmul(x_hat, a.t()), b.t())`). `input_scale` was calibrated on
x * pqs. Layers in svdquant's skip_layers stay plain NVFP4 in the same checkpoint.
Conversion: pqs -> act_smooth widened to f32 exactly (x' = bf16(f32(x) * s) is ModelOpt's bf16
product); lora_a -> lora_down, lora_b -> lora_up bit for bit when BF16, else (F16, F32) each
value rounded once to bf16, nearest-even (relative 2^-8; non-finite refused); ranks other than
16, 32, 48, 64 refused (contract 13).

The Nunchaku adapter is checkpoint_nunchaku.py, on the helpers here. The ModelOpt bound:
elementwise |W_eff - W_eff_src| <= 2^-24 |W_res| |pqs| with bf16 factors; F16 / F32 factors add
(2^-7 + 2^-16) (|B| @ |A|) |pqs|. Tested: python/tests/checkpoints_svd_test.py.
"""

import json

import numpy as np

from . import bf16 as _bf16
from . import checkpoint_formats as cf
from .checkpoint_formats import CheckpointError, _refuse_bias

__all__ = ["RANKS", "convert_layer", "effective_weight", "layer_names", "metadata_evidence",
           "name_evidence", "read_options", "source_dequantize"]

RANKS = (16, 32, 48, 64)  # contract section 13
_FLOAT = ("BF16", "F16", "F32")

# ---- reading tensors -----------------------------------------------------------------------------

def _values(t):
    """A BF16 / F16 / F32 tensor's values as float64 (exact)."""
    a = np.asarray(t.array)
    if t.dtype == "BF16":
        return _bf16.to_float32(a).astype(np.float64)
    return a.astype(np.float64)


def _get(tensors, name, what, dtypes, shapes=None, optional=False, shape_text=None):
    """Tensor `name`, its dtype one of `dtypes` and its shape one of `shapes` (when given)."""
    t = tensors.get(name)
    if t is None:
        if optional:
            return None
        raise CheckpointError("tensor %r (%s) is missing (%s)" % (name, what, " or ".join(dtypes)))
    if t.dtype not in dtypes:
        raise CheckpointError("tensor %r (%s) must be %s, got dtype %s"
                              % (name, what, " or ".join(dtypes), t.dtype))
    if shapes is not None and tuple(t.shape) not in shapes:
        raise CheckpointError("tensor %r (%s) must have shape %s, got %s"
                              % (name, what, shape_text, list(t.shape)))
    return t


def _finite(name, what, v):
    bad = ~np.isfinite(v)
    if bad.any():
        i = [int(x) for x in np.argwhere(bad)[0]]
        raise CheckpointError("tensor %r (%s) must be finite, got %r at %s (%d such values)"
                              % (name, what, float(v[tuple(i)]), i, int(bad.sum())))


def _bf16_rn(name, what, v):
    """float64 values, each with at most 24 significant bits -> bf16 bits, one rounding to
    nearest-even (f64 -> f32 is exact for them, then contract's bf16()); an overflow refused."""
    f = v.astype(np.float32)
    if not np.array_equal(f.astype(np.float64), v, equal_nan=True):
        raise CheckpointError("tensor %r (%s): a value is not a float32, so one rounding to bf16 "
                              "cannot be guaranteed" % (name, what))
    out = _bf16.from_float32(f)
    _finite(name, what + " rounded to bf16", _bf16.to_float32(out))
    return out


def _lowrank_bits(name, what, t, notes):
    """A BF16 / F16 / F32 low-rank factor -> bf16 bits (BF16: as stored)."""
    if t.dtype == "BF16":
        bits = np.array(t.array, dtype=np.uint16)
        _finite(name, what, _bf16.to_float32(bits))
        return bits
    v = _values(t)
    _finite(name, what, v)
    notes.append("%s %s: each value rounded to bf16 (nearest-even, relative error <= 2^-8)"
                 % (name, t.dtype))
    return _bf16_rn(name, what, v)


def _pair(tensors, layer, down, up, kind):
    """False when neither factor of the branch is there; an error when one is missing."""
    if down not in tensors and up not in tensors:
        return False
    for have, miss, what in ((down, up, "up-projection [N, r]"),
                             (up, down, "down-projection [%s]" % kind)):
        if miss not in tensors:
            raise CheckpointError("layer %r: %r is missing (the low-rank %s, given with %r)"
                                  % (layer, miss, what, have))
    return True


def _check_rank(name, what, shape, r, text):
    if r not in RANKS:
        raise CheckpointError("tensor %r (%s) %s %s: the op takes a rank r that is a multiple of "
                              "16 in 16..64 (contract section 13), got r = %d"
                              % (name, what, text, list(shape), r))


# ---- ModelOpt NVFP4_SVD --------------------------------------------------------------------------

def _modelopt_svd(tensors, layer):
    base = cf.convert_base("modelopt", tensors, layer)
    n, k = base.out_features, base.in_features
    notes = list(base.notes)
    _refuse_bias(tensors, layer, n, notes)
    smooth = None
    t = _get(tensors, layer + ".pre_quant_scale", "smoothing factors, multiplied into x",
             _FLOAT, [(k,)], optional=True, shape_text="[K] = [%d]" % k)
    if t is not None:
        v = _values(t)
        _finite(layer + ".pre_quant_scale", "smoothing factors", v)
        smooth = v.astype(np.float32)
        notes.append("act_smooth = %s.pre_quant_scale (%s), widened to float32 exactly "
                     "(ModelOpt multiplies the input by it, as contract section 12)"
                     % (layer, t.dtype))
    an, bn = layer + ".svdquant_lora_a", layer + ".svdquant_lora_b"
    if not _pair(tensors, layer, an, bn, "r, K"):
        notes.append("no low-rank branch (no %s / .svdquant_lora_b)" % an)
        return base._replace(format="modelopt-svd", notes=notes, act_smooth=smooth)
    a = _get(tensors, an, "SVDQuant down-projection", _FLOAT)
    if len(a.shape) != 2 or a.shape[1] != k:
        raise CheckpointError("tensor %r (SVDQuant down-projection) must have shape [r, K] = "
                              "[r, %d] (K from %s.weight), got %s" % (an, k, layer,
                                                                      list(a.shape)))
    r = a.shape[0]
    _check_rank(an, "SVDQuant down-projection", a.shape, r, "[r, K] =")
    b = _get(tensors, bn, "SVDQuant up-projection", _FLOAT, [(n, r)],
             shape_text="[N, r] = [%d, %d] (N from %s.weight, r from %s)" % (n, r, layer, an))
    down = _lowrank_bits(an, "SVDQuant down-projection", a, notes)
    up = _lowrank_bits(bn, "SVDQuant up-projection", b, notes)
    notes.append("lora_down = %s, lora_up = %s (rank %d)" % (an, bn, r))
    return base._replace(format="modelopt-svd", notes=notes, act_smooth=smooth, lora_down=down,
                         lora_up=up)


# ---- the format's entry points (checkpoint_formats dispatches here) ----------------------------

def layer_names(fmt, tensors):
    """(sorted layer names, {skipped layer: why})."""
    if fmt == "modelopt-svd":
        return cf.layer_names("modelopt", tensors)
    layers, skipped = [], {}
    for name in tensors:
        if not name.endswith(".qweight"):
            continue
        p = name[:-len(".qweight")]
        ws = tensors.get(p + ".wscales")
        if p + ".wzeros" in tensors:
            skipped[p] = "Nunchaku AWQ W4A16 layer (int4 weights, 16-bit activations), not NVFP4"
        elif ws is not None and ws.dtype in ("BF16", "F16"):
            skipped[p] = "Nunchaku INT4 SVDQuant layer (wscales %s), not NVFP4" % ws.dtype
        else:
            layers.append(p)
    return sorted(layers), skipped


def convert_layer(fmt, tensors, layer):
    """One layer -> checkpoint_formats.ConvertedLayer with act_smooth / lora_down / lora_up."""
    return _modelopt_svd(tensors, layer) if fmt == "modelopt-svd" else _nun.convert(tensors, layer)


def source_dequantize(fmt, tensors, layer):
    """The layer's effective weight by the source's own arithmetic, exact in float64 [N, K]:
    y = x @ W_eff^T. ModelOpt: (e2m1 ws ws2 + lora_b @ lora_a) * pqs (columns). Nunchaku:
    e2m1 wscales wtscale wcscales / smooth_factor (columns) + proj_up @ proj_down (unpacked)."""
    if fmt == "modelopt-svd":
        w = cf.source_dequantize("modelopt", tensors, layer)
        if layer + ".svdquant_lora_a" in tensors:
            w = w + (_values(tensors[layer + ".svdquant_lora_b"])
                     @ _values(tensors[layer + ".svdquant_lora_a"]))
        if layer + ".pre_quant_scale" in tensors:
            w = w * _values(tensors[layer + ".pre_quant_scale"])[None, :]
        return w
    return _nun.source_dequantize(tensors, layer)


def effective_weight(c):
    """Our operands' effective weight, exact in float64 [N, K]: (e2m1 * UE4M3 / w_gs +
    lora_up @ lora_down) * act_smooth (columns), y = x @ W^T before any rounding of x'."""
    w = cf.dequantize(c.o_weight_q, c.o_weight_sf, c.o_weight_global_scale)
    if c.lora_down is not None:
        w = w + (_bf16.to_float32(c.lora_up).astype(np.float64)
                 @ _bf16.to_float32(c.lora_down).astype(np.float64))
    if c.act_smooth is not None:
        w = w * c.act_smooth.astype(np.float64)[None, :]
    return w


# ---- detection and our converted files (checkpoints.py calls these) -------------------------

def metadata_evidence(metadata, strong, refused):
    """Nunchaku's safetensors metadata "quantization_config" (nunchaku/merge_safetensors.py):
    strong evidence for an NVFP4 one, a refusal for another (INT4)."""
    for f, meta in sorted(metadata.items()):
        raw = meta.get("quantization_config")
        if raw is None:
            continue
        try:
            doc = json.loads(raw)
        except ValueError:
            doc = None
        if not isinstance(doc, dict) or doc.get("method") != "svdquant":
            continue
        wdoc = doc.get("weight") if isinstance(doc.get("weight"), dict) else {}
        why = ("safetensors metadata quantization_config: method \"svdquant\", weight dtype %s, "
               "group_size %s (Nunchaku)" % (json.dumps(wdoc.get("dtype")),
                                             json.dumps(wdoc.get("group_size"))))
        if wdoc.get("dtype") == "fp4_e2m1_all" and wdoc.get("group_size") == 16:
            if why not in strong["nunchaku"]:
                strong["nunchaku"].append(why)
        else:
            refused.append("%s: Nunchaku SVDQuant, not NVFP4" % why)


def name_evidence(names, suffixes, strong, weak, refused):
    """Weak evidence (and refusals) from the SVDQuant formats' tensor names."""
    nun = [n for n in names if n.endswith(".qweight")
           and getattr(names.get(n[:-len("qweight")] + "wscales"), "dtype", None) == "F8_E4M3"]
    if nun:
        weak["nunchaku"].append("tensor names: %d <layer>.qweight with .wscales F8_E4M3 "
                                "(Nunchaku's names)" % len(nun))
    elif any(n.endswith(".qweight") and n[:-len("qweight")] + "wzeros" not in names
             and getattr(names.get(n[:-len("qweight")] + "wscales"), "dtype", None)
             in ("BF16", "F16") for n in names) and not strong["nunchaku"]:
        refused.append("tensor names <layer>.qweight with 16-bit .wscales: Nunchaku INT4 "
                       "SVDQuant, not NVFP4")
    if suffixes.get(".svdquant_lora_a"):
        weak["modelopt-svd"].append("tensor names: %d <layer>.svdquant_lora_a (ModelOpt "
                                    "NVFP4_SVD's low-rank branch)" % suffixes[".svdquant_lora_a"])
    elif suffixes.get(".pre_quant_scale") and not strong["modelopt-svd"]:
        refused.append("%d tensors <layer>.pre_quant_scale without NVFP4_SVD's config or "
                       "svdquant_lora_a: ModelOpt AWQ smoothing (NVFP4_AWQ), not supported"
                       % suffixes[".pre_quant_scale"])


def read_options(t, layer, n, k):
    """Our converted file's act_smooth / lora_down / lora_up of a layer, checked (contract
    sections 12-13: shapes, dtypes, rank, finite values), each None when absent."""
    smooth, down, up = (None if layer + name not in t else
                        np.array(cf._need(t, layer, name, dtype, name[1:]).array)
                        for name, dtype in ((".act_smooth", "F32"), (".lora_down", "BF16"),
                                            (".lora_up", "BF16")))
    if smooth is not None and smooth.shape != (k,):
        raise CheckpointError("tensor %r must have shape [K] = [%d], got %s"
                              % (layer + ".act_smooth", k, list(smooth.shape)))
    if (down is None) != (up is None):
        have, miss = (".lora_down", ".lora_up") if up is None else (".lora_up", ".lora_down")
        raise CheckpointError("layer %r: %r is missing (given with %r)"
                              % (layer, layer + miss, layer + have))
    if down is not None:
        r = down.shape[0] if down.ndim == 2 else -1
        if down.ndim != 2 or down.shape[1] != k or r not in RANKS:
            raise CheckpointError("tensor %r must have shape [r, K] = [r, %d], r a multiple of "
                                  "16 in 16..64, got %s" % (layer + ".lora_down", k,
                                                            list(down.shape)))
        if up.shape != (n, r):
            raise CheckpointError("tensor %r must have shape [N, r] = [%d, %d], got %s"
                                  % (layer + ".lora_up", n, r, list(up.shape)))
    for name, v in ((".act_smooth", smooth), (".lora_down", None if down is None
                                              else _bf16.to_float32(down)),
                    (".lora_up", None if up is None else _bf16.to_float32(up))):
        if v is not None and not np.isfinite(v).all():
            raise CheckpointError("tensor %r must be finite, got a non-finite value at %s"
                                  % (layer + name, [int(i) for i in
                                                    np.argwhere(~np.isfinite(v))[0]]))
    return smooth, down, up


from . import checkpoint_nunchaku as _nun  # noqa: E402 (it imports the helpers above)
