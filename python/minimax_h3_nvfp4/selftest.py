"""`python -m minimax_h3_nvfp4 selftest`: a short bit-exact check of this machine.

The data are two of the repository's golden cases (testdata/, made by an implementation of the
contract independent of the C++ emulator), shipped in the package as selftest_goldens.npz:
  op_exact    M = 37, N = 128, K = 256, G = 9, exactly representable data: every backend's
              out, act_q and act_sf are bit-exact; 8 rows have a gate index outside [0, G)
              (-1, 9, 10, INT_MIN, INT_MAX), whose out must be the residual itself;
  op_entropy  M = 24, N = 128, K = 512: act_q, act_sf bit-exact; out bit-exact for the exact
              accumulator, within the contract's bound (testing.out_envelope) otherwise.
The emulator is checked against the goldens (both CPU GEMMs); each CUDA device, where torch with
CUDA is importable, against the emulator, with every registered tile config (and on sm_90 both
MMA emulations).
"""

import os
import time

import numpy as np

from . import _native
from . import testing
from .diffusion_ops import backend_name, minimax_h3_nvfp4_out_proj

GOLDENS = "selftest_goldens.npz"
ARGS = ("attn_out", "o_weight_q", "o_weight_sf", "o_weight_global_scale", "act_global_scale",
        "gate", "gate_index", "residual")
CASES = ("op_exact", "op_entropy")


def goldens_path():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), GOLDENS)


def load_cases(path=None):
    """{case: {field: array}} from the package's goldens."""
    path = path or goldens_path()
    with np.load(path) as z:  # keys: the member names without ".npy"
        return {case: {f: z["%s_%s" % (case, f)] for f in ARGS + ("out", "act_q", "act_sf")}
                for case in CASES}


def _first_diff(got, want):
    bad = np.argwhere(got != want)
    if bad.size == 0:
        return None
    idx = tuple(int(v) for v in bad[0])
    return "%d of %d elements differ; first at %s: got 0x%x, want 0x%x" % (
        len(bad), got.size, list(idx), int(got[idx]), int(want[idx]))


def _judge(c, out, act_q, act_sf, exact_out, reference_out=None):
    """None when everything matches, else what did not."""
    for name, got, want in (("act_q", act_q, c["act_q"]), ("act_sf", act_sf, c["act_sf"])):
        d = _first_diff(got, want)
        if d:
            return "%s: %s" % (name, d)
    if exact_out:
        d = _first_diff(out, c["out"] if reference_out is None else reference_out)
        if d:
            return "out: %s" % d
    lo, hi, _ = testing.out_envelope(*[c[a] for a in ARGS])
    bad, first = testing.check_out(out, lo, hi)
    if bad:
        return "out: %d elements outside the contract's bound; %s" % (bad, first)
    outside = (c["gate_index"] < 0) | (c["gate_index"] >= c["gate"].shape[0])
    d = _first_diff(out[outside], c["residual"][outside])
    if d:
        return "out of the rows whose gate index is outside [0, G): %s" % d
    return None


def check_emulator(cases):
    """[(what, problem or None)] for the emulator against the goldens."""
    results = []
    for case, gemm, exact_out in (("op_exact", "fast", True), ("op_exact", "exact", True),
                                  ("op_entropy", "exact", True), ("op_entropy", "fast", False)):
        c = cases[case]
        act_q = np.full_like(c["act_q"], 0xAB)
        act_sf = np.full_like(c["act_sf"], 0xCD)
        out = minimax_h3_nvfp4_out_proj(*[c[a] for a in ARGS], act_q=act_q, act_sf=act_sf,
                                        cpu_gemm=gemm)
        what = "emulator, %s, cpu_gemm=%s: out %s, act_q, act_sf against the goldens" % (
            case, gemm, "bit-exact" if exact_out else "within the contract's bound")
        results.append((what, _judge(c, out, act_q, act_sf, exact_out)))
    return results


def check_gpu(cases, index, torch):
    """[(what, problem or None)] for CUDA device `index` against the emulator."""
    dev = torch.device("cuda", index)
    props = _native.device_properties(index)
    emulations = ("faithful", "fast") if props["major"] == 9 else ("faithful",)
    results = []
    for case in CASES:
        c = cases[case]
        want = minimax_h3_nvfp4_out_proj(*[c[a] for a in ARGS], cpu_gemm="exact")

        def t(a):
            if a.dtype == np.uint16:
                return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16).to(dev)
            return torch.from_numpy(a.copy()).to(dev)

        operands = [t(c[a]) for a in ARGS]
        for emulation in emulations:
            tiles = list(_native.tiles()) if emulation == "faithful" else ["auto"]
            for tile in tiles:
                act_q = torch.full(c["act_q"].shape, 0xAB, dtype=torch.uint8, device=dev)
                act_sf = torch.full(c["act_sf"].shape, 0xCD, dtype=torch.uint8, device=dev)
                out = minimax_h3_nvfp4_out_proj(*operands, act_q=act_q, act_sf=act_sf,
                                                sm90_emulation=emulation, tile=tile)
                torch.cuda.synchronize(dev)
                host = [testing.to_numpy(x) for x in (out, act_q, act_sf)]
                exact_out = case == "op_exact"
                what = "cuda:%d, %s, sm90_emulation=%s, tile=%s: against the emulator" % (
                    index, case, emulation, tile)
                results.append((what, _judge(c, host[0], host[1], host[2], exact_out,
                                             reference_out=want)))
    return results


def run(out, err):
    """Runs every check, prints one line each to `out`; returns the exit status (0: all
    passed)."""
    t0 = time.perf_counter()
    path = goldens_path()
    if not os.path.exists(path):
        print("selftest: FAILED: %s is missing (a package without its data; reinstall)" % path,
              file=out)
        return 1
    cases = load_cases(path)
    results = check_emulator(cases)
    count, reason = _native.device_count()
    gpu_note = None
    if count == 0:
        gpu_note = "no GPU checked: %s" % reason
    else:
        try:
            import torch
            usable = torch.cuda.is_available()
        except ImportError:
            torch, usable = None, False
        if not usable:
            gpu_note = ("%d CUDA device(s) NOT checked: torch with CUDA is not importable by "
                        "this interpreter (the GPU path runs on torch tensors)" % count)
        else:
            for i in range(count):
                try:
                    print("selftest: cuda:%d: %s" % (i, backend_name(i)), file=err)
                    results += check_gpu(cases, i, torch)
                except (RuntimeError, ValueError) as e:
                    results.append(("cuda:%d" % i, "%s: %s" % (type(e).__name__, e)))
    failed = 0
    for what, problem in results:
        print("%s %s%s" % ("FAIL" if problem else "ok  ", what,
                           "\n     " + problem if problem else ""), file=out)
        failed += problem is not None
    if gpu_note:
        print("note: " + gpu_note, file=out)
    verdict = "PASSED" if failed == 0 else "FAILED"
    print("selftest %s: %d checks, %d failed, %.2f s" % (
        verdict, len(results), failed, time.perf_counter() - t0), file=out)
    return 0 if failed == 0 else 1
