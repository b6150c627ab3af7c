#!/usr/bin/env python3
"""Writes small NVFP4 checkpoints in the formats users have, made from synthetic bf16 layers by
each format's published recipe (written here in NumPy from the conventions its sources state;
python/minimax_h3_nvfp4/checkpoint_formats.py, checkpoint_svd.py and checkpoint_nunchaku.py cite
them), for python/tests/checkpoints_test.py and checkpoints_svd_test.py (issue 31).

    /usr/bin/python3 python/tests/make_checkpoint_fixtures.py OUT_DIR [--writer auto|real|ours]
    cp -r OUT_DIR/* testdata/checkpoints/        # then commit

--writer real: the real `safetensors` package (with torch, for the F8_E4M3 and BF16 dtypes);
ours: minimax_h3_nvfp4.safetensors_io; auto (default): real where importable. Every file has
at most one metadata key, so both writers give the same bytes (safetensors_io's docstring says
why); the test runs this script with ours and compares with the committed files.

OUT_DIR/
  modelopt/hf_quant_config.json, modelopt/model.safetensors           ModelOpt NVFP4
  compressed-tensors/config.json, compressed-tensors/model.safetensors nvfp4-pack-quantized
  comfy/model.safetensors                                              comfy-kitchen NVFP4
  modelopt-svd/config.json, modelopt-svd/model.safetensors             ModelOpt NVFP4_SVD
  nunchaku/model.safetensors      Nunchaku SVDQuant NVFP4 (metadata: quantization_config only,
                                  one of the four keys nunchaku's merge_safetensors writes)
  expected/<format>.safetensors   the same layers in our layout, made here independently of the
                                  package's converter (low-nibble-first codes, torchao-style
                                  to_blocked swizzle, RN(1/x) of dequantize-direction scales;
                                  SVDQuant: the operands taken before Nunchaku's packing, its
                                  smoothing inverted, its down-projection times the smoothing):
                                  what `convert` must write, bit for bit
  reference.safetensors           the bf16 layers (w_attn, w_ff [256, 512], w_ff200 [200, 512])
                                  and a calibration sample x [64, 512] (bf16)
  MANIFEST.json                   sha256 of every file, the writer and its versions
"""

import hashlib
import json
import os
import sys

import numpy as np

F32 = np.float32
N, K, M = 256, 512, 64
E2M1_GRID = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=F32)


def bf16_round(x):
    """float32 -> float32 rounded to bf16, nearest even (finite inputs)."""
    u = np.ascontiguousarray(x, dtype=F32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(F32)


def bf16_bits(x):
    return (np.ascontiguousarray(x, dtype=F32).view(np.uint32) >> 16).astype(np.uint16)


def _e4m3_values():
    b = np.arange(127)
    e, m = b >> 3, b & 7
    return np.where(e == 0, m * 2.0 ** -9, (1 + m / 8.0) * 2.0 ** (e - 7.0))


E4M3 = _e4m3_values()  # codes 0x00..0x7E, increasing


def e4m3(v):
    """torch's float -> float8_e4m3fn cast for v >= 0: nearest, ties to the even code; 448 <
    v < 464 -> 448; beyond -> NaN (0x7F)."""
    v = np.asarray(v, dtype=np.float64)
    hi = np.clip(np.searchsorted(E4M3, v, side="left"), 0, 126)
    lo = np.clip(hi - 1, 0, 126)
    dlo, dhi = np.abs(v - E4M3[lo]), np.abs(E4M3[hi] - v)
    code = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(lo % 2 == 0, lo, hi)))
    code = np.where(v >= 464, 0x7F, np.where(v > 448, 0x7E, code))
    return code.astype(np.uint8)


def e2m1_rne(v):
    """float32 -> E2M1 code, nearest, ties to even, saturating, the sign bit kept."""
    a = np.abs(v)
    mag = np.select([a <= 0.25, a < 0.75, a <= 1.25, a < 1.75, a <= 2.5, a < 3.5, a <= 5],
                    [0, 1, 2, 3, 4, 5, 6], 7)
    return (mag | (np.signbit(v).astype(np.int64) << 3)).astype(np.uint8)


def pack(codes, hi_first=False):
    even, odd = codes[:, 0::2], codes[:, 1::2]
    return ((even << 4) | odd if hi_first else (odd << 4) | even).astype(np.uint8)


def to_blocked(scales):
    """torchao's / comfy-kitchen's to_blocked: [R, C] -> [round_up(R,128), round_up(C,4)]."""
    r, c = scales.shape
    rb, cb = -(-r // 128), -(-c // 4)
    padded = np.zeros((rb * 128, cb * 4), dtype=np.uint8)
    padded[:r, :c] = scales
    blocks = padded.reshape(rb, 128, cb, 4).transpose(0, 2, 1, 3)
    return blocks.reshape(-1, 4, 32, 4).transpose(0, 2, 1, 3).reshape(rb * 128, cb * 4)


def blocks(w):
    return w.reshape(w.shape[0], -1, 16)


# ---- the formats' recipes -------------------------------------------------------------------

def modelopt(w):
    """NVFP4QTensor.quantize, dynamic path: (weight, weight_scale, weight_scale_2)."""
    amax = F32(np.abs(w).max())
    ws2 = F32(amax / F32(2688.0))
    bamax = np.abs(blocks(w)).max(-1)
    pbs = (bamax / F32(F32(6.0) * ws2)).astype(F32)
    pbs[pbs == 0] = 1.0
    sf = e4m3(np.maximum(pbs, F32(2.0 ** -9)))
    total = (E4M3[sf].astype(F32) * ws2).astype(F32)
    scaled = (blocks(w) / total[:, :, None]).astype(F32).reshape(w.shape)
    a = np.abs(scaled)
    ordinal = np.searchsorted(np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5], F32), a, "left")
    ordinal = ordinal + np.isin(a, np.array([0.75, 1.75, 3.5], F32))
    codes = (ordinal | ((scaled < 0).astype(np.int64) << 3)).astype(np.uint8)
    return pack(codes), sf, ws2


def compressed_tensors(w):
    """NVFP4PackedCompressor.compress after calculate_qparams / generate_gparam:
    (weight_packed, weight_scale, weight_global_scale). generate_gparam's 448 * 6 / amax is
    PyTorch's scalar / tensor, a reciprocal then a product."""
    amax = F32(np.abs(w).max())
    gs = F32(F32(F32(1.0) / amax) * F32(2688.0))
    scales = (np.abs(blocks(w)).max(-1) / F32(6.0)).astype(F32)
    scales = np.minimum((gs * scales).astype(F32), F32(448.0))
    sf = e4m3(scales)
    sf[sf == 0] = 0x20  # scales == 0 -> finfo(float8_e4m3fn).eps = 0.125
    eff = (E4M3[sf].astype(F32) / gs).astype(F32)
    scaled = np.clip((blocks(w) / eff[:, :, None]).astype(F32), -6, 6).reshape(w.shape)
    return pack(e2m1_rne(scaled)), sf, gs


def comfy(w):
    """comfy-kitchen TensorCoreNVFP4Layout.quantize -> quantize_nvfp4 (eager, pad_16x,
    hi_first): (weight, weight_scale swizzled, weight_scale_2). The per-tensor scale is
    amax / 2688 computed in the weight's dtype (bf16), then widened to float32."""
    rows, cols = -(-w.shape[0] // 16) * 16, -(-w.shape[1] // 16) * 16
    wp = np.zeros((rows, cols), dtype=F32)
    wp[:w.shape[0], :w.shape[1]] = w
    pts = bf16_round(np.array([F32(np.abs(w).max()) / F32(2688.0)], F32))[0]
    bscale = (np.abs(blocks(wp)).max(-1) / F32(6.0)).astype(F32)
    sb = np.minimum((bscale / pts).astype(F32), F32(448.0))
    sf = e4m3(sb)
    total = (pts * E4M3[sf].astype(F32)).astype(F32)
    zero = total == 0
    scaled = (blocks(wp) / np.where(zero, F32(1), total)[:, :, None]).astype(F32)
    scaled = np.where(zero[:, :, None], F32(0), scaled)
    scaled = np.clip(scaled, -6, 6).reshape(wp.shape)
    return pack(e2m1_rne(scaled), hi_first=True), to_blocked(sf), pts


def bf16_round64(x):
    """float64 -> float32 holding the bf16 value, one rounding to nearest even (finite inputs,
    bf16's subnormals kept): what torch's float64 .to(bfloat16) computes."""
    x = np.asarray(x, dtype=np.float64)
    e = np.maximum(np.frexp(x)[1], -125)
    return np.ldexp(np.rint(np.ldexp(x, 8 - e)), e - 8).astype(F32)


def svd_split(w, r):
    """ModelOpt's model_calib.svd and deepcompressor's LowRankBranch alike: the float64 SVD,
    lora_b / b.weight = U[:, :r] S[:r], lora_a / a.weight = V^T[:r], each rounded to bf16; the
    residual weight - bf16(b @ a) in bf16. For the same bytes on any machine: each singular
    pair's sign fixed (V^T's largest entry positive; LAPACKs differ there), and b @ a summed in
    float64, where the products of bf16 factors add exactly in any order, then rounded once."""
    u, sv, vt = np.linalg.svd(w.astype(np.float64), full_matrices=False)
    u, sv, vt = u[:, :r], sv[:r], vt[:r]
    sign = np.sign(vt[np.arange(r), np.abs(vt).argmax(1)])
    b, a = bf16_round64(u * (sv * sign)), bf16_round64(vt * sign[:, None])
    return a, b, bf16_round(w - bf16_round64(b.astype(np.float64) @ a.astype(np.float64)))


def modelopt_svd(w, x, r):
    """ModelOpt's svdquant (model_calib.py): awq_lite's smoothing (get_act_scale: mean |x|;
    get_weight_scale: mean of |w| / its block amax; get_scale at alpha 0.5 - awq_lite searches
    alpha by loss, fixed here), pre_quant_scale = 1 / scale in the weight's dtype (bf16), the
    weight times 1 / pqs; the SVD split; NVFP4 of the residual (modelopt()). Returns (weight,
    weight_scale, weight_scale_2, pre_quant_scale bf16 values, lora_a, lora_b)."""
    xs = np.abs(x).astype(np.float64).mean(0).astype(F32)  # float64: no order-dependent sums
    wb = np.abs(blocks(w))
    ws = (wb / (wb.max(-1, keepdims=True) + np.finfo(F32).tiny)).reshape(w.shape)
    ws = ws.astype(np.float64).mean(0).astype(F32)
    sc = np.clip(np.sqrt(xs) / (np.sqrt(ws) + np.finfo(F32).tiny), 1e-4, 1e4)
    sc = (sc / np.sqrt(sc.max() * sc.min())).astype(F32)
    pqs = (F32(1) / sc).astype(F32)
    smoothed = bf16_round(w * (F32(1) / pqs))
    a, b, res = svd_split(smoothed, r)
    q, sf, ws2 = modelopt(res)
    return q, sf, ws2, bf16_round(pqs), a, b


def nunchaku_svd(w, x, r, smooth):
    """deepcompressor's SVDQuant for NVFP4 (examples/diffusion/configs/svdquant/nvfp4.yaml):
    SmoothQuant factors s = max|x|^0.5 / max|w|^0.5 in bf16 (its smoothing at alpha 0.5, not
    its grid search; ones when `smooth` is False), the weight times s, the SVD split, then the
    residual by convert_to_nunchaku_w4x4y16_linear_weight: a per-tensor scale (bf16) =
    amax / (6 * 448), block scales = e4m3(block amax / 6 / scale), codes = fp_quantize (the
    nearest e2m1 value, the first on ties), lora_down divided by s (convert.py). Returns
    (codes [N, K], block scales [N, K/16], wtscale, s, lora_down [r, K] as packed, lora_b)."""
    if smooth:
        s = bf16_round(np.sqrt(np.abs(x).max(0)) / np.sqrt(np.abs(w).max(0)))
    else:
        s = np.ones(w.shape[1], F32)
    a, b, res = svd_split(bf16_round(w * s), r)
    scale = bf16_round(np.array([F32(np.abs(res).max()) / F32(2688.0)], F32))[0]
    sf = e4m3((np.abs(blocks(res)).max(-1) / F32(6.0) / scale).astype(F32))
    scaled = (blocks(res) / scale / E4M3[sf].astype(F32)[:, :, None]).astype(F32)
    book = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6], F32)
    codes = np.abs(scaled.reshape(res.shape)[..., None] - book).argmin(-1).astype(np.uint8)
    down = bf16_round64(a.astype(np.float64) / s.astype(np.float64)[None, :])
    return codes, sf, scale, s, down, b


# Nunchaku's packing (NunchakuWeightPacker, bits 4, warp_n 128): each function is the
# reshape / permute of the published packer, written here in NumPy.

def nun_pack_weight(codes):
    n, k = codes.shape
    w = codes.reshape(n // 128, 8, 2, 8, 1, k // 64, 1, 2, 4, 8)
    w = w.transpose(0, 5, 6, 1, 3, 8, 2, 7, 4, 9).reshape(-1, 8).astype(np.uint32)
    words = sum(w[:, i] << np.uint32(4 * i) for i in range(8)).astype("<u4")
    return words.view(np.uint8).reshape(n, k // 2).view(np.int8)


def nun_pack_micro_scale(sf):
    n, g = sf.shape
    return sf.reshape(n // 128, 1, 4, 4, 8, g // 4, 4).transpose(0, 5, 1, 4, 3, 2, 6).reshape(g, n)


def nun_pack_scale(v):
    c = v.shape[0]
    return v.reshape(c // 128, 1, 8, 2, 4, 2, 1).transpose(0, 6, 1, 2, 4, 3, 5).reshape(c)


def nun_pack_lowrank(w, down):
    if down:
        r, c = w.shape
        w = w.reshape(r // 16, 16, c // 16, 16).transpose(2, 0, 1, 3)
    else:
        c, r = w.shape
        w = w.reshape(c // 16, 16, r // 16, 16).transpose(0, 2, 1, 3)
    w = w.reshape(c // 16, r // 16, 2, 8, 1, 2, 4, 2).transpose(0, 1, 3, 6, 2, 5, 4, 7)
    return w.reshape(c, r)


# ---- the synthetic layers -------------------------------------------------------------------

def synthetic():
    rng = np.random.default_rng(31)
    def weight(n):
        w = rng.standard_normal((n, K)).astype(F32) * F32(0.02)
        w[:, rng.choice(K, 6, replace=False)] *= F32(8.0)  # outlier input channels
        return bf16_round(w)
    x = rng.standard_normal((M, K)).astype(F32)
    x[:, rng.choice(K, 4, replace=False)] *= F32(12.0)
    return {"w_attn": weight(N), "w_ff": weight(N), "w_ff200": weight(200), "x": bf16_round(x)}


def files():
    """{relative path: (tensors {name: (dtype, array)}, metadata or None)}, and configs."""
    ref = synthetic()
    act_amax = F32(np.abs(ref["x"]).max())
    in_scale = F32(act_amax / F32(2688.0))                     # dequantize direction
    in_gscale = F32(F32(F32(1.0) / act_amax) * F32(2688.0))    # generate_gparam's form
    out = {"reference.safetensors": ({k: ("BF16", bf16_bits(v)) for k, v in ref.items()},
                                     None)}
    norm = ("BF16", bf16_bits(np.ones(K, F32)))

    mo, mo_exp = {"norm_out.weight": norm}, {}
    for name, w, inp in (("transformer_blocks.0.attn.to_out.0", ref["w_attn"], True),
                         ("transformer_blocks.0.ff.net.2", ref["w_ff"], False)):
        q, sf, ws2 = modelopt(w)
        mo[name + ".weight"] = ("U8", q)
        mo[name + ".weight_scale"] = ("F8_E4M3", sf)
        mo[name + ".weight_scale_2"] = ("F32", np.array(ws2, F32))
        mo_exp[name + ".o_weight_q"] = ("U8", q)
        mo_exp[name + ".o_weight_sf"] = ("U8", to_blocked(sf))
        mo_exp[name + ".o_weight_global_scale"] = ("F32", np.array([F32(1) / ws2], F32))
        if inp:
            mo[name + ".input_scale"] = ("F32", np.array(in_scale, F32))
            mo_exp[name + ".act_global_scale"] = ("F32", np.array([F32(1) / in_scale], F32))
    out["modelopt/model.safetensors"] = (mo, {"format": "pt"})
    out["expected/modelopt.safetensors"] = (mo_exp, {"format": "minimax_h3_nvfp4"})

    ct, ct_exp = {"norm.weight": norm}, {}
    for name, w in (("blocks.0.attn.to_out.0", ref["w_attn"]), ("blocks.0.ff.down", ref["w_ff"])):
        q, sf, gs = compressed_tensors(w)
        ct[name + ".weight_packed"] = ("U8", q)
        ct[name + ".weight_scale"] = ("F8_E4M3", sf)
        ct[name + ".weight_global_scale"] = ("F32", np.array([gs], F32))
        ct[name + ".input_global_scale"] = ("F32", np.array([in_gscale], F32))
        ct_exp[name + ".o_weight_q"] = ("U8", q)
        ct_exp[name + ".o_weight_sf"] = ("U8", to_blocked(sf))
        ct_exp[name + ".o_weight_global_scale"] = ("F32", np.array([gs], F32))
        ct_exp[name + ".act_global_scale"] = ("F32", np.array([in_gscale], F32))
    out["compressed-tensors/model.safetensors"] = (ct, None)
    out["expected/compressed-tensors.safetensors"] = (ct_exp, {"format": "minimax_h3_nvfp4"})

    marker = lambda fmt: ("U8", np.frombuffer(json.dumps({"format": fmt}).encode(), np.uint8))
    cf = {"diffusion_model.blocks.0.norm.weight": norm,
          # an FP8 layer of the same file: comfy marks it, and it is not ours to convert
          "diffusion_model.blocks.0.attn.qkv.weight": ("F8_E4M3", e4m3(np.full((64, 64), 0.5))),
          "diffusion_model.blocks.0.attn.qkv.weight_scale": ("F32", np.array(0.01, F32)),
          "diffusion_model.blocks.0.attn.qkv.comfy_quant": marker("float8_e4m3fn")}
    cf_exp = {}
    for name, w, inp in (("diffusion_model.blocks.0.attn.out", ref["w_attn"], True),
                         ("diffusion_model.blocks.0.ff.down", ref["w_ff200"], False)):
        q, table, pts = comfy(w)
        cf[name + ".weight"] = ("U8", q)
        cf[name + ".weight_scale"] = ("F8_E4M3", table)
        cf[name + ".weight_scale_2"] = ("F32", np.array(pts, F32))
        cf[name + ".comfy_quant"] = marker("nvfp4")
        low = ((q << 4) | (q >> 4)).astype(np.uint8)
        cf_exp[name + ".o_weight_q"] = ("U8", low)
        cf_exp[name + ".o_weight_sf"] = ("U8", table)
        cf_exp[name + ".o_weight_global_scale"] = ("F32", np.array([F32(1) / pts], F32))
        if inp:
            cf[name + ".input_scale"] = ("F32", np.array(in_scale, F32))
            cf_exp[name + ".act_global_scale"] = ("F32", np.array([F32(1) / in_scale], F32))
    out["comfy/model.safetensors"] = (cf, None)
    out["expected/comfy.safetensors"] = (cf_exp, {"format": "minimax_h3_nvfp4"})

    x = ref["x"]
    ms, ms_exp = {"norm_out.weight": norm}, {}
    name = "transformer_blocks.0.attn.to_out.0"  # SVDQuant: smoothing, rank 32, input_scale
    q, sf, ws2, pqs, a, b = modelopt_svd(ref["w_attn"], x, 32)
    xs_amax = F32(np.abs(bf16_round(x * pqs)).max())  # the input quantizer applies pqs first
    ms.update({name + ".weight": ("U8", q), name + ".weight_scale": ("F8_E4M3", sf),
               name + ".weight_scale_2": ("F32", np.array(ws2, F32)),
               name + ".input_scale": ("F32", np.array(F32(xs_amax / F32(2688.0)), F32)),
               name + ".pre_quant_scale": ("BF16", bf16_bits(pqs)),
               name + ".svdquant_lora_a": ("BF16", bf16_bits(a)),
               name + ".svdquant_lora_b": ("BF16", bf16_bits(b))})
    ms_exp.update({name + ".o_weight_q": ("U8", q), name + ".o_weight_sf": ("U8", to_blocked(sf)),
                   name + ".o_weight_global_scale": ("F32", np.array([F32(1) / ws2], F32)),
                   name + ".act_global_scale": ("F32", np.array(
                       [F32(1) / F32(xs_amax / F32(2688.0))], F32)),
                   name + ".act_smooth": ("F32", pqs.astype(F32)),
                   name + ".lora_down": ("BF16", bf16_bits(a)),
                   name + ".lora_up": ("BF16", bf16_bits(b))})
    name = "transformer_blocks.0.ff.net.2"  # in svdquant's skip_layers: plain NVFP4
    q, sf, ws2 = modelopt(ref["w_ff"])
    ms.update({name + ".weight": ("U8", q), name + ".weight_scale": ("F8_E4M3", sf),
               name + ".weight_scale_2": ("F32", np.array(ws2, F32)),
               name + ".input_scale": ("F32", np.array(in_scale, F32))})
    ms_exp.update({name + ".o_weight_q": ("U8", q), name + ".o_weight_sf": ("U8", to_blocked(sf)),
                   name + ".o_weight_global_scale": ("F32", np.array([F32(1) / ws2], F32)),
                   name + ".act_global_scale": ("F32", np.array([F32(1) / in_scale], F32))})
    out["modelopt-svd/model.safetensors"] = (ms, None)
    out["expected/modelopt-svd.safetensors"] = (ms_exp, {"format": "minimax_h3_nvfp4"})

    awq = "transformer_blocks.0.norm1.linear"  # an AWQ W4A16 layer (adanorm): not ours
    nu = {awq + ".qweight": ("I32", np.zeros((64, 32), np.int32)),
          awq + ".wscales": ("BF16", bf16_bits(np.ones((4, 256), F32))),
          awq + ".wzeros": ("BF16", bf16_bits(np.zeros((4, 256), F32)))}
    nu_exp = {}
    for name, w, r, smooth in (("transformer_blocks.0.attn.to_out.0", ref["w_attn"], 32, True),
                               ("transformer_blocks.0.ff.net.2", ref["w_ff"], 16, False)):
        codes, sf, scale, sm, down, b = nunchaku_svd(w, x, r, smooth)
        nu[name + ".qweight"] = ("I8", nun_pack_weight(codes))
        nu[name + ".wscales"] = ("F8_E4M3", nun_pack_micro_scale(sf))
        nu[name + ".wtscale"] = ("BF16", bf16_bits(np.array([scale], F32)))
        nu[name + ".bias"] = ("BF16", nun_pack_scale(bf16_bits(np.zeros(N, F32))))
        nu[name + ".smooth_factor"] = ("BF16", nun_pack_scale(bf16_bits(sm)))
        nu[name + ".smooth_factor_orig"] = ("BF16", nun_pack_scale(bf16_bits(sm)))
        nu[name + ".proj_down"] = ("BF16", nun_pack_lowrank(bf16_bits(down), down=True))
        nu[name + ".proj_up"] = ("BF16", nun_pack_lowrank(bf16_bits(b), down=False))
        if not smooth:
            nu[name + ".wcscales"] = ("BF16", nun_pack_scale(bf16_bits(np.ones(N, F32))))
        nu_exp[name + ".o_weight_q"] = ("U8", pack(codes))
        nu_exp[name + ".o_weight_sf"] = ("U8", to_blocked(sf))
        nu_exp[name + ".o_weight_global_scale"] = ("F32", np.array([F32(1) / scale], F32))
        if smooth:
            nu_exp[name + ".act_smooth"] = ("F32", (F32(1) / sm).astype(F32))
        # bf16 x bf16 is exact in float32: one rounding to bf16
        nu_exp[name + ".lora_down"] = ("BF16", bf16_bits(bf16_round(down * sm[None, :])))
        nu_exp[name + ".lora_up"] = ("BF16", bf16_bits(b))
    qconf = {"method": "svdquant",
             "weight": {"dtype": "fp4_e2m1_all", "scale_dtype": [None, "fp8_e4m3_nan"],
                        "group_size": 16},
             "activation": {"dtype": "fp4_e2m1_all", "scale_dtype": "fp8_e4m3_nan",
                            "group_size": 16}, "rank": 32}
    out["nunchaku/model.safetensors"] = (nu, {"quantization_config": json.dumps(qconf)})
    out["expected/nunchaku.safetensors"] = (nu_exp, {"format": "minimax_h3_nvfp4"})

    configs = {
        "modelopt/hf_quant_config.json": {
            "producer": {"name": "modelopt", "version": "synthetic (make_checkpoint_fixtures)"},
            "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None,
                             "group_size": 16, "exclude_modules": ["norm_out"]}},
        "modelopt-svd/config.json": {
            "_class_name": "Synthetic",
            "quantization_config": {
                "quant_method": "modelopt", "quant_algo": "NVFP4_SVD",
                "producer": {"name": "modelopt",
                             "version": "synthetic (make_checkpoint_fixtures)"},
                "ignore": ["norm_out"],
                "config_groups": {"group_0": {
                    "input_activations": {"dynamic": False, "num_bits": 4, "type": "float",
                                          "group_size": 16},
                    "weights": {"dynamic": False, "num_bits": 4, "type": "float",
                                "group_size": 16},
                    "has_zero_point": False, "pre_quant_scale": True, "targets": ["Linear"],
                    "lora_rank": 32}}}},
        "compressed-tensors/config.json": {
            "architectures": ["Synthetic"],
            "quantization_config": {
                "quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
                "quantization_status": "compressed", "ignore": ["norm"],
                "config_groups": {"group_0": {
                    "targets": ["Linear"], "format": "nvfp4-pack-quantized",
                    "weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group",
                                "group_size": 16, "symmetric": True, "dynamic": False},
                    "input_activations": {"num_bits": 4, "type": "float",
                                          "strategy": "tensor_group", "group_size": 16,
                                          "symmetric": True, "dynamic": "local"}}}}},
    }
    return out, configs


def _writer(kind):
    if kind in ("auto", "real"):
        try:
            import safetensors.torch
            import torch
            def save(path, tensors, metadata):
                conv = {}
                for name, (dtype, a) in tensors.items():
                    # np.ascontiguousarray would make a 0-d scalar [1] (it returns ndim >= 1).
                    a = np.array(a, order="C", copy=True)
                    if dtype == "BF16":
                        t = torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
                    elif dtype == "F8_E4M3":
                        t = torch.from_numpy(a.copy()).view(torch.float8_e4m3fn)
                    else:
                        t = torch.from_numpy(a.copy())
                    conv[name] = t
                safetensors.torch.save_file(conv, path, metadata=metadata)
            return save, "safetensors %s, torch %s" % (safetensors.__version__, torch.__version__)
        except ImportError as e:
            if kind == "real":
                raise SystemExit("make_checkpoint_fixtures: --writer real needs safetensors "
                                 "and torch (%s)" % e)
    try:
        from minimax_h3_nvfp4 import safetensors_io
    except ImportError:  # the source tree without the built package: the file alone (NumPy)
        import importlib.util
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "minimax_h3_nvfp4", "safetensors_io.py")
        spec = importlib.util.spec_from_file_location("safetensors_io", path)
        safetensors_io = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(safetensors_io)
    return (lambda path, tensors, metadata: safetensors_io.save(path, tensors, metadata),
            "minimax_h3_nvfp4.safetensors_io")


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--writer")]
    kind = "auto"
    for a in argv[1:]:
        if a.startswith("--writer="):
            kind = a.split("=", 1)[1]
    if "--writer" in argv:
        kind = argv[argv.index("--writer") + 1]
        args.remove(kind)
    if len(args) != 1 or kind not in ("auto", "real", "ours"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    out = args[0]
    save, writer = _writer(kind)
    tensors, configs = files()
    digests = {}
    for rel, (t, meta) in sorted(tensors.items()):
        path = os.path.join(out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        save(path, t, meta)
    for rel, doc in sorted(configs.items()):
        path = os.path.join(out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
    for rel in sorted(list(tensors) + list(configs)):
        with open(os.path.join(out, rel), "rb") as f:
            digests[rel] = hashlib.sha256(f.read()).hexdigest()
    with open(os.path.join(out, "MANIFEST.json"), "w", encoding="utf-8") as f:
        json.dump({"writer": writer, "numpy": np.__version__, "sha256": digests}, f, indent=1,
                  sort_keys=True)
        f.write("\n")
    print("wrote %d files into %s with %s" % (len(digests) + 1, out, writer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
