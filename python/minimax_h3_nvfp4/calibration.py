"""The activation global scale: act_gs = RN(2688 / amax(|x|)) (2688 = 448 * 6, contract
section 1), from a calibration sample of attention outputs; 1 when amax == 0.

A sample that cannot calibrate is refused, naming what is wrong: a dtype other than a float
one (an integer sample's amax is no activation range), a non-finite value (NaN would give a
scale of NaN, inf one of 0), or an amax so small that 2688 / amax overflows float32.
"""

import numpy as np

from . import bf16 as _bf16

_FN = "act_global_scale"


def _non_finite_error(count, total, first):
    return ValueError("%s: sample must be finite, got %d non-finite of %d values (the first at "
                      "index %s)" % (_FN, count, total, list(first)))


def _overflow_error(amax):
    return ValueError("%s: sample's amax must be >= 2688 / FLT_MAX (the scale 2688 / amax must "
                      "be a finite float32), got amax %r" % (_FN, float(amax)))


def _numpy_scale(sample):
    if _bf16.is_bf16_dtype(sample.dtype):
        x = _bf16.to_float32(sample)
    elif sample.dtype in (np.float32, np.float16):
        x = sample.astype(np.float32)
    else:
        raise TypeError("%s: sample must be bfloat16 (uint16 bit patterns or ml_dtypes.bfloat16), "
                        "float16 or float32, got %s" % (_FN, sample.dtype))
    finite = np.isfinite(x)
    if not finite.all():
        bad = np.argwhere(~finite)
        raise _non_finite_error(len(bad), x.size, bad[0])
    amax = np.float32(np.max(np.abs(x))) if x.size else np.float32(0)
    if amax == 0:
        return np.array([1.0], dtype=np.float32)
    with np.errstate(over="ignore"):
        v = np.float32(2688.0) / amax
    if not np.isfinite(v):
        raise _overflow_error(amax)
    return np.array([v], dtype=np.float32)


def act_global_scale(sample):
    """float32 [1]: a torch tensor on the sample's device, or a NumPy array for a NumPy sample.

    sample: the layer's inputs (any shape), every value finite; torch bfloat16, float16 or
    float32, or NumPy bf16 (uint16 bit patterns / ml_dtypes.bfloat16), float16 or float32.
    A CUDA sample costs one host synchronization (the check that refuses a bad sample).

    Raises:
      TypeError: sample is not a torch tensor or NumPy array of one of those dtypes.
      ValueError: a value is not finite, or amax < 2688 / FLT_MAX (the scale would overflow).
    """
    if isinstance(sample, np.ndarray):
        return _numpy_scale(sample)
    import torch  # a torch tensor: torch is there
    if not isinstance(sample, torch.Tensor):
        raise TypeError("%s: sample must be a torch.Tensor or a numpy.ndarray, got %s"
                        % (_FN, type(sample).__name__))
    if sample.dtype not in (torch.bfloat16, torch.float16, torch.float32):
        raise TypeError("%s: sample must be of dtype torch.bfloat16, torch.float16 or "
                        "torch.float32, got %s" % (_FN, sample.dtype))
    x = sample.detach()
    amax = x.abs().amax().to(torch.float32) if x.numel() else (
        torch.zeros((), dtype=torch.float32, device=x.device))
    one = torch.ones((), dtype=torch.float32, device=x.device)
    v = torch.where(amax > 0, torch.full_like(one, 2688.0) / torch.where(amax > 0, amax, one),
                    one)
    # amax is NaN or inf exactly where the sample has a non-finite value (amax propagates
    # NaN); v is inf where 2688 / amax overflows. One synchronization for both.
    if not bool(torch.isfinite(amax) & torch.isfinite(v)):
        if not bool(torch.isfinite(amax)):
            bad = (~torch.isfinite(x)).nonzero()
            raise _non_finite_error(len(bad), x.numel(), bad[0].tolist())
        raise _overflow_error(amax.item())
    return v.reshape(1)
