"""The activation global scale: act_gs = RN(RN(1 / amax(|x|)) * 2688) (2688 = 448 * 6, contract
section 5), from a calibration sample of attention outputs; 1 when amax == 0. The reciprocal
first, then the product, each rounded to float32: FlashInfer's `(448 * 6) / amax` as PyTorch
evaluates it (`Tensor.__rtruediv__` is `reciprocal() * other`), 1 ulp from RN(2688 / amax) for
about a quarter of amax values. With a headroom h > 1, act_gs = RN(RN(RN(1 / amax) * 2688) / h),
a true division by h: activations up to h * amax quantize unclipped (above the scale's range
UE4M3 saturates at 448, silently); h = 1 is the plain scale, bit for bit.

amax is taken over the sample's values as float32 (a float64 sample is rounded to float32 first,
element by element, as the op would see it). A sample that cannot calibrate is refused, naming
what is wrong: no values, a dtype other than a float one (an integer sample's amax is no
activation range), a value not finite in float32 (NaN would give a scale of NaN, inf one of 0),
or an amax so small that the scale overflows float32 (amax < 2688 / FLT_MAX).
"""

import numpy as np

from . import bf16 as _bf16

_FN = "act_global_scale"


def _empty_error(shape):
    return ValueError("%s: sample must have at least one value, got shape %s"
                      % (_FN, list(shape)))


def _non_finite_error(count, total, first):
    return ValueError("%s: sample must be finite in float32, got %d non-finite of %d values (the "
                      "first at index %s)" % (_FN, count, total, [int(i) for i in first]))


def _overflow_error(amax):
    return ValueError("%s: sample's amax must be >= 2688 / FLT_MAX (the scale 2688 / amax must "
                      "be a finite float32), got amax %r" % (_FN, float(amax)))


def _numpy_scale(sample):
    if _bf16.is_bf16_dtype(sample.dtype):
        x = _bf16.to_float32(sample)
    elif sample.dtype in (np.float16, np.float32, np.float64):
        with np.errstate(over="ignore"):
            x = sample.astype(np.float32)
    else:
        raise TypeError("%s: sample must be bfloat16 (uint16 bit patterns or ml_dtypes.bfloat16), "
                        "float16, float32 or float64, got %s" % (_FN, sample.dtype))
    if not x.size:
        raise _empty_error(sample.shape)
    finite = np.isfinite(x)
    if not finite.all():
        bad = np.argwhere(~finite)
        raise _non_finite_error(len(bad), x.size, bad[0])
    amax = np.float32(np.max(np.abs(x)))
    if amax == 0:
        return np.array([1.0], dtype=np.float32)
    with np.errstate(over="ignore", under="ignore"):
        # Two float32 roundings, the reciprocal first (contract section 5); every operand is
        # np.float32, so no NumPy version widens them.
        r = np.float32(1.0) / amax
        v = r * np.float32(2688.0)
    if not np.isfinite(v):
        raise _overflow_error(amax)
    return np.array([v], dtype=np.float32)


def _check_headroom(headroom):
    if isinstance(headroom, bool) or not isinstance(headroom, (int, float, np.floating)):
        raise TypeError("%s: headroom must be a float >= 1, got %s"
                        % (_FN, type(headroom).__name__))
    h = float(headroom)
    if not (np.isfinite(h) and h >= 1.0):
        raise ValueError("%s: headroom must be a finite float >= 1, got %r" % (_FN, h))
    return np.float32(h)


def global_scale_of_amax(amax):
    """The scale of a float32 torch tensor of amax values, elementwise: RN(RN(1 / amax) * 2688)
    where amax > 0, else 1 (contract section 5), on amax's device; no checks (an amax of inf or
    NaN, or one whose scale overflows, comes back non-finite). act_global_scale's torch path, and
    for callers that reduce amax themselves (examples/sequence_parallel.py: across ranks)."""
    import torch  # a torch tensor: torch is there
    one = torch.ones((), dtype=torch.float32, device=amax.device)
    # The reciprocal, then the product, spelled out: what `2688.0 / amax` gives in PyTorch, but
    # `torch.tensor(2688.) / amax` would be the one division.
    rcp = torch.where(amax > 0, amax, one).reciprocal()
    return torch.where(amax > 0, rcp * 2688.0, one)


def act_global_scale(sample, headroom=1.0):
    """float32 [1]: a torch tensor on the sample's device, or a NumPy array for a NumPy sample.

    sample: the layer's inputs (any shape, at least one value), every value finite in float32;
    torch bfloat16, float16, float32 or float64, or NumPy bf16 (uint16 bit patterns /
    ml_dtypes.bfloat16), float16, float32 or float64. A CUDA sample costs one host
    synchronization (the check that refuses a bad sample).

    headroom: a float >= 1 (default 1: RN(RN(1 / amax) * 2688) itself), the factor of room above the
    sample's amax (module docstring); examples/accuracy.py measures its effect.

    Raises:
      TypeError: sample is not a torch tensor or NumPy array of one of those dtypes, or
        headroom is not a real number.
      ValueError: the sample is empty, a value is not finite in float32, or amax < 2688 /
        FLT_MAX (the scale would overflow).
    """
    h = _check_headroom(headroom)
    if isinstance(sample, np.ndarray):
        v = _numpy_scale(sample)
        return v if h == 1 else (v / h).astype(np.float32)
    import torch  # a torch tensor: torch is there
    if not isinstance(sample, torch.Tensor):
        raise TypeError("%s: sample must be a torch.Tensor or a numpy.ndarray, got %s"
                        % (_FN, type(sample).__name__))
    if sample.dtype not in (torch.bfloat16, torch.float16, torch.float32, torch.float64):
        raise TypeError("%s: sample must be of dtype torch.bfloat16, torch.float16, "
                        "torch.float32 or torch.float64, got %s" % (_FN, sample.dtype))
    if not sample.numel():
        raise _empty_error(sample.shape)
    x = sample.detach()
    if x.dtype == torch.float64:
        x = x.to(torch.float32)
    amax = x.abs().amax().to(torch.float32)
    v = global_scale_of_amax(amax)
    # amax is NaN or inf exactly where the sample has a non-finite value (amax propagates
    # NaN); v is inf where the scale overflows. One synchronization for both.
    if not bool(torch.isfinite(amax) & torch.isfinite(v)):
        if not bool(torch.isfinite(amax)):
            bad = (~torch.isfinite(x)).nonzero()
            raise _non_finite_error(len(bad), x.numel(), bad[0].tolist())
        raise _overflow_error(amax.item())
    v = v.reshape(1)
    # Headroom: a true division by a tensor (on CUDA, tensor / Python number is a multiply by
    # the reciprocal).
    return v if h == 1 else v / torch.tensor(float(h), dtype=torch.float32, device=v.device)
