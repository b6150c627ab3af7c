"""nn.Modules of the fused NVFP4 op: any gated-residual linear, and MiniMax-H3's out projection.

    proj = NVFP4GatedResidualLinear.from_linear(linear, calibration_sample=x)
    y = proj(x, residual, gate, gate_index)
    # == residual + gate.index_select(0, gate_index) * linear(x),
    #    in NVFP4 (W4A4) with the fused epilogue (docs/contract.md)

Any linear layer followed by that gated residual has the op's shape of work: MiniMax-H3's
attention out projection (gate_msa) and its FFN down projection (gate_mlp) alike. The GPU takes
N a multiple of 128 and K of 256; the emulator N >= 1 and K a multiple of 64.
"""

import numbers

import torch

from . import calibration
from .diffusion_ops import minimax_h3_nvfp4_out_proj, quantize_minimax_h3_o_weight_nvfp4


class NVFP4GatedResidualLinear(torch.nn.Module):
    """NVFP4 linear (no bias) + gated residual. Built from a bf16 (or f32) weight [N, K] (an
    nn.Linear(K, N).weight), quantized once (quantize_minimax_h3_o_weight_nvfp4) and kept as
    buffers (o_weight_q, o_weight_sf, o_weight_global_scale), with the activation global scale
    as a buffer too (act_global_scale, float32 [1]): given, or calibrated from a sample of the
    layer's inputs (RN(2688 / amax)). Buffers live on the weight's device and move with .to().

    forward(x [..., K] bf16, residual [..., N] bf16, gate [G, N] bf16,
            gate_index [...] int32 (or any integer tensor), *, out=None) -> bf16 [..., N].
    Leading dimensions are flattened into the op's M (views, no copies, for contiguous inputs).
    `out` may be `residual` itself (in place).
    """

    def __init__(self, weight, act_global_scale=None, *, calibration_sample=None,
                 sm90_emulation="faithful", cpu_gemm="fast", tile="auto"):
        super().__init__()
        cls = type(self).__name__
        if not isinstance(weight, torch.Tensor):
            raise TypeError("%s: weight must be a torch.Tensor [N, K], got %s"
                            % (cls, type(weight).__name__))
        q, sf, gs = quantize_minimax_h3_o_weight_nvfp4(weight.detach())
        self.out_features, self.in_features = (int(d) for d in weight.shape)
        self.sm90_emulation = sm90_emulation
        self.cpu_gemm = cpu_gemm
        self.tile = tile
        self.register_buffer("o_weight_q", q)
        self.register_buffer("o_weight_sf", sf)
        self.register_buffer("o_weight_global_scale", gs)
        if calibration_sample is not None:
            if act_global_scale is not None:
                raise ValueError("%s: give act_global_scale or calibration_sample, not both"
                                 % cls)
            act = calibration.act_global_scale(calibration_sample.to(weight.device))
        elif isinstance(act_global_scale, torch.Tensor):
            act = act_global_scale.detach().to(device=weight.device, dtype=torch.float32)
            act = act.reshape(1).clone()
        elif (isinstance(act_global_scale, numbers.Real)
              and not isinstance(act_global_scale, bool)):
            act = torch.tensor([float(act_global_scale)], dtype=torch.float32,
                               device=weight.device)
        else:
            raise ValueError("%s: act_global_scale must be a float or a float32 tensor [1] (or "
                             "pass calibration_sample), got %s"
                             % (cls, type(act_global_scale).__name__))
        self.register_buffer("act_global_scale", act)

    @classmethod
    def from_linear(cls, linear, act_global_scale=None, **kwargs):
        """From nn.Linear(K, N, bias=False) (the op has no bias)."""
        if getattr(linear, "bias", None) is not None:
            raise ValueError("%s: the linear layer must have no bias (the op computes none), "
                             "got a bias of shape %s" % (cls.__name__, tuple(linear.bias.shape)))
        return cls(linear.weight, act_global_scale, **kwargs)

    @torch.no_grad()
    def calibrate(self, sample):
        """Sets act_global_scale = RN(2688 / amax(|sample|)) (no host synchronization)."""
        self.act_global_scale.copy_(calibration.act_global_scale(
            sample.to(self.act_global_scale.device)))
        return self

    def forward(self, x, residual, gate, gate_index, *, out=None):
        return self._gated(x, residual, gate, gate_index, out)

    def _gated(self, x, residual, gate, gate_index, out):
        # The buffers straight from _buffers (nn.Module.__getattr__ is Python, ~0.3 us each),
        # unless one was replaced by something that is not a buffer.
        b = self._buffers
        try:
            q, sf, w_gs, a_gs = (b["o_weight_q"], b["o_weight_sf"], b["o_weight_global_scale"],
                                 b["act_global_scale"])
        except KeyError:
            q, sf, w_gs, a_gs = (self.o_weight_q, self.o_weight_sf, self.o_weight_global_scale,
                                 self.act_global_scale)
        if gate_index.dtype != torch.int32:
            gate_index = gate_index.to(torch.int32)
        if (x.dim() == 2 and residual.dim() == 2 and gate_index.dim() == 1
                and (out is None or out.dim() == 2)):
            # Already the op's shapes: no views (each costs a torch call); the op checks them.
            return minimax_h3_nvfp4_out_proj(
                x, q, sf, w_gs, a_gs, gate, gate_index, residual, out=out,
                sm90_emulation=self.sm90_emulation, cpu_gemm=self.cpu_gemm, tile=self.tile)
        k, n = self.in_features, self.out_features
        lead = residual.shape[:-1]
        res = residual.reshape(-1, n)
        # In place: the very same view for both, so the op sees `out is residual`.
        dst = res if out is residual else (None if out is None else out.reshape(-1, n))
        y = minimax_h3_nvfp4_out_proj(
            x.reshape(-1, k), q, sf, w_gs, a_gs, gate, gate_index.reshape(-1), res, out=dst,
            sm90_emulation=self.sm90_emulation, cpu_gemm=self.cpu_gemm, tile=self.tile)
        return y.reshape(*lead, n) if out is None else out

    def extra_repr(self):
        return "in_features=%d, out_features=%d, nvfp4 (W4A4), sm90_emulation=%r, tile=%r" % (
            self.in_features, self.out_features, self.sm90_emulation, self.tile)


class MiniMaxH3NVFP4OutProj(NVFP4GatedResidualLinear):
    """MiniMax-H3's attention output projection + gated residual (gate_msa): the generic module
    with the seed's names, built from nn.Linear(7168, 5376)'s weight [5376, 7168].

        proj = MiniMaxH3NVFP4OutProj.from_linear(attn.to_out[0], calibration_sample=attn_output)
        hidden = proj(attn_output, residual, gate_msa, adaln_indices)
    """

    def forward(self, attn_out, residual, gate, gate_index, *, out=None):
        return self._gated(attn_out, residual, gate, gate_index, out)
