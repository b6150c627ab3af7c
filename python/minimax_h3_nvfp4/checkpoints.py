"""Users' NVFP4 checkpoints -> this package's operands: detection, conversion, our converted
files. NumPy only (torch only for the modules' from_checkpoint).

    from minimax_h3_nvfp4 import checkpoints
    ckpt = checkpoints.open_checkpoint("flux2-nvfp4/")      # a .safetensors file or a folder
    fmt, why = checkpoints.detect(ckpt)                     # "modelopt", [reasons]
    layer = checkpoints.convert_layer(ckpt, "blocks.0.attn.to_out.0", fmt)
    out = minimax_h3_nvfp4_out_proj(x, layer.o_weight_q, layer.o_weight_sf,
                                    layer.o_weight_global_scale, layer.act_global_scale, ...)
    checkpoints.convert("flux2-nvfp4/", "ours.safetensors", layers=r"attn\\.to_out")
    ops = checkpoints.load_layer("ours.safetensors", "blocks.0.attn.to_out.0")

Formats (checkpoint_formats.py, checkpoint_svd.py and checkpoint_nunchaku.py state each one's
conventions and sources): "modelopt" (NVIDIA ModelOpt NVFP4), "compressed-tensors"
(nvfp4-pack-quantized), "comfy" (ComfyUI / comfy-kitchen), "modelopt-svd" (ModelOpt NVFP4_SVD:
smoothing and a low-rank branch), "nunchaku" (Nunchaku SVDQuant NVFP4), and ours
("minimax_h3_nvfp4": what `convert` writes). Refused with a CheckpointError saying so: ModelOpt
NVFP4_AWQ, Nunchaku INT4, vLLM-Omni's row-major SVDQuant conversion (config.json quant_method
"svdquant"), other quantizations.

Detection (`detect`): strong evidence is a config file or a marker - ModelOpt's
hf_quant_config.json (quantization.quant_algo "NVFP4") or config.json quantization_config
(quant_method "modelopt"; quant_algo "NVFP4_SVD": modelopt-svd); compressed-tensors' config.json
quantization_config (quant_method "compressed-tensors", format "nvfp4-pack-quantized"); comfy's
`<layer>.comfy_quant` tensors or the "_quantization_metadata" entry of the safetensors metadata;
Nunchaku's safetensors metadata "quantization_config" (method "svdquant", weight dtype
"fp4_e2m1_all"). Weak evidence is tensor names alone (weight_packed + weight_global_scale:
compressed-tensors; weight + weight_scale + weight_scale_2: ModelOpt or comfy, which name their
tensors alike; svdquant_lora_a: modelopt-svd; qweight + F8_E4M3 wscales: Nunchaku, which names
alone never decide - the same names come row-major from vLLM-Omni - so format= must). One
format with strong evidence wins; two are an error listing them; with none, one format by names
wins and two (ModelOpt or comfy) are an error that lists both and asks for format=.

Our converted file: one safetensors file, metadata {"format": "minimax_h3_nvfp4"}, per layer
`<layer>.o_weight_q` U8 [N, K/2], `<layer>.o_weight_sf` U8 [round_up(N,128), round_up(K/16,4)],
`<layer>.o_weight_global_scale` F32 [1] and, where the source had an input scale,
`<layer>.act_global_scale` F32 [1]; where the source had them, `<layer>.act_smooth` F32 [K],
`<layer>.lora_down` BF16 [r, K], `<layer>.lora_up` BF16 [N, r] - the module's buffer names, so
a layer's tensors are its state_dict; beside it `<stem>.manifest.json` (source, format and why,
per layer what was done).
"""

import hashlib
import json
import os
import re
import sys

import numpy as np

from . import safetensors_io as st
from .checkpoint_formats import (FORMATS, CheckpointError, ConvertedLayer, comfy_marker,
                                 layer_names)
from . import checkpoint_formats as _cf
from . import checkpoint_svd as _svd

__all__ = ["FORMATS", "OURS", "Checkpoint", "CheckpointError", "ConvertedLayer", "convert",
           "convert_layer", "detect", "list_layers", "load_converted", "load_layer",
           "manifest_path", "open_checkpoint", "state_dict"]

OURS = "minimax_h3_nvfp4"
_CONFIGS = ("config.json", "hf_quant_config.json")
_BUFFERS = ("o_weight_q", "o_weight_sf", "o_weight_global_scale", "act_global_scale")
_OPTIONS = ("act_smooth", "lora_down", "lora_up")  # contract sections 12-13


class Checkpoint(object):
    """An opened checkpoint: path, files (the .safetensors read), tensors (name ->
    safetensors_io.Tensor, over all files), file_of (name -> file), metadata (file -> its
    __metadata__), configs (config.json / hf_quant_config.json found beside them)."""

    def __init__(self, path):
        self.path = path
        if os.path.isdir(path):
            folder = path
            self.files = sorted(os.path.join(path, f) for f in os.listdir(path)
                                if f.endswith(".safetensors"))
            if not self.files:
                raise CheckpointError("%s: no .safetensors files in this folder" % path)
        elif os.path.isfile(path):
            folder = os.path.dirname(os.path.abspath(path))
            self.files = [path]
        else:
            raise CheckpointError("%s: no such file or folder" % path)
        self.tensors, self.file_of, self.metadata, self.configs = {}, {}, {}, {}
        for f in self.files:
            try:
                tensors, meta = st.load(f)
            except ValueError as e:
                raise CheckpointError("cannot read the checkpoint: %s" % e) from None
            self.metadata[f] = meta
            for name, t in tensors.items():
                if name in self.tensors:
                    raise CheckpointError("tensor %r is in both %s and %s" % (
                        name, self.file_of[name], f))
                self.tensors[name] = t
                self.file_of[name] = f
        for c in _CONFIGS:
            p = os.path.join(folder, c)
            if os.path.isfile(p):
                try:
                    with open(p, encoding="utf-8") as fh:
                        doc = json.load(fh)
                except (ValueError, UnicodeDecodeError) as e:
                    raise CheckpointError("%s: not JSON (%s)" % (p, e)) from None
                self.configs[c] = doc if isinstance(doc, dict) else {}

    def comfy_metadata_layers(self):
        """layer -> format from the files' "_quantization_metadata" (comfy), {} if none."""
        out = {}
        for f, meta in self.metadata.items():
            raw = meta.get("_quantization_metadata")
            if raw is None:
                continue
            try:
                doc = json.loads(raw)
                for name, conf in (doc.get("layers") or {}).items():
                    out[name] = conf.get("format") if isinstance(conf, dict) else None
            except (ValueError, AttributeError):
                raise CheckpointError("%s: __metadata__['_quantization_metadata'] is not the "
                                      "JSON comfy writes ({\"layers\": {name: {\"format\": ...}}})"
                                      % f) from None
        return out


def open_checkpoint(path):
    """A .safetensors file or a folder of them (with config.json / hf_quant_config.json)."""
    if isinstance(path, Checkpoint):
        return path
    return Checkpoint(os.fspath(path))


def _is_ours(ckpt):
    return any(m.get("format") == OURS for m in ckpt.metadata.values())


def _evidence(ckpt):
    """({format: [strong reasons]}, {format: [weak reasons]}, [refusals])."""
    strong = {f: [] for f in FORMATS}
    weak = {f: [] for f in FORMATS}
    refused = []
    hq = ckpt.configs.get("hf_quant_config.json")
    if hq is not None:
        quant = hq.get("quantization") if isinstance(hq.get("quantization"), dict) else {}
        algo = stated = quant.get("quant_algo")
        per_layer = quant.get("quantized_layers")
        if algo == "MIXED_PRECISION" and isinstance(per_layer, dict):
            # ModelOpt's mixed precision: an algorithm per layer. Its NVFP4 layers are ours;
            # its FP8 ones (F8_E4M3 weights, no weight_scale_2) are not NVFP4 layers at all.
            algos = sorted({str(v.get("quant_algo")) for v in per_layer.values()
                            if isinstance(v, dict)})
            nv = sum(1 for v in per_layer.values()
                     if isinstance(v, dict) and v.get("quant_algo") == "NVFP4")
            algo = "NVFP4" if nv else algos[0] if algos else None
            if "NVFP4_SVD" in algos:  # its NVFP4 layers convert too (modelopt-svd takes both)
                algo = "NVFP4_SVD"
            for a in algos:
                if a not in ("NVFP4", "NVFP4_SVD") and "NVFP4" in a.upper():
                    algo = a
        _modelopt_algo(algo, "hf_quant_config.json: quantization.quant_algo = %s%s" % (
            json.dumps(stated), " (group_size %s)" % json.dumps(quant.get("group_size"))
            if stated == algo else " (its layers: %s)" % algo), strong, refused)
    qc = ckpt.configs.get("config.json", {}).get("quantization_config")
    if isinstance(qc, dict):
        method = qc.get("quant_method")
        if method == "modelopt":
            _modelopt_algo(qc.get("quant_algo"), "config.json: quantization_config.quant_method "
                           "= \"modelopt\", quant_algo = %s" % json.dumps(qc.get("quant_algo")),
                           strong, refused)
        elif method == "compressed-tensors":
            fmts = {qc.get("format")}
            for g in (qc.get("config_groups") or {}).values():
                if isinstance(g, dict) and g.get("format"):
                    fmts.add(g.get("format"))
            fmts.discard(None)
            if "nvfp4-pack-quantized" in fmts:
                strong["compressed-tensors"].append(
                    "config.json: quantization_config.quant_method = \"compressed-tensors\", "
                    "format = \"nvfp4-pack-quantized\"")
            else:
                refused.append("config.json: compressed-tensors format %s is not "
                               "nvfp4-pack-quantized (not NVFP4)" % json.dumps(sorted(fmts)))
        elif method == "svdquant" or "nunchaku" in json.dumps(qc).lower():
            refused.append("config.json: quantization_config.quant_method = %s: vLLM-Omni's "
                           "SVDQuant checkpoint (Nunchaku's tensors converted to row-major, "
                           "vllm-omni#3830), whose layout is not Nunchaku's packed one: not "
                           "supported" % json.dumps(method))
    _svd.metadata_evidence(ckpt.metadata, strong, refused)
    names = ckpt.tensors
    marked = [n for n in names if n.endswith(".comfy_quant")]
    nv = [n for n in marked if (comfy_marker(names, n) or {}).get("format") == "nvfp4"]
    if nv:
        strong["comfy"].append("%d tensors <layer>.comfy_quant = {\"format\": \"nvfp4\"}"
                               % len(nv))
    meta_layers = ckpt.comfy_metadata_layers()
    if any(v == "nvfp4" for v in meta_layers.values()):
        strong["comfy"].append("safetensors metadata _quantization_metadata lists %d nvfp4 "
                               "layers" % sum(v == "nvfp4" for v in meta_layers.values()))
    suffixes = collections_count(names)
    _svd.name_evidence(names, suffixes, strong, weak, refused)
    if suffixes.get(".weight_packed") and suffixes.get(".weight_global_scale"):
        weak["compressed-tensors"].append("tensor names: %d <layer>.weight_packed, "
                                          "weight_global_scale" % suffixes[".weight_global_scale"])
    both = [n for n in names if n.endswith(".weight_scale_2")
            and names.get(n[:-len("_scale_2")], None) is not None
            and names[n[:-len("_scale_2")]].dtype == "U8"]
    if both:
        why = ("tensor names: %d <layer>.weight (U8), weight_scale, weight_scale_2 (ModelOpt and "
               "comfy name theirs alike)" % len(both))
        if not suffixes.get(".svdquant_lora_a"):  # else they are NVFP4_SVD's residual weights
            weak["modelopt"].append(why)
            weak["comfy"].append(why)
    return strong, weak, refused


def collections_count(names):
    """'.suffix' -> how many names end with it (the part after the last dot)."""
    out = {}
    for n in names:
        s = n[n.rfind("."):] if "." in n else n
        out[s] = out.get(s, 0) + 1
    return out


def _modelopt_algo(algo, why, strong, refused):
    if algo == "NVFP4":
        strong["modelopt"].append(why)
    elif algo == "NVFP4_SVD":
        strong["modelopt-svd"].append(why)
    elif isinstance(algo, str) and "NVFP4" in algo.upper():
        refused.append("%s: ModelOpt %s, not supported (only NVFP4 and NVFP4_SVD)" % (why, algo))
    else:
        refused.append("%s: not NVFP4" % why)


def detect(ckpt, format="auto"):
    """(format, [reasons]) for an opened checkpoint (or a path). format: "auto" or one of
    FORMATS (then checked against the evidence: a refusal still refuses). Errors:
    CheckpointError - unsupported (NVFP4_AWQ, Nunchaku INT4, not NVFP4), ambiguous (the
    candidates and their evidence listed), Nunchaku by tensor names only (format= decides), or
    nothing found."""
    ckpt = open_checkpoint(ckpt)
    if _is_ours(ckpt):
        if format not in ("auto", OURS):
            raise CheckpointError("%s: this is a converted file of ours (metadata format = %r), "
                                  "not %s" % (ckpt.path, OURS, format))
        return OURS, ["safetensors metadata format = %r (written by convert)" % OURS]
    if format not in ("auto",) + tuple(FORMATS):
        raise CheckpointError("format must be one of auto, %s, got %r"
                              % (", ".join(FORMATS), format))
    strong, weak, refused = _evidence(ckpt)
    if refused:
        raise CheckpointError("%s: not supported: %s" % (ckpt.path, "; ".join(refused)))
    if format != "auto":
        why = ["given (format=%r)" % format] + strong[format] + weak[format]
        others = [f for f in FORMATS if f != format and strong[f]]
        if others:
            raise CheckpointError("%s: format %r given, but the checkpoint says %s: %s"
                                  % (ckpt.path, format, others[0], "; ".join(strong[others[0]])))
        if not (strong[format] or weak[format]):
            raise CheckpointError("%s: no %s layers found (%s)" % (ckpt.path, FORMATS[format],
                                                                  _expected_names(format)))
        return format, why
    for level, table in (("", strong), (" (no config file or marker: tensor names only)", weak)):
        found = [f for f in FORMATS if table[f]]
        if found == ["nunchaku"] and level:
            raise CheckpointError(
                "%s: Nunchaku's tensor names (%s) without the safetensors metadata "
                "quantization_config Nunchaku writes: the names do not say the layout (vLLM-Omni "
                "writes them row-major); pass format='nunchaku' (--format nunchaku) if the file "
                "is Nunchaku's own" % (ckpt.path, "; ".join(weak["nunchaku"])))
        if len(found) == 1:
            f = found[0]
            return f, strong[f] + weak[f] + ([level.strip(" ()")] if level else [])
        if len(found) > 1:
            raise CheckpointError(
                "%s: ambiguous format%s: candidates %s; pass format= (--format) to choose"
                % (ckpt.path, level, "; ".join("%s (%s)" % (f, "; ".join(table[f]))
                                               for f in found)))
    raise CheckpointError("%s: no NVFP4 layers found: none of %s" % (
        ckpt.path, "; ".join("%s (%s)" % (FORMATS[f], _expected_names(f)) for f in FORMATS)))


def _expected_names(fmt):
    return {"modelopt": "<layer>.weight U8, .weight_scale F8_E4M3, .weight_scale_2 F32",
            "compressed-tensors": "<layer>.weight_packed U8, .weight_scale F8_E4M3, "
                                  ".weight_global_scale F32",
            "comfy": "<layer>.weight U8, .weight_scale F8_E4M3 (128x4), .weight_scale_2 F32, "
                     ".comfy_quant",
            "modelopt-svd": "ModelOpt NVFP4's tensors, .pre_quant_scale, .svdquant_lora_a, "
                            ".svdquant_lora_b",
            "nunchaku": "<layer>.qweight I8, .wscales F8_E4M3, .smooth_factor, .proj_down, "
                        ".proj_up"}[fmt]


def list_layers(ckpt, format=None):
    """(format, [layer names], {skipped layer: why}) of a checkpoint (format: detected when
    None or "auto")."""
    ckpt = open_checkpoint(ckpt)
    fmt = format if format not in (None, "auto") else detect(ckpt)[0]
    if fmt == OURS:
        return fmt, sorted(n[:-len(".o_weight_q")] for n in ckpt.tensors
                           if n.endswith(".o_weight_q")), {}
    found, skipped = layer_names(fmt, ckpt.tensors, ckpt.comfy_metadata_layers())
    return fmt, found, skipped


def convert_layer(ckpt, layer, format=None):
    """One layer -> ConvertedLayer (our operands, NumPy). CheckpointError for a layer that
    contradicts its format (the tensor and the problem named)."""
    ckpt = open_checkpoint(ckpt)
    fmt = format if format not in (None, "auto") else detect(ckpt)[0]
    if fmt == OURS:
        return load_layer(ckpt, layer)
    return _cf.convert_layer(fmt, ckpt.tensors, layer)


def manifest_path(dst):
    """DST's manifest: <DST without .safetensors>.manifest.json."""
    stem = dst[:-len(".safetensors")] if dst.endswith(".safetensors") else dst
    return stem + ".manifest.json"


def _progress(items, enabled, label):
    if not enabled:
        return items
    try:
        from tqdm import tqdm
        return tqdm(items, desc=label, unit="layer", file=sys.stderr)
    except ImportError:
        def plain():
            for i, x in enumerate(items):
                print("%s: [%d/%d] %s" % (label, i + 1, len(items), x), file=sys.stderr,
                      flush=True)
                yield x
        return plain()


def convert(src, dst, *, format="auto", layers=None, progress=False):
    """Converts every NVFP4 layer of `src` (whose name matches the regular expression `layers`,
    re.search, when given) to our layout: one safetensors file `dst` and its manifest. All
    layers are converted before anything is written: a refused layer writes nothing. Returns
    the manifest (a dict)."""
    ckpt = open_checkpoint(src)
    fmt, why = detect(ckpt, format)
    if fmt == OURS:
        raise CheckpointError("%s: already converted (metadata format = %r)" % (src, OURS))
    _, names, skipped = list_layers(ckpt, fmt)
    if layers is not None:
        try:
            pattern = re.compile(layers)
        except re.error as e:
            raise CheckpointError("layers: not a regular expression: %r (%s)" % (layers, e)) \
                from None
        names = [n for n in names if pattern.search(n)]
    if not names:
        raise CheckpointError("%s: no %s layers%s" % (src, FORMATS[fmt], "" if layers is None
                                                      else " match %r" % layers))
    tensors, entries = {}, []
    for name in _progress(names, progress, "convert"):
        c = _cf.convert_layer(fmt, ckpt.tensors, name)
        tensors[name + ".o_weight_q"] = c.o_weight_q
        tensors[name + ".o_weight_sf"] = c.o_weight_sf
        tensors[name + ".o_weight_global_scale"] = c.o_weight_global_scale
        if c.act_global_scale is not None:
            tensors[name + ".act_global_scale"] = c.act_global_scale
        if c.act_smooth is not None:
            tensors[name + ".act_smooth"] = c.act_smooth
        if c.lora_down is not None:
            tensors[name + ".lora_down"] = ("BF16", c.lora_down)
            tensors[name + ".lora_up"] = ("BF16", c.lora_up)
        entries.append({"name": name, "out_features": c.out_features,
                        "in_features": c.in_features,
                        "o_weight_global_scale": float(c.o_weight_global_scale[0]),
                        "act_global_scale": (None if c.act_global_scale is None
                                             else float(c.act_global_scale[0])),
                        "calibration_required": c.act_global_scale is None,
                        "act_smooth": c.act_smooth is not None,
                        "lowrank": 0 if c.lora_down is None else int(c.lora_down.shape[0]),
                        "notes": c.notes})
    st.save(dst, tensors, metadata={"format": OURS})
    with open(dst, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    manifest = {"format": OURS, "file": os.path.basename(dst), "sha256": digest,
                "source": {"path": os.path.abspath(ckpt.path), "format": fmt,
                           "format_name": FORMATS[fmt], "detected_because": why,
                           "files": [os.path.basename(f) for f in ckpt.files]},
                "layers_regex": layers, "layers": entries,
                "skipped_layers": skipped,
                "conversion": "docs/contract.md section 5.1: codes and block scales bit for "
                              "bit; a dequantize-direction global scale s becomes RN(1/s); "
                              "SVDQuant's smoothing and branch as act_smooth, lora_down, "
                              "lora_up (checkpoint_svd.py)"}
    with open(manifest_path(dst), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    return manifest


def load_converted(path):
    """Our converted file -> {layer: ConvertedLayer}, checked (shapes, dtypes, UE4M3 bytes,
    global scales finite and > 0)."""
    ckpt = open_checkpoint(path)
    if not _is_ours(ckpt):
        raise CheckpointError("%s: not a converted file of ours (no metadata format = %r)"
                              % (ckpt.path, OURS))
    return {name: load_layer(ckpt, name) for name in list_layers(ckpt, OURS)[1]}


def load_layer(path, layer=None, format="auto"):
    """One layer, from our converted file or any supported checkpoint, as a ConvertedLayer.
    layer None: the only layer (else an error listing them)."""
    ckpt = open_checkpoint(path)
    fmt, names, _ = list_layers(ckpt, format)
    if layer is None:
        if len(names) != 1:
            raise CheckpointError("%s: name the layer: %d layers (%s)" % (
                ckpt.path, len(names), ", ".join(names[:8]) + (", ..." if len(names) > 8
                                                                else "")))
        layer = names[0]
    if layer not in names:
        raise CheckpointError("%s: no layer %r; layers: %s" % (
            ckpt.path, layer, ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")))
    if fmt != OURS:
        return _cf.convert_layer(fmt, ckpt.tensors, layer)
    t = ckpt.tensors
    q = _cf._need(t, layer, ".o_weight_q", "U8", "o_weight_q")
    sf = _cf._need(t, layer, ".o_weight_sf", "U8", "o_weight_sf")
    if len(q.shape) != 2:
        raise CheckpointError("tensor %r must be 2-D [N, K/2], got %s" % (layer + ".o_weight_q",
                                                                          list(q.shape)))
    n, k = q.shape[0], q.shape[1] * 2
    want = _cf.swizzled_shape(n, k // 16)
    if sf.shape != want:
        raise CheckpointError("tensor %r must have shape %s for o_weight_q %s, got %s"
                              % (layer + ".o_weight_sf", list(want), list(q.shape),
                                 list(sf.shape)))
    _cf._check_scale_bytes(layer + ".o_weight_sf", np.asarray(sf.array))
    gs = _cf._scalar(t, layer, ".o_weight_global_scale", "o_weight_global_scale")
    act = _cf._scalar(t, layer, ".act_global_scale", "act_global_scale", optional=True)
    smooth, down, up = _svd.read_options(t, layer, n, k)
    return ConvertedLayer(layer, OURS, np.array(q.array), np.array(sf.array),
                          np.array([gs], dtype=np.float32),
                          None if act is None else np.array([act], dtype=np.float32),
                          n, k, ["read from our converted file"], smooth, down, up)


def state_dict(path, layer=None, format="auto"):
    """A layer's buffers as the modules name them (o_weight_q, o_weight_sf,
    o_weight_global_scale and, when the checkpoint has them, act_global_scale, act_smooth,
    lora_down, lora_up): torch tensors, for NVFP4GatedResidualLinear.load_state_dict."""
    c = load_layer(path, layer, format)
    out = {}
    for name in _BUFFERS + _OPTIONS:
        t = torch_buffer(c, name)
        if t is not None:
            out[name] = t
    return out


def torch_buffer(c, name):
    """A ConvertedLayer's array `name` as the module's torch buffer (bf16 for lora_*), or None."""
    import torch
    a = getattr(c, name)
    if a is None:
        return None
    if name in ("lora_down", "lora_up"):
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy())
