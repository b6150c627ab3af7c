"""The activation global scale: act_gs = RN(2688 / amax(|x|)) (2688 = 448 * 6, contract
section 1), from a calibration sample of attention outputs; 1 when amax == 0."""

import numpy as np

from . import bf16 as _bf16


def act_global_scale(sample):
    """float32 [1]: a torch tensor on the sample's device (no host synchronization), or a
    NumPy array for a NumPy sample (bf16 as uint16 bit patterns / ml_dtypes.bfloat16, or
    float32). The sample must be finite."""
    if isinstance(sample, np.ndarray):
        x = _bf16.to_float32(sample) if _bf16.is_bf16_dtype(sample.dtype) else sample
        amax = np.float32(np.max(np.abs(x.astype(np.float32)))) if x.size else np.float32(0)
        v = np.float32(2688.0) / amax if amax > 0 else np.float32(1.0)
        return np.array([v], dtype=np.float32)
    import torch  # a torch tensor: torch is there
    if not isinstance(sample, torch.Tensor):
        raise TypeError("act_global_scale: sample must be a torch.Tensor or a numpy.ndarray, "
                        "got %s" % type(sample).__name__)
    amax = sample.detach().abs().amax().to(torch.float32) if sample.numel() else (
        torch.zeros((), dtype=torch.float32, device=sample.device))
    one = torch.ones((), dtype=torch.float32, device=sample.device)
    v = torch.where(amax > 0, torch.full_like(one, 2688.0) / torch.where(amax > 0, amax, one),
                    one)
    return v.reshape(1)
