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
"""

import torch

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
    """The offline alternative to act_smooth for an attention out projection: attn_out's
    channel k is a convex combination of the value projection's output channel k, so scaling
    V's row k by s_k scales attn_out's channel k by s_k (exact in real arithmetic), and the
    out projection's column k is divided by s_k. Returns (v_weight', v_bias', o_weight') in
    float32; then the op runs without act_smooth. Needs one V channel per attn_out channel
    (no grouped-query sharing: v_weight [K, hidden])."""
    k = o_weight.shape[1]
    if v_weight.dim() != 2 or v_weight.shape[0] != k:
        raise ValueError("v_weight must have shape [K, hidden] = [%d, ...] (one value channel "
                         "per attn_out channel; grouped-query attention shares them and cannot "
                         "be folded per channel), got %s" % (k, list(v_weight.shape)))
    s = act_smooth.to(torch.float32)
    vw = v_weight.detach().to(torch.float32) * s[:, None]
    vb = None if v_bias is None else v_bias.detach().to(torch.float32) * s
    return vw, vb, smooth_weight(o_weight, s)
