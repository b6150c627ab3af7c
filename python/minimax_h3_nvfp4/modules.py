"""nn.Modules of the fused NVFP4 op: any gated-residual linear, and MiniMax-H3's out projection.

    proj = NVFP4GatedResidualLinear.from_linear(linear, calibration_sample=x)
    y = proj(x, residual, gate, gate_index)
    # == residual + gate.index_select(0, gate_index) * linear(x),
    #    in NVFP4 (W4A4) with the fused epilogue (docs/contract.md)

Any linear layer followed by that gated residual has the op's shape of work: MiniMax-H3's
attention out projection (gate_msa) and its FFN down projection (gate_mlp) alike. The GPU takes
N a multiple of 128 and K of 256; the emulator N >= 1 and K a multiple of 64.

The quality options (docs/contract.md sections 12-13, issue 30), off by default:

    proj = NVFP4GatedResidualLinear.from_linear(linear, calibration_sample=x,
                                                smooth_alpha=0.5, lowrank=32)

smooth_alpha: SmoothQuant's per-channel smoothing, act_smooth = max|W|^(1-a) / max|x|^a from the
sample (quality.smoothing_factors), the weight divided by it column by column; lowrank: the
top-r singular directions of the (smoothed) weight as a bf16 branch (lora_down [r, K], lora_up
[N, r]) beside the NVFP4 residual weight (quality.lowrank_split). Both are buffers the op
computes with; the static activation scale then refers to the smoothed activations x'. Both
backends compute both options: on CUDA the GPU kernel (contract sections 12-13), on the CPU the
emulator.
"""

import numbers

import torch

from . import calibration, quality
from ._eager import _compiling
from .diffusion_ops import minimax_h3_nvfp4_out_proj, quantize_minimax_h3_o_weight_nvfp4

_PLAIN_GETATTRIBUTE = torch.nn.Module.__getattribute__
_OPTIONS = ("act_smooth", "lora_down", "lora_up")  # the op's keyword operands, None when off


def _sample_on(cls, name, sample, device):
    """A calibration sample moved to the module's device; anything but a tensor is refused."""
    if not isinstance(sample, torch.Tensor):
        raise TypeError("%s: %s must be a torch.Tensor, got %s" % (cls, name,
                                                                 type(sample).__name__))
    return sample.to(device)


def _check_options(cls, n, k, calibration_sample, smooth_alpha, lowrank):
    """Refuses a bad option before any work, naming the argument, the expected and the given;
    returns (alpha as a float or None, rank)."""
    if smooth_alpha is not None:
        if isinstance(smooth_alpha, bool) or not isinstance(smooth_alpha, numbers.Real):
            raise TypeError("%s: smooth_alpha must be None (off) or a float in [0, 1], got %s"
                            % (cls, type(smooth_alpha).__name__))
        smooth_alpha = float(smooth_alpha)
        if not 0.0 <= smooth_alpha <= 1.0:  # NaN fails too
            raise ValueError("%s: smooth_alpha must be None (off) or a float in [0, 1], got %r"
                             % (cls, smooth_alpha))
        if calibration_sample is None:
            raise ValueError("%s: smooth_alpha needs calibration_sample (the factors are "
                             "max|W|^(1-a) / max|x|^a per input channel, and the activation "
                             "scale is calibrated on the smoothed x'), got calibration_sample="
                             "None" % cls)
    if isinstance(lowrank, bool) or not isinstance(lowrank, numbers.Integral):
        raise TypeError("%s: lowrank must be an int, 0 (off) or a multiple of 16 in 16..64, "
                        "got %s" % (cls, type(lowrank).__name__))
    lowrank = int(lowrank)
    if lowrank != 0 and lowrank not in quality.RANKS:
        raise ValueError("%s: lowrank must be 0 (off) or a multiple of 16 in 16..64 (contract "
                         "section 13), got %d" % (cls, lowrank))
    if n is not None and lowrank > min(n, k):
        raise ValueError("%s: lowrank must be at most min(N, K) = %d (the weight [%d, %d] has "
                         "no more singular directions), got %d" % (cls, min(n, k), n, k, lowrank))
    return smooth_alpha, lowrank


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

    Quality options (keyword-only; off by default, and then the module is the plain one to the
    bit, its state dict the four buffers above):
      smooth_alpha: None, or a in [0, 1] (SmoothQuant's 0.5 is the usual): act_smooth float32
        [K] = quality.smoothing_factors(calibration_sample, weight, a), which needs
        calibration_sample; the weight quantized is quality.smooth_weight(weight, act_smooth)
        and act_global_scale is calibrated on x' = quality.smooth_activations(sample,
        act_smooth) (contract section 12: the global scale refers to x').
      lowrank: 0, or r in 16, 32, 48, 64 (at most min(N, K)): (lora_down bf16 [r, K], lora_up
        bf16 [N, r], residual) = quality.lowrank_split(the (smoothed) weight, r); the residual
        is what is quantized (contract section 13).
    act_smooth, lora_down and lora_up are buffers (None when off): they follow .to() and the
    state dict, and load_state_dict takes a state dict's options as they are (a module built
    plain loads one with options, and the reverse). forward passes them to the op. The GPU
    kernel computes both, as the CPU emulator does (act_q / act_sf bit-exact against the
    emulator, out within the contract's bound).
    calibrate(sample) smooths the sample first when act_smooth is set.
    """

    def __init__(self, weight, act_global_scale=None, *, calibration_sample=None,
                 sm90_emulation="faithful", cpu_gemm="fast", tile="auto", smooth_alpha=None,
                 lowrank=0):
        super().__init__()
        cls = type(self).__name__
        if not isinstance(weight, torch.Tensor):
            raise TypeError("%s: weight must be a torch.Tensor [N, K], got %s"
                            % (cls, type(weight).__name__))
        # A weight of another rank is the quantizer's error, as it always was.
        n, k = (int(d) for d in weight.shape) if weight.dim() == 2 else (None, None)
        alpha, rank = _check_options(cls, n, k, calibration_sample, smooth_alpha, lowrank)
        if calibration_sample is not None:
            if act_global_scale is not None:
                raise ValueError("%s: give act_global_scale or calibration_sample, not both"
                                 % cls)
            calibration_sample = _sample_on(cls, "calibration_sample", calibration_sample,
                                            weight.device)
        w = weight.detach()  # options off: quantized as given, as it always was
        smooth = down = up = None
        if alpha is not None:
            smooth = quality.smoothing_factors(calibration_sample, w, alpha)
            w = quality.smooth_weight(w, smooth)
        if rank:
            down, up, w = quality.lowrank_split(w, rank)
        q, sf, gs = quantize_minimax_h3_o_weight_nvfp4(w)
        self.out_features, self.in_features = n, k
        self.sm90_emulation = sm90_emulation
        self.cpu_gemm = cpu_gemm
        self.tile = tile
        self.register_buffer("o_weight_q", q)
        self.register_buffer("o_weight_sf", sf)
        self.register_buffer("o_weight_global_scale", gs)
        if calibration_sample is not None:
            # Contract section 12: the global scale refers to x' (the factors checked the width).
            act = calibration.act_global_scale(calibration_sample if smooth is None else
                                               quality.smooth_activations(calibration_sample,
                                                                          smooth))
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
        for name, t in zip(_OPTIONS, (smooth, down, up)):  # after the plain four (state dict)
            self.register_buffer(name, t)

    @classmethod
    def from_linear(cls, linear, act_global_scale=None, *, calibration_sample=None,
                    smooth_alpha=None, lowrank=0, **kwargs):
        """From nn.Linear(K, N, bias=False) (the op has no bias). calibration_sample,
        smooth_alpha, lowrank: the class docstring's (options off by default); kwargs:
        sm90_emulation, cpu_gemm, tile."""
        if getattr(linear, "bias", None) is not None:
            raise ValueError("%s: the linear layer must have no bias (the op computes none), "
                             "got a bias of shape %s" % (cls.__name__, tuple(linear.bias.shape)))
        return cls(linear.weight, act_global_scale, calibration_sample=calibration_sample,
                   smooth_alpha=smooth_alpha, lowrank=lowrank, **kwargs)

    @classmethod
    def from_checkpoint(cls, path, layer=None, act_global_scale=None, *, format="auto",
                        calibration_sample=None, device=None, **kwargs):
        """From a users' NVFP4 checkpoint (a ModelOpt NVFP4 or NVFP4_SVD, compressed-tensors,
        comfy or Nunchaku SVDQuant file or folder) or a file `python -m minimax_h3_nvfp4
        convert` wrote: the layer's codes and block scales bit for bit, its global scales by
        docs/contract.md section 5.1, an SVDQuant layer's smoothing and low-rank branch as the
        buffers act_smooth, lora_down, lora_up (minimax_h3_nvfp4.checkpoints). layer: its name
        (None: the file's only layer). The activation global scale: act_global_scale or
        calibration_sample (smoothed first when the layer has act_smooth) when given, else the
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
        opts = [checkpoints.torch_buffer(c, opt) for opt in _OPTIONS]
        if calibration_sample is not None:
            sample = _sample_on(name, "calibration_sample", calibration_sample, dev)
            if opts[0] is not None:  # contract section 12: the scale refers to x'
                sample = quality.smooth_activations(sample, opts[0].to(dev))
            act = calibration.act_global_scale(sample)
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
        for opt, t in zip(_OPTIONS, opts):  # after the plain four, as the constructor's
            self.register_buffer(opt, None if t is None else t.to(dev))
        return self

    @torch.no_grad()
    def calibrate(self, sample, headroom=1.0):
        """Sets act_global_scale = RN(RN(1 / amax(|sample'|)) * 2688), divided by headroom
        (>= 1) when given (calibration.act_global_scale: room above the sample's amax before
        UE4M3 saturates); sample' is the sample smoothed as the op smooths x when act_smooth is
        set (contract section 12), else the sample. A bad sample is refused, at the cost of one
        host synchronization on a GPU."""
        sample = _sample_on(type(self).__name__, "sample", sample, self.act_global_scale.device)
        self.act_global_scale.copy_(calibration.act_global_scale(self._smoothed(sample, "sample"),
                                                                 headroom))
        return self

    def _smoothed(self, sample, name):
        """x' of contract section 12 for a sample of the layer's inputs (itself without
        act_smooth): what the activation global scale must cover."""
        s = getattr(self, "act_smooth", None)
        if s is None:
            return sample
        if sample.dim() < 1 or sample.shape[-1] != self.in_features:
            raise ValueError("%s: %s must have shape [..., in_features] = [..., %d], got %s"
                             % (type(self).__name__, name, self.in_features,
                                list(sample.shape)))
        return quality.smooth_activations(sample, s)

    def _load_from_state_dict(self, state_dict, prefix, *args):
        """The state dict decides the options: one it holds becomes (or replaces) the buffer of
        its shape and dtype, one it lacks becomes None, so a plain module loads a smoothed one
        and the reverse (nn.Module's loader copies only into buffers that exist, of the same
        shape). Only for a state dict of this layer (its o_weight_q present)."""
        if prefix + "o_weight_q" in state_dict:
            dev = getattr(self, "o_weight_q").device
            for name in _OPTIONS:
                t = state_dict.get(prefix + name)
                cur = self._buffers.get(name)
                if t is None:
                    self._buffers[name] = None
                elif (cur is None or cur.shape != t.shape or cur.dtype != t.dtype
                      or cur.device != dev):
                    self._buffers[name] = torch.empty(t.shape, dtype=t.dtype, device=dev)
        super()._load_from_state_dict(state_dict, prefix, *args)

    def forward(self, x, residual, gate, gate_index, *, out=None):
        return self._gated(x, residual, gate, gate_index, out)

    _x_name = "x"  # the first operand's name in errors (the seed module's: attn_out)

    def _weights(self):
        """The four buffers and the three options, straight from _buffers
        (nn.Module.__getattr__ is Python, ~0.3 us a buffer) where attribute access is the plain
        one; through getattr where a buffer was replaced by something else (a Parameter, a
        parametrization), the class answers attributes itself (torch 1.13's functional_call
        swaps in such a class) or Dynamo traces (it folds _compiling() to True first and traces
        plain attribute reads). An option missing altogether (a module pickled before they
        existed) is off."""
        if not _compiling() and type(self).__getattribute__ is _PLAIN_GETATTRIBUTE:
            b = self._buffers
            try:
                return (b["o_weight_q"], b["o_weight_sf"], b["o_weight_global_scale"],
                        b["act_global_scale"], b.get("act_smooth"), b.get("lora_down"),
                        b.get("lora_up"))
            except KeyError:
                pass
        return (self.o_weight_q, self.o_weight_sf, self.o_weight_global_scale,
                self.act_global_scale, getattr(self, "act_smooth", None),
                getattr(self, "lora_down", None), getattr(self, "lora_up", None))

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
        q, sf, w_gs, a_gs, smooth, down, up = self._weights()
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
                sm90_emulation=self.sm90_emulation, cpu_gemm=self.cpu_gemm, tile=self.tile,
                act_smooth=smooth, lora_down=down, lora_up=up)
        self._check_width(x)
        n = self.out_features
        lead = residual.shape[:-1]
        # In place: the very same view for both, so the op sees `out is residual`.
        res = self._flat_out(residual, residual) if out is residual else residual.reshape(-1, n)
        dst = res if out is residual else (None if out is None else self._flat_out(out, residual))
        y = minimax_h3_nvfp4_out_proj(
            x.reshape(-1, self.in_features), q, sf, w_gs, a_gs, gate, gate_index.reshape(-1),
            res, out=dst, sm90_emulation=self.sm90_emulation, cpu_gemm=self.cpu_gemm,
            tile=self.tile, act_smooth=smooth, lora_down=down, lora_up=up)
        return y.reshape(*lead, n) if out is None else out

    def extra_repr(self):
        opts = ""
        if getattr(self, "act_smooth", None) is not None:
            opts += ", act_smooth"
        down = getattr(self, "lora_down", None)
        if down is not None:
            opts += ", lowrank=%d" % down.shape[0]
        return "in_features=%d, out_features=%d, nvfp4 (W4A4)%s, sm90_emulation=%r, tile=%r" % (
            self.in_features, self.out_features, opts, self.sm90_emulation, self.tile)


class MiniMaxH3NVFP4OutProj(NVFP4GatedResidualLinear):
    """MiniMax-H3's attention output projection + gated residual (gate_msa): the generic module
    with the seed's names, built from nn.Linear(7168, 5376)'s weight [5376, 7168].

        proj = MiniMaxH3NVFP4OutProj.from_linear(attn.to_out[0], calibration_sample=attn_output)
        hidden = proj(attn_output, residual, gate_msa, adaln_indices)
    """

    _x_name = "attn_out"

    def forward(self, attn_out, residual, gate, gate_index, *, out=None):
        return self._gated(attn_out, residual, gate, gate_index, out)
