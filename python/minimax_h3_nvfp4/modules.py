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
from ._eager import _compiling
from .diffusion_ops import minimax_h3_nvfp4_out_proj, quantize_minimax_h3_o_weight_nvfp4

_PLAIN_GETATTRIBUTE = torch.nn.Module.__getattribute__


def _sample_on(cls, name, sample, device):
    """A calibration sample moved to the module's device; anything but a tensor is refused."""
    if not isinstance(sample, torch.Tensor):
        raise TypeError("%s: %s must be a torch.Tensor, got %s" % (cls, name,
                                                                 type(sample).__name__))
    return sample.to(device)


class NVFP4GatedResidualLinear(torch.nn.Module):
    """NVFP4 linear (no bias) + gated residual. Built from a bf16 (or f32) weight [N, K] (an
    nn.Linear(K, N).weight), quantized once (quantize_minimax_h3_o_weight_nvfp4) and kept as
    buffers (o_weight_q, o_weight_sf, o_weight_global_scale), with the activation global scale
    as a buffer too (act_global_scale, float32 [1]): given, or calibrated from a sample of the
    layer's inputs (RN(RN(1 / amax) * 2688)). Buffers live on the weight's device and move with
    .to().

    forward(x [..., K] bf16, residual [..., N] bf16, gate [G, N] bf16,
            gate_index [...] int32 (or any integer tensor), *, out=None) -> bf16 [..., N].
    Leading dimensions are flattened into the op's M (views, no copies, for contiguous inputs);
    2-D operands go to the op as they are. `out` (residual's shape, contiguous: the op writes
    it through a view) may be `residual` itself (in place). Errors name x (attn_out) of the
    wrong width and an out of another shape or layout; the op's own errors the rest.
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
            act = calibration.act_global_scale(
                _sample_on(cls, "calibration_sample", calibration_sample, weight.device))
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

    @classmethod
    def from_checkpoint(cls, path, layer=None, act_global_scale=None, *, format="auto",
                        calibration_sample=None, device=None, **kwargs):
        """From a users' NVFP4 checkpoint (a ModelOpt, compressed-tensors or comfy file or
        folder) or a file `python -m minimax_h3_nvfp4 convert` wrote: the layer's codes and
        block scales bit for bit, its global scales by docs/contract.md section 5.1
        (minimax_h3_nvfp4.checkpoints). layer: its name (None: the file's only layer). The
        activation global scale: act_global_scale or calibration_sample when given, else the
        checkpoint's; without any, a ValueError says calibration is required. kwargs:
        sm90_emulation, cpu_gemm, tile."""
        from . import checkpoints
        c = checkpoints.load_layer(path, layer, format)
        self = cls.__new__(cls)
        torch.nn.Module.__init__(self)
        name = type(self).__name__
        self.out_features, self.in_features = c.out_features, c.in_features
        self.sm90_emulation = kwargs.pop("sm90_emulation", "faithful")
        self.cpu_gemm = kwargs.pop("cpu_gemm", "fast")
        self.tile = kwargs.pop("tile", "auto")
        if kwargs:
            raise TypeError("%s.from_checkpoint: unexpected arguments %s" % (name,
                                                                         ", ".join(kwargs)))
        dev = torch.device(device) if device is not None else torch.device("cpu")
        self.register_buffer("o_weight_q", torch.from_numpy(c.o_weight_q.copy()).to(dev))
        self.register_buffer("o_weight_sf", torch.from_numpy(c.o_weight_sf.copy()).to(dev))
        self.register_buffer("o_weight_global_scale",
                             torch.from_numpy(c.o_weight_global_scale.copy()).to(dev))
        if act_global_scale is not None and calibration_sample is not None:
            raise ValueError("%s: give act_global_scale or calibration_sample, not both" % name)
        if calibration_sample is not None:
            act = calibration.act_global_scale(
                _sample_on(name, "calibration_sample", calibration_sample, dev))
        elif isinstance(act_global_scale, torch.Tensor):
            act = act_global_scale.detach().to(device=dev, dtype=torch.float32)
            act = act.reshape(1).clone()
        elif act_global_scale is not None:
            act = torch.tensor([float(act_global_scale)], dtype=torch.float32, device=dev)
        elif c.act_global_scale is not None:
            act = torch.from_numpy(c.act_global_scale.copy()).to(dev)
        else:
            raise ValueError("%s: layer %r of %s has no input scale (input_scale / "
                             "input_global_scale): calibration required - pass "
                             "calibration_sample= or act_global_scale=" % (name, c.name, path))
        self.register_buffer("act_global_scale", act)
        return self

    @torch.no_grad()
    def calibrate(self, sample, headroom=1.0):
        """Sets act_global_scale = RN(RN(1 / amax(|sample|)) * 2688), divided by headroom (>= 1)
        when given (calibration.act_global_scale: room above the sample's amax before UE4M3
        saturates); a bad sample is refused, at the cost of one host synchronization on a
        GPU."""
        self.act_global_scale.copy_(calibration.act_global_scale(
            _sample_on(type(self).__name__, "sample", sample, self.act_global_scale.device),
            headroom))
        return self

    def forward(self, x, residual, gate, gate_index, *, out=None):
        return self._gated(x, residual, gate, gate_index, out)

    _x_name = "x"  # the first operand's name in errors (the seed module's: attn_out)

    def _weights(self):
        """The four buffers, straight from _buffers (nn.Module.__getattr__ is Python, ~0.3 us
        a buffer) where attribute access is the plain one; through getattr where a buffer was
        replaced by something else (a Parameter, a parametrization), the class answers
        attributes itself (torch 1.13's functional_call swaps in such a class) or Dynamo traces
        (it folds _compiling() to True first and traces plain attribute reads)."""
        if not _compiling() and type(self).__getattribute__ is _PLAIN_GETATTRIBUTE:
            b = self._buffers
            try:
                return (b["o_weight_q"], b["o_weight_sf"], b["o_weight_global_scale"],
                        b["act_global_scale"])
            except KeyError:
                pass
        return (self.o_weight_q, self.o_weight_sf, self.o_weight_global_scale,
                self.act_global_scale)

    def _check_width(self, x):
        if x.dim() < 1 or x.shape[-1] != self.in_features:
            self._width_error(x)

    def _width_error(self, x):
        raise ValueError("%s: %s must have shape [..., in_features] = [..., %d], got %s"
                         % (type(self).__name__, self._x_name, self.in_features, list(x.shape)))

    def _flat_out(self, t, residual):
        """out (or residual, in place) as the op's [M, N] view of the same memory: the op
        writes it, so a copy (reshape of a tensor that cannot be viewed) would lose the result."""
        what = "out" if t is not residual else "residual (out, in place)"
        if t.shape != residual.shape:
            raise ValueError("%s: %s must have residual's shape %s, got %s"
                             % (type(self).__name__, what, list(residual.shape), list(t.shape)))
        if not t.is_contiguous():  # the op takes a contiguous out only
            raise ValueError("%s: %s must be contiguous (viewable as [M, N]), got shape %s with "
                             "strides %s" % (type(self).__name__, what, list(t.shape),
                                             list(t.stride())))
        return t.view(-1, self.out_features)

    def _operand_error(self, x, residual, gate, gate_index, out):
        """A TypeError naming the first operand that is not a tensor (None included; out may
        be None)."""
        for name, t in ((self._x_name, x), ("residual", residual), ("gate", gate),
                        ("gate_index", gate_index), ("out", out)):
            if not isinstance(t, torch.Tensor) and (name != "out" or t is not None):
                raise TypeError("%s: %s must be a torch.Tensor, got %s"
                                % (type(self).__name__, name, type(t).__name__))

    def _gated(self, x, residual, gate, gate_index, out):
        q, sf, w_gs, a_gs = self._weights()
        if not (isinstance(x, torch.Tensor) and isinstance(residual, torch.Tensor)
                and isinstance(gate, torch.Tensor) and isinstance(gate_index, torch.Tensor)
                and (out is None or isinstance(out, torch.Tensor))):
            self._operand_error(x, residual, gate, gate_index, out)
        if gate_index.dtype != torch.int32:
            gate_index = gate_index.to(torch.int32)
        if (x.dim() == 2 and residual.dim() == 2 and gate_index.dim() == 1
                and (out is None or out.dim() == 2)):
            # Already the op's shapes: no views (each costs a torch call); the op checks them,
            # but would blame o_weight_q for a wrong width of x.
            if x.shape[1] != self.in_features:
                self._width_error(x)
            return minimax_h3_nvfp4_out_proj(
                x, q, sf, w_gs, a_gs, gate, gate_index, residual, out=out,
                sm90_emulation=self.sm90_emulation, cpu_gemm=self.cpu_gemm, tile=self.tile)
        self._check_width(x)
        n = self.out_features
        lead = residual.shape[:-1]
        # In place: the very same view for both, so the op sees `out is residual`.
        res = self._flat_out(residual, residual) if out is residual else residual.reshape(-1, n)
        dst = res if out is residual else (None if out is None else self._flat_out(out, residual))
        y = minimax_h3_nvfp4_out_proj(
            x.reshape(-1, self.in_features), q, sf, w_gs, a_gs, gate, gate_index.reshape(-1),
            res, out=dst, sm90_emulation=self.sm90_emulation, cpu_gemm=self.cpu_gemm,
            tile=self.tile)
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

    _x_name = "attn_out"

    def forward(self, attn_out, residual, gate, gate_index, *, out=None):
        return self._gated(attn_out, residual, gate, gate_index, out)
