"""The quality options' operands from a bf16 linear (docs/contract.md sections 12-13).

    act_smooth = smoothing_factors(sample, weight, alpha=0.5)      # float32 [K]
    lora_down, lora_up, residual = lowrank_split(smooth_weight(weight, act_smooth), rank=32)
    # op(x) with act_smooth, lora_down, lora_up and the residual weight quantized
    #   ~ x @ weight^T   (exact in real arithmetic before quantization)

The op multiplies the activations by act_smooth (contract section 12: x' = bf16(x * s)), so
the weight it multiplies must be weight / s column by column (smooth_weight). act_smooth is
SmoothQuant's factor inverted (SmoothQuant divides X by s_sq = max|X|^a / max|W|^(1-a)), i.e.
ModelOpt's pre_quant_scale. The low-rank branch takes the top-r singular directions of the
smoothed weight in bf16 (lora_up [N, r] = U sqrt(S), lora_down [r, K] = sqrt(S) V^T), and the
residual weight = smoothed weight - lora_up @ lora_down (with the factors as rounded to bf16,
so the residual also absorbs their rounding) is what the NVFP4 quantizer gets.

For the attention out projection the smoothing can instead be folded offline into the value
projection's rows and the out projection's columns (fold_smoothing_into_value_proj, grouped-
and multi-query attention included): the op then runs without act_smooth.

    w_v2, b_v2, w_o2, s_used = fold_smoothing_into_value_proj(w_v, b_v, w_o, act_smooth,
                                                              num_heads, num_kv_heads)
"""

import numbers

import numpy as np
import torch

from . import bf16 as _bf16

RANKS = (16, 32, 48, 64)  # contract section 13: a multiple of 16 in 16..64 (the modules check it)


def _channel_amax(x, k, name):
    if not isinstance(x, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, got %s" % (name, type(x).__name__))
    if x.dim() < 1 or x.shape[-1] != k:
        raise ValueError("%s must have shape [..., K] = [..., %d], got %s"
                         % (name, k, list(x.shape)))
    a = x.detach().reshape(-1, k).to(torch.float32).abs().amax(dim=0)
    if not bool(torch.isfinite(a).all()):
        raise ValueError("%s must be finite, got a non-finite value in channel %d"
                         % (name, int((~torch.isfinite(a)).nonzero()[0])))
    return a


def smoothing_factors(sample, weight, alpha=0.5):
    """act_smooth, float32 [K] on weight's device: s_k = max|W[:, k]|^(1-alpha) /
    max|x[:, k]|^alpha (SmoothQuant's factor inverted: the op multiplies by it). A channel
    that is zero in the sample or the weight gets 1. alpha in [0, 1]; 0.5 is SmoothQuant's
    default and what issue 30's H200 check used."""
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2:
        raise ValueError("weight must be a torch.Tensor [N, K], got %s"
                         % (list(weight.shape) if isinstance(weight, torch.Tensor)
                            else type(weight).__name__))
    alpha = float(alpha)
    if not 0.0 <= alpha <= 1.0:
        raise ValueError("smooth_alpha must be in [0, 1], got %r" % alpha)
    k = weight.shape[1]
    ax = _channel_amax(sample, k, "calibration_sample").to(weight.device)
    aw = _channel_amax(weight, k, "weight")
    ok = (ax > 0) & (aw > 0)
    s = torch.where(ok, aw.clamp_min(1e-30).pow(1.0 - alpha) / ax.clamp_min(1e-30).pow(alpha),
                    torch.ones_like(ax))
    # Keep every factor a normal float32 well inside the range (contract section 12 allows any
    # finite value; extreme ones would only push x' or the weight toward over- or underflow).
    return s.clamp(2.0 ** -60, 2.0 ** 60).to(torch.float32)


def smooth_weight(weight, act_smooth):
    """weight / act_smooth column by column, float32 [N, K]: what the op's weight operands must
    stand for when act_smooth is given (x' W'^T = x W^T in real arithmetic)."""
    return weight.detach().to(torch.float32) / act_smooth.to(weight.device, torch.float32)


def lowrank_split(weight, rank):
    """(lora_down bf16 [r, K], lora_up bf16 [N, r], residual float32 [N, K]) of a float weight
    [N, K]: the top-`rank` singular triplets split as U sqrt(S), sqrt(S) V^T, rounded to bf16,
    and the residual weight - lora_up @ lora_down computed from the rounded factors."""
    if rank not in RANKS:
        raise ValueError("lowrank must be one of %s (contract section 13: a multiple of 16 in "
                         "16..64), got %r" % (", ".join(map(str, RANKS)), rank))
    w = weight.detach().to(torch.float32)
    n, k = w.shape
    if min(n, k) <= 2048:
        u, s, vh = torch.linalg.svd(w, full_matrices=False)
        u, s, vh = u[:, :rank], s[:rank], vh[:rank]
    else:  # randomized SVD (Halko et al.): the top directions of a large weight in seconds
        gen = torch.Generator(device="cpu").manual_seed(0)
        omega = torch.randn(k, rank + 32, generator=gen).to(w.device)
        y = w @ omega
        for _ in range(3):  # power iterations sharpen the spectrum's top
            y, _ = torch.linalg.qr(w @ (w.t() @ torch.linalg.qr(y)[0]))
        q, _ = torch.linalg.qr(y)
        ub, s, vh = torch.linalg.svd(q.t() @ w, full_matrices=False)
        u, s, vh = (q @ ub)[:, :rank], s[:rank], vh[:rank]
    root = s.sqrt()
    up = (u * root).to(torch.bfloat16).contiguous()
    down = (root[:, None] * vh).to(torch.bfloat16).contiguous()
    residual = w - up.to(torch.float32) @ down.to(torch.float32)
    return down, up, residual


def smooth_activations(x, act_smooth):
    """x' = bf16(f32(x) * s) of contract section 12, in torch: the product is rounded to
    float32 (torch's bf16 * float32 promotes to float32), then to bf16 (nearest-even) - the
    same two roundings, so this equals what the op quantizes, bit for bit."""
    return (x.to(torch.float32) * act_smooth.to(x.device, torch.float32)).to(torch.bfloat16)


def fold_smoothing_into_value(v_weight, o_weight, act_smooth, v_bias=None):
    """The multi-head case of fold_smoothing_into_value_proj (one value channel per attn_out
    channel: v_weight [K, hidden]), kept for its callers: returns (v_weight', v_bias',
    o_weight') in float32, torch tensors. Grouped-query attention: fold_smoothing_into_value_proj
    with num_heads and num_kv_heads. Factors must be finite and > 0 (fold_smoothing_into_value_proj
    refuses others: a zero or negative factor cannot be folded into a weight and back)."""
    k = o_weight.shape[1]
    if v_weight.dim() != 2 or v_weight.shape[0] != k:
        raise ValueError("v_weight must have shape [K, hidden] = [%d, ...] (one value channel "
                         "per attn_out channel; grouped-query attention shares them: use "
                         "fold_smoothing_into_value_proj with num_heads and num_kv_heads), got %s"
                         % (k, list(v_weight.shape)))
    vw, vb, ow, _ = fold_smoothing_into_value_proj(
        v_weight.detach().to(torch.float32), None if v_bias is None else
        v_bias.detach().to(torch.float32), o_weight.detach().to(torch.float32), act_smooth, 1, 1)
    return vw, vb, ow


# --- the value-projection fold, with grouped-query attention -------------------------------------

_FOLD = "fold_smoothing_into_value_proj"


def _fold_error(arg, expected, got, exc=ValueError):
    return exc("%s: %s must be %s, got %s" % (_FOLD, arg, expected, got))


def _fold_in(name, a, ndim, shape_words):
    """(float64 NumPy copy of a, the function that writes a float64 array back as a's kind,
    dtype and device, rounded once). torch tensors and NumPy arrays of a float dtype (NumPy bf16:
    uint16 bit patterns or ml_dtypes.bfloat16, the package's convention)."""
    if isinstance(a, torch.Tensor):
        if a.dtype not in (torch.bfloat16, torch.float16, torch.float32, torch.float64):
            raise _fold_error(name, "bf16, float16, float32 or float64", str(a.dtype), TypeError)
        if a.dim() != ndim:
            raise _fold_error(name, shape_words, "shape %s" % list(a.shape))
        x = a.detach().to("cpu", torch.float64).numpy()
        dtype, device = a.dtype, a.device

        def back(y):
            if dtype == torch.bfloat16:
                t = torch.from_numpy(_bf16_bits_of_f64(y).view(np.int16)).view(torch.bfloat16)
            else:
                t = torch.from_numpy(y.astype(_NP_OF_TORCH[dtype]))
            return t.to(device)
        return x, back
    if isinstance(a, np.ndarray):
        dt = a.dtype
        if _bf16.is_bf16_dtype(dt):
            x = _bf16.to_float32(a).astype(np.float64)

            def back(y):
                return _bf16_bits_of_f64(y).view(dt)
        elif dt in (np.float16, np.float32, np.float64):
            x = a.astype(np.float64)

            def back(y):
                return y.astype(dt)
        else:
            raise _fold_error(name, "float16, float32, float64 or bf16 (uint16 bit patterns or "
                              "ml_dtypes.bfloat16)", "dtype %s" % dt, TypeError)
        if x.ndim != ndim:
            raise _fold_error(name, shape_words, "shape %s" % list(a.shape))
        return x, back
    raise _fold_error(name, "a torch.Tensor or a numpy.ndarray", type(a).__name__, TypeError)


_NP_OF_TORCH = {torch.float16: np.float16, torch.float32: np.float32,
                torch.float64: np.float64}


def _bf16_bits_of_f64(x):
    """float64 -> bf16 bit patterns (uint16), rounded once to nearest-even: 8 significant bits,
    subnormals down to 2^-133, |x| rounding to 2^128 or beyond -> Inf. (float64 -> float32 ->
    bf16 would round twice, as torch 1.13's double -> bf16 conversion does: 1 + 2^-8 + 2^-40
    -> 1.0 instead of 1 + 2^-7.)"""
    x = np.asarray(x, dtype=np.float64)
    _, e = np.frexp(x)
    q = np.ldexp(1.0, np.maximum(e - 8, -133))  # bf16's step at |x|
    r = np.rint(x / q) * q                      # exact: a bf16 value (or 2^128)
    r = np.where(np.abs(r) >= 2.0 ** 128, np.copysign(np.inf, x), r)
    return (r.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _pow2_nearest(s):
    """Each positive factor to the power of two nearest in log2 (2^round(log2 s)); exact."""
    m, e = np.frexp(s)  # s = m 2^e, m in [0.5, 1)
    return np.ldexp(1.0, np.where(m >= np.sqrt(0.5), e, e - 1))


def _positive_int(name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise _fold_error(name, "an int", type(v).__name__, TypeError)
    if v < 1:
        raise _fold_error(name, ">= 1", v)
    return int(v)


def fold_smoothing_into_value_proj(w_v, b_v, w_o, smooth, num_heads, num_kv_heads, *,
                                   power_of_two=False):
    """Folds smoothing factors into an attention's value projection (rows) and out projection
    (columns) offline, so the op runs without act_smooth. Returns (w_v', b_v', w_o', s_used).

    The out projection's input is attn_out[:, h*D + d] = sum_t P_h[:, t] V[t, g*D + d], with
    V = x W_v^T + b_v, P_h head h's softmax, D = head_dim and g = h // (H / Hkv) the kv head
    that q head h reads. Multiplying W_v's row g*D + d and b_v[g*D + d] by c scales every
    attn_out channel (h, d) of group g by exactly c in real arithmetic (softmax mixes tokens,
    not channels); dividing W_o's column h*D + d by the same c leaves the out projection's
    output unchanged. The op then computes, with no act_smooth, what it computes with
    act_smooth = s_used and the weight W_o diag(s_used)^-1 (contract section 12: x' = x * s,
    the weight operands stand for W diag(s)^-1), up to the bf16 roundings below.

    Grouped-query and multi-query attention: the H / Hkv q heads of one kv head read the same
    value channel, so s_used must be equal across them. The calibrated factors `smooth`
    (per attn_out channel, length H * D, e.g. smoothing_factors(attn_out sample, W_o)) are
    reduced per kv group to the group's smallest factor, one factor per value channel, and
    expanded back. Why the smallest: SmoothQuant's factor max|W|^(1-a) / max|x|^a is smallest
    where the activation's amax is largest, and an outlier channel left unsuppressed in any head
    costs its whole 16-element block; the other heads' channels are then scaled down more than
    they asked (their W_o columns up), which costs less. fold_test.py measures it against the
    group's geometric mean (the least-squares fit in log2) and largest factor: on attn_out
    channels drawn independently per head (the worst case for the reduction) the smallest keeps
    most of smoothing's gain, the geometric mean loses most of it and the largest all of it;
    where attn_out comes from a value projection whose channels carry the outliers (the heads
    of a group then share each channel's scale) the three are alike and the fold loses
    nothing against per-channel act_smooth (NOTES.md, "Issue 30 item 4: folding the
    smoothing"). Factors equal across a group (H = Hkv: multi-head) are kept bit for bit.

    power_of_two=True rounds each (reduced) factor to the power of two nearest in log2 (each
    moves by a factor of at most sqrt(2)); the folded weights are then w * 2^e exactly (bit for
    bit, barring over- or underflow of the weight's format), and since every rounding commutes
    with a power-of-two scale, the folded bf16 model's op output equals the act_smooth route's
    with s_used bit for bit (fold_test.py). Its cost is the factors' rounding: 0-6% more
    relative error than the unrounded factors on attention outputs (3.5% on average), up to 20%
    on fold_test's worst case for the group reduction (NOTES.md).

    Args:
      w_v: [Hkv * D, hidden] value projection weight (nn.Linear's [out, in]); for a fused QKV
        weight, pass its V rows (a slice) and write the result back into them.
      b_v: [Hkv * D] value projection bias, or None.
      w_o: [N, H * D] out projection weight.
      smooth: [H * D] the smoothing factors per attn_out channel, finite and > 0 (rounded to
        float32 first: act_smooth's type).
      num_heads, num_kv_heads: H and Hkv, H a multiple of Hkv (Hkv = H: multi-head; 1: MQA).
      Arrays: torch tensors (any device) or NumPy arrays of bf16 (torch.bfloat16; NumPy uint16
        bit patterns or ml_dtypes.bfloat16), float16, float32 or float64.
    Returns:
      w_v', b_v' (None when b_v is None), w_o': each of its input's kind, dtype and device, each
        element rounded once from the exact product or quotient: w_v' = RN(w_v * c),
        b_v' = RN(b_v * c), w_o' = RN(w_o / c) (computed in float64, where a bf16 / float16 /
        float32 weight times a float32 factor is exact and the quotient, rounded once to
        float64, never lands on a midpoint of the target format, so RN(w_o / c) is the
        correctly rounded quotient). In bf16 the fold so costs one rounding per element (half
        an ulp, 2^-9 relative) unless power_of_two.
      s_used: float32 [H * D] (of smooth's kind and device), the factors the folded model
        applies per attn_out channel: equal to smooth for multi-head attention without
        power_of_two.
    Raises:
      TypeError: an array that is not a torch tensor or NumPy array of a float dtype, a head
        count that is not an int.
      ValueError: shapes that disagree (w_o's columns not a multiple of num_heads, w_v's rows
        not num_kv_heads * head_dim, b_v or smooth of the wrong length), num_heads not a
        multiple of num_kv_heads, a factor that is not finite and > 0 (zero cannot be
        divided out), a non-finite weight, or a folded weight or bias that overflows its dtype.
    """
    h = _positive_int("num_heads", num_heads)
    hkv = _positive_int("num_kv_heads", num_kv_heads)
    if h % hkv:
        raise _fold_error("num_heads", "a multiple of num_kv_heads = %d (each kv head serves "
                          "num_heads / num_kv_heads q heads)" % hkv, h)
    wo, wo_back = _fold_in("w_o", w_o, 2, "2-D [N, num_heads * head_dim]")
    if wo.shape[1] % h:
        raise _fold_error("w_o", "of shape [N, num_heads * head_dim] with num_heads = %d "
                          "dividing its columns" % h, "shape %s" % list(wo.shape))
    d = wo.shape[1] // h
    kv = hkv * d
    wv, wv_back = _fold_in("w_v", w_v, 2, "2-D [num_kv_heads * head_dim, hidden]")
    if wv.shape[0] != kv:
        raise _fold_error("w_v", "of shape [num_kv_heads * head_dim, hidden] = [%d * %d, ...] "
                          "= [%d, ...] (head_dim = %d from w_o's %d columns / num_heads = %d; "
                          "grouped-query attention: num_kv_heads < num_heads)"
                          % (hkv, d, kv, d, wo.shape[1], h), "shape %s" % list(wv.shape))
    if b_v is not None:
        bv, bv_back = _fold_in("b_v", b_v, 1, "1-D [num_kv_heads * head_dim] or None")
        if bv.shape[0] != kv:
            raise _fold_error("b_v", "of shape [num_kv_heads * head_dim] = [%d]" % kv,
                              "shape %s" % list(bv.shape))
    s_in, _ = _fold_in("smooth", smooth, 1, "1-D [num_heads * head_dim]")
    if s_in.shape[0] != h * d:
        raise _fold_error("smooth", "of shape [num_heads * head_dim] = [%d] (w_o's columns)"
                          % (h * d), "shape %s" % list(s_in.shape))
    s = s_in.astype(np.float32).astype(np.float64)  # act_smooth's type
    bad = ~(np.isfinite(s) & (s > 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise _fold_error("smooth", "finite and > 0 in every channel (zero cannot be divided out "
                          "of w_o)", "%r at index %d" % (float(s[i]), i))
    for name, a in (("w_v", wv), ("w_o", wo)) + ((("b_v", bv),) if b_v is not None else ()):
        if not np.isfinite(a).all():
            i = np.argwhere(~np.isfinite(a))[0]
            raise _fold_error(name, "finite", "%r at index %s" % (float(a[tuple(i)]),
                                                                   [int(j) for j in i]))
    grp = s.reshape(hkv, h // hkv, d)  # [kv head, q head of its group, channel]
    c = grp.min(axis=1)  # [Hkv, D]: the strongest suppression the group's heads ask for
    if power_of_two:
        c = _pow2_nearest(c)
    c = c.reshape(kv)
    used = np.broadcast_to(c.reshape(hkv, 1, d), (hkv, h // hkv, d)).reshape(h * d)
    outs = [("w_v", wv * c[:, None], wv_back), ("w_o", wo / used[None, :], wo_back)]
    if b_v is not None:
        outs.append(("b_v", bv * c, bv_back))
    res = {}
    for name, y, back in outs:
        r = back(y)
        rf = _fold_in(name, r, y.ndim, "")[0]  # the result as stored, widened exactly
        if not np.isfinite(rf).all():
            i = np.argwhere(~np.isfinite(rf))[0]
            raise _fold_error(name + "'", "finite in %s's dtype (the factor %r overflows it)"
                              % (name, float(c[i[0]] if name != "w_o" else used[i[-1]])),
                              "%r at index %s" % (float(rf[tuple(i)]), [int(j) for j in i]))
        res[name] = r
    s_used = used.astype(np.float32)
    if isinstance(smooth, torch.Tensor):
        s_used = torch.from_numpy(s_used).to(smooth.device)
    return res["w_v"], res.get("b_v"), res["w_o"], s_used
