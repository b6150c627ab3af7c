"""Nunchaku SVDQuant NVFP4 checkpoints -> this package's operands (format "nunchaku"; the
ModelOpt NVFP4_SVD adapter and the shared helpers are checkpoint_svd.py). NumPy only.

Sources (read, not copied; on 2026-12-02): nunchaku-tech/nunchaku
3a3cc3d0649a7d5bc575dc899a03f2d4456df181, mit-han-lab/deepcompressor
69f3473f5e1c1504bae35cc50c7858ef900a9b17; for comparison vllm-project/vllm-omni#3830's
converter to row-major (vllm_omni/quantization/tools/convert_nunchaku_to_svdquant.py), which
copies bias / smooth_factor / wcscales through as "layout-agnostic": they are in pack_scale's
order (below), right only for a consumer that is Nunchaku's kernel again.

Nunchaku SVDQuant NVFP4 (nunchaku/models/linear.py SVDQW4A4Linear, precision "nvfp4"; written
by deepcompressor backend/nunchaku/convert.py and utils.py, packed by NunchakuWeightPacker as in
nunchaku/lora/flux/packer.py; nunchaku's loaders rename smooth(_orig) -> smooth_factor(_orig),
lora_down / lora_up -> proj_down / proj_up). Detected by the safetensors metadata
"quantization_config" nunchaku/merge_safetensors.py writes: {"method": "svdquant", "weight":
{"dtype": "fp4_e2m1_all", "scale_dtype": [null, "fp8_e4m3_nan"], "group_size": 16}, ...}.
- `qweight` I8 [N, K/2]: e2m1 codes (deepcompressor fp_quantize: the standard code) in
  `pack_weight`'s MMA-fragment order (warp_n 128; N, K padded to multiples of 128): n = 128
  n_tile + 16 n_pack + 8 n_elem + n_lane, k = 64 k_tile + 32 k_elem + 8 k_lane + reg, stored as
  (n_tile, k_tile, n_pack, n_lane, k_lane, n_elem, k_elem, reg), 8 codes per little-endian
  int32, reg 0 lowest: each byte holds an even k (low nibble) and k + 1, so unpacking moves
  whole bytes. `wscales` F8_E4M3 [K/16, N]: `pack_micro_scale`'s order, n = 128 n_tile + 32 pack
  + 8 quarter + lane8, g = 4 g_tile + g_in, stored as (n_tile, g_tile, lane8, quarter, pack,
  g_in). 16-bit wscales are INT4 SVDQuant: not NVFP4.
- `wtscale` [1] (absent: 1.0, models/transformers/utils.py patch_scale_key): alpha, which
  MULTIPLIES the accumulator (src/kernels/zgemm/gemm_w4a4.cuh gemm_w4a4_fp4_block `*= alpha`):
  the dequantize direction, w_gs = RN(1 / wtscale) (contract 5.1).
- `wcscales` [N] (absent: all ones, patch_scale_key `torch.ones_like`): a per-output-channel
  factor on the 16-bit result (gemm_base.cuh EpilogueBias `__hmul2`), written by deepcompressor
  only for a per-channel first-level scale (convert.py `scale_key`); its NVFP4 config
  (examples/diffusion/configs/svdquant/nvfp4.yaml) is per-tensor. No operand carries it: all
  ones accepted, anything else refused. Our op has no bias: a nonzero `bias` is refused.
- `bias`, `wcscales` [N], `smooth_factor`, `smooth_factor_orig` [K]: 16-bit, in `pack_scale`'s
  channel order (c = 128 tile + 16 a + 8 b + 2 c2 + d stored as (tile, a, c2, b, d): what
  load_wscale / broadcast_wscale read).
- smoothing DIVIDES: x / smooth_factor in 16 bits (gemm_w4a4.cuh EpilogueQuantize `h2div`: an f32
  `__fdividef`, then a 16-bit rounding). smooth_factor_orig is unused at run time (linear.py);
  it differs where deepcompressor folded the smoothing into the previous layer (convert.py
  smooth_fused: smooth_factor all ones), whose output must then be this layer's input.
- `proj_down` [K, r], `proj_up` [N, r]: `pack_lowrank_weight`'s 16 x 16 packs stored as (c_pack,
  r_pack, n_lane, k_lane, n_elem, k_elem, reg); down: k = 16 c_pack + 8 k_elem + 2 k_lane + reg,
  j = 16 r_pack + 8 n_elem + n_lane; up: n and j the other way round. The down-projection reads
  the UNSMOOTHED x (quantize_w4a4_fuse_lora_kernel: EpilogueLoraDown on the loaded x, then
  EpilogueQuantize divides); convert.py divides lora_down by the smoothing before packing.
- activations: per 16-block UE4M3 scales of block_amax / 6, no global scale (gemm_w4a4.cuh
  quantize_w4a4_fp4_from_fpsum_warp; nvfp4.yaml `ipts: static: false`): calibration required.
Conversion: codes and block scales bit for bit (permutations); w_gs = RN(1 / wtscale);
act_smooth = RN(1 / s), one f32 division (|act_smooth s - 1| <= 2^-24, so x' = bf16(f32(x) *
act_smooth) is one of the two bf16 neighbours of x / s, as Nunchaku's bf16(x / s) is);
lora_down[j, k] = bf16(proj_down[k, j] * s_k), the exact product rounded once (relative 2^-8);
lora_up = proj_up. With smooth_factor all ones: no act_smooth, lora_down = proj_down^T bit for
bit. Then elementwise, W_res = e2m1 * wscales * wtscale, D, U = proj_down [r, K], proj_up
unpacked:
    |W_eff - W_eff_src| <= (2^-23 + 2^-48) |W_res| / |s| + (2^-8 + 2^-24 + 2^-32) (|U| @ |D|)
Tested: python/tests/checkpoints_svd_test.py.
"""

import numpy as np

from . import bf16 as _bf16
from . import checkpoint_formats as cf
from .checkpoint_formats import CheckpointError
from .checkpoint_svd import (_FLOAT, _bf16_rn, _check_rank, _finite, _get, _pair, _refuse_bias,
                             _values)

__all__ = ["convert", "source_dequantize", "unpack_nunchaku_block_scales",
           "unpack_nunchaku_channels", "unpack_nunchaku_codes", "unpack_nunchaku_lowrank"]

_TILE = 128  # pack_weight's warp_n: N and K come in multiples of it

# ---- Nunchaku's packed orders, undone (docstring) ----------------------------------------------


def unpack_nunchaku_codes(qweight, n, k):
    """qweight bytes [N, K/2] in pack_weight's fragment order -> ours [N, K/2] (even k low)."""
    b = np.asarray(qweight).view(np.uint8).reshape(n // 128, k // 64, 8, 8, 4, 2, 2, 4)
    # (n_tile, k_tile, n_pack, n_lane, k_lane, n_elem, k_elem, byte) -> row-major [n][k/2]
    return np.ascontiguousarray(b.transpose(0, 2, 5, 3, 1, 6, 4, 7).reshape(n, k // 2))


def unpack_nunchaku_block_scales(wscales, n, k):
    """wscales [K/16, N] in pack_micro_scale's order -> linear [N, K/16] (uint8)."""
    b = np.asarray(wscales).view(np.uint8).reshape(n // 128, k // 64, 8, 4, 4, 4)
    # (n_tile, g_tile, lane8, quarter, pack, g_in) -> (n_tile, pack, quarter, lane8 | g_tile, g_in)
    return np.ascontiguousarray(b.transpose(0, 4, 3, 2, 1, 5).reshape(n, k // 16))


def unpack_nunchaku_channels(v, c):
    """A 16-bit per-channel vector [C] in pack_scale's order -> channel order."""
    b = np.asarray(v).reshape(c // 128, 8, 4, 2, 2)  # (tile, a, c2, b, d)
    return np.ascontiguousarray(b.transpose(0, 1, 3, 2, 4).reshape(c))


def unpack_nunchaku_lowrank(w, rows, r, down):
    """proj_down [K, r] -> [r, K] (down=True), or proj_up [N, r] -> [N, r], from
    pack_lowrank_weight's order."""
    a = np.asarray(w).reshape(rows // 16, r // 16, 8, 4, 2, 2, 2)
    # (c_pack, r_pack, n_lane, k_lane, n_elem, k_elem, reg)
    if down:  # j = 16 r_pack + 8 n_elem + n_lane; k = 16 c_pack + 8 k_elem + 2 k_lane + reg
        return np.ascontiguousarray(a.transpose(1, 4, 2, 0, 5, 3, 6).reshape(r, rows))
    return np.ascontiguousarray(a.transpose(0, 4, 2, 1, 5, 3, 6).reshape(rows, r))


# ---- conversion ---------------------------------------------------------------------

def _nunchaku_vector(tensors, name, what, c, optional=False):
    t = _get(tensors, name, what, ("BF16", "F16"), [(c,)], optional=optional,
             shape_text="[%d]" % c)
    if t is None:
        return None
    v = unpack_nunchaku_channels(_values(t), c)
    _finite(name, what, v)
    return v


def convert(tensors, layer):
    """One Nunchaku NVFP4 layer -> checkpoint_formats.ConvertedLayer (the docstring's rules)."""
    qn = layer + ".qweight"
    q = _get(tensors, qn, "packed E2M1 codes, Nunchaku's fragment order", ("I8", "U8"))
    if len(q.shape) != 2 or q.shape[0] < 1 or q.shape[1] < 1:
        raise CheckpointError("tensor %r (packed E2M1 codes) must be 2-D [N, K/2], got shape %s"
                              % (qn, list(q.shape)))
    n, k = q.shape[0], q.shape[1] * 2
    if n % _TILE or k % _TILE:
        raise CheckpointError("tensor %r (packed E2M1 codes) [N, K/2] = %s: Nunchaku packs codes "
                              "in 128 x 128 tiles (N and K padded to multiples of 128), got N = "
                              "%d, K = %d" % (qn, list(q.shape), n, k))
    sn = layer + ".wscales"
    s = tensors.get(sn)
    if s is not None and s.dtype in ("BF16", "F16"):
        raise CheckpointError("tensor %r is %s: Nunchaku INT4 SVDQuant (16-bit group-64 scales), "
                              "not NVFP4" % (sn, s.dtype))
    s = _get(tensors, sn, "block scales, Nunchaku's fragment order", ("F8_E4M3",),
             [(k // 16, n)], shape_text="[K/16, N] = [%d, %d] for codes %s"
             % (k // 16, n, list(q.shape)))
    raw = np.asarray(s.array, dtype=np.uint8)
    cf._check_scale_bytes(sn, raw)
    notes = ["codes and block scales unpacked from Nunchaku's MMA-fragment order (byte "
             "permutations), block scales swizzled (contract section 4)"]
    a = _get(tensors, layer + ".wtscale", "per-tensor alpha, multiplied into the accumulator",
             _FLOAT, [(), (1,)], optional=True, shape_text="[] or [1]")
    if a is None:
        alpha = np.float32(1.0)
        notes.append("no %s.wtscale: alpha 1.0 (Nunchaku's default)" % layer)
    else:
        alpha = np.float32(_values(a).reshape(-1)[0])
        if not (np.isfinite(alpha) and alpha > 0):
            raise CheckpointError("tensor %r (alpha) must be finite and > 0, got %r"
                                  % (layer + ".wtscale", float(alpha)))
    gs = cf._our_direction(layer + ".wtscale", "alpha", "o_weight_global_scale", alpha, True,
                           notes)
    wc = _nunchaku_vector(tensors, layer + ".wcscales", "per-output-channel weight scale", n,
                          optional=True)
    if wc is not None:
        if (wc != 1).any():
            i = int(np.flatnonzero(wc != 1)[0])
            raise CheckpointError("tensor %r (per-output-channel weight scale) must be all 1: no "
                                  "operand of this op scales output channels, got %r at [%d] "
                                  "(%d of %d not 1)" % (layer + ".wcscales", float(wc[i]), i,
                                                        int((wc != 1).sum()), n))
        notes.append("%s.wcscales all 1" % layer)
    _refuse_bias(tensors, layer, n, notes, unpack_nunchaku_channels)
    smn = layer + ".smooth_factor"
    sm = _nunchaku_vector(tensors, smn, "smoothing divisor", k)
    orig = _nunchaku_vector(tensors, layer + ".smooth_factor_orig", "original smoothing", k,
                            optional=True)
    if orig is not None and not np.array_equal(orig, sm):
        notes.append("%s.smooth_factor_orig differs from smooth_factor (unused at run time): "
                     "Nunchaku folded the smoothing into the layer before this one, whose "
                     "output is this layer's input" % layer)
    smooth = None
    if (sm != 1).any():
        with np.errstate(divide="ignore", over="ignore"):
            rcp = np.float32(1) / sm.astype(np.float32)
        bad = ~np.isfinite(rcp) | (rcp == 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise CheckpointError("tensor %r (smoothing divisor) must be nonzero with a finite "
                                  "float32 reciprocal, got %r at [%d]" % (smn, float(sm[i]), i))
        smooth = rcp
        notes.append("act_smooth = RN(1 / %s) (Nunchaku divides x by it; we multiply)" % smn)
    else:
        notes.append("%s all 1: no act_smooth" % smn)
    dn, un = layer + ".proj_down", layer + ".proj_up"
    if not _pair(tensors, layer, dn, un, "K, r"):
        notes.append("no low-rank branch (no %s / .proj_up)" % dn)
        down = up = None
    else:
        d = _get(tensors, dn, "low-rank down-projection, packed", ("BF16", "F16"))
        if len(d.shape) != 2 or d.shape[0] != k:
            raise CheckpointError("tensor %r (low-rank down-projection, packed) must have shape "
                                  "[K, r] = [%d, r] (K from %s), got %s" % (dn, k, qn,
                                                                           list(d.shape)))
        r = d.shape[1]
        _check_rank(dn, "low-rank down-projection", d.shape, r, "[K, r] =")
        u = _get(tensors, un, "low-rank up-projection, packed", ("BF16", "F16"), [(n, r)],
                 shape_text="[N, r] = [%d, %d] (N from %s, r from %s)" % (n, r, qn, dn))
        dv = unpack_nunchaku_lowrank(_values(d), k, r, down=True)  # [r, K], reads raw x
        uv = unpack_nunchaku_lowrank(_values(u), n, r, down=False)
        _finite(dn, "low-rank down-projection", dv)
        _finite(un, "low-rank up-projection", uv)
        if smooth is None and d.dtype == "BF16":
            down = _bf16.from_float32(dv.astype(np.float32))  # exact: a permutation of bf16
        else:
            down = _bf16_rn(dn, "low-rank down-projection x smoothing",
                            dv * (1.0 if smooth is None else sm[None, :]))
            notes.append("lora_down[j, k] = bf16(%s[k, j] * smooth_factor[k]) (it reads the "
                         "unsmoothed x; ours reads x'), rounded once, nearest-even" % dn)
        up = (_bf16.from_float32(uv.astype(np.float32)) if u.dtype == "BF16"
              else _bf16_rn(un, "low-rank up-projection", uv))
        notes.append("lora_down, lora_up from %s, %s unpacked (rank %d)" % (dn, un, r))
    notes.append("act_global_scale: calibration required (Nunchaku quantizes activations per "
                 "block with no global scale)")
    q_ours = unpack_nunchaku_codes(q.array, n, k)
    linear = unpack_nunchaku_block_scales(raw, n, k)
    return cf.ConvertedLayer(layer, "nunchaku", q_ours, cf.swizzle(linear),
                             np.array([gs], dtype=np.float32), None, n, k, notes, smooth, down, up)


def source_dequantize(tensors, layer):
    """The layer's effective weight by Nunchaku's own arithmetic, exact in float64 [N, K]:
    e2m1 wscales wtscale wcscales / smooth_factor (columns) + proj_up @ proj_down (unpacked)."""
    q = tensors[layer + ".qweight"]
    n, k = q.shape[0], q.shape[1] * 2
    codes = cf._codes(unpack_nunchaku_codes(q.array, n, k))
    sf = cf.e4m3_value(unpack_nunchaku_block_scales(tensors[layer + ".wscales"].array, n, k))
    w = (cf.E2M1_VALUES[codes].reshape(n, k // 16, 16) * sf[:, :, None]).reshape(n, k)
    if layer + ".wtscale" in tensors:
        w = w * _values(tensors[layer + ".wtscale"]).reshape(-1)[0]
    if layer + ".wcscales" in tensors:
        w = w * unpack_nunchaku_channels(_values(tensors[layer + ".wcscales"]), n)[:, None]
    w = w / unpack_nunchaku_channels(_values(tensors[layer + ".smooth_factor"]), k)[None, :]
    if layer + ".proj_down" in tensors:
        d = tensors[layer + ".proj_down"]
        r = d.shape[1]
        w = w + (unpack_nunchaku_lowrank(_values(tensors[layer + ".proj_up"]), n, r, False)
                 @ unpack_nunchaku_lowrank(_values(d), k, r, True))
    return w
