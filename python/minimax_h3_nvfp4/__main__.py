"""python -m minimax_h3_nvfp4 {info,selftest,tune,bench,inspect,convert}: what a user runs on a
new machine (inspect / convert: users' NVFP4 checkpoints, checkpoint_cli.py).

Exit status: 0 success; 1 a failed check, no CUDA device for tune / bench, or a refused
checkpoint; 2 a usage error.
"""

import argparse
import os
import platform
import sys

PROG = "python -m minimax_h3_nvfp4"


def _int_list(text):
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(
            "must be a comma-separated list of integers >= 1, got %r" % text)
    return values


def _multiple(of):
    def parse(text):
        try:
            v = int(text)
        except ValueError:
            v = 0
        if v < of or v % of:
            raise argparse.ArgumentTypeError("must be a positive multiple of %d, got %r"
                                             % (of, text))
        return v
    return parse


def _parser():
    from . import __version__
    p = argparse.ArgumentParser(prog=PROG, description=(
        "The MiniMax-H3 NVFP4 fused out projection: inspect, check, tune and time it here."))
    p.add_argument("--version", action="version", version="minimax_h3_nvfp4 " + __version__)
    sub = p.add_subparsers(dest="command", metavar="{info,selftest,tune,bench,inspect,convert}")
    sub.required = True
    sub.add_parser("info", help="versions, native library, CUDA devices and their builds, "
                   "the tuned tile choices on record")
    sub.add_parser("selftest", help="a bit-exact check of the emulator against the goldens "
                   "and of each CUDA device against the emulator (seconds); exit 0 or 1")
    for name, what in (("tune", "time every registered tile config at each M and record the "
                        "winners in the tuning cache (needs torch with CUDA)"),
                       ("bench", "the op against torch's bf16 x @ w.T and the unfused bf16 "
                        "pipeline, device and host time per call (needs torch with CUDA)")):
        s = sub.add_parser(name, help=what)
        s.add_argument("--m", type=_int_list, default=None,
                       help="token counts, comma-separated (tune default: %s; bench default: "
                       "1,128,1024,4096)" % ",".join(str(v) for v in _default_buckets()))
        s.add_argument("--n", type=_multiple(128), default=5376, help="output features (5376)")
        s.add_argument("--k", type=_multiple(256), default=7168, help="input features (7168)")
        s.add_argument("--device", type=int, default=None, help="CUDA ordinal (current one)")
        s.add_argument("--sm90_emulation", choices=("faithful", "fast"), default="faithful")
        s.add_argument("--reps", type=_multiple(1), default=20, help="timed batches (20)")
        if name == "bench":
            s.add_argument("--tile", default="auto", help="a registered tile name, or auto")
            s.add_argument("--first-call", action="store_true",
                           help="instead: time the first call of a fresh process (after "
                           "`import minimax_h3_nvfp4`; M = the first --m, default 1) and list "
                           "the compiler modules it imported; then the same through torch's "
                           "op dispatch, for comparison")
    from . import checkpoint_cli
    checkpoint_cli.add_parsers(sub)
    return p


# What `info` shows tile="auto" choosing: the M values, and the SM12x parts it always lists
# (a GPU-less machine included). The heuristic reads only "major"; minor and SM count are the
# parts' published figures (SMs = CUDA cores / 128: 21760, 24064, 6144), shown beside it. The
# names are assumed to be the driver's spelling (none of these parts was at hand); the cache is
# not asked for them, its keys need the driver version too.
INFO_MS = (1, 128, 1024, 4096, 16384)
INFO_N, INFO_K = 5376, 7168
SM12X_PARTS = (
    {"name": "NVIDIA GeForce RTX 5090", "major": 12, "minor": 0, "sm_count": 170},
    {"name": "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "major": 12, "minor": 0,
     "sm_count": 188},
    {"name": "NVIDIA GB10", "major": 12, "minor": 1, "sm_count": 48},  # DGX Spark
)


def _auto_picks(props, cache=None):
    """What tile="auto" runs at each of INFO_MS and why: the tuning cache's winner for this
    device (with a cache), else the heuristic's choice and its reason. Consecutive M with the
    same answer share it: "M=1, 128 -> 128x128 (heuristic: ...); M=1024, ... -> ..."."""
    from . import tuning
    groups = []  # [[ms], "tile (why)"]
    for m in INFO_MS:
        if cache is not None:  # the library says why: "tuning cache winner", "heuristic: ..."
            pick = "%s (%s)" % cache.choose_with_reason(props, m, INFO_N, INFO_K)
        else:
            pick = "%s (heuristic: %s)" % tuning.heuristic_with_reason(props, m)
        if groups and groups[-1][1] == pick:
            groups[-1][0].append(m)
        else:
            groups.append([[m], pick])
    return "; ".join("M=%s -> %s" % (", ".join(str(m) for m in ms), pick)
                     for ms, pick in groups)


def _default_buckets():
    from . import tuning
    return tuning.DEFAULT_M_BUCKETS


def cmd_info(out):
    from . import __version__, _native, tuning
    from .diffusion_ops import backend_name
    import numpy
    lib = _native.lib()
    print("minimax_h3_nvfp4 %s" % __version__, file=out)
    print("  package:        %s" % os.path.dirname(os.path.abspath(__file__)), file=out)
    print("  native library: %s (version %s, C ABI %d)" % (
        lib.path, _native.library_version(), lib.h3_capi_version()), file=out)
    print("  python:         %s (%s %s)" % (sys.executable, platform.python_implementation(),
                                            platform.python_version()), file=out)
    print("  numpy:          %s" % numpy.__version__, file=out)
    try:
        import torch
        cuda = torch.version.cuda or "none"
        print("  torch:          %s (built with CUDA %s; torch.cuda.is_available(): %s)" % (
            torch.__version__, cuda, torch.cuda.is_available()), file=out)
    except ImportError:
        print("  torch:          not importable (NumPy arrays and the emulator only)", file=out)
    default = tuning.default_tile()
    print("  tile configs:   %s" % ", ".join(
        t + " (the API's default: resolved per call, below)" if t == "auto" else
        t + " (the registry's default: auto's fallback)" if t == default else t
        for t in _native.tiles()), file=out)
    count, reason = _native.device_count()
    present = {}
    if count == 0:
        print("CUDA devices: none: emulator only (%s)" % reason, file=out)
    for i in range(count):
        props = _native.device_properties(i)
        present[tuning.device_key(props)] = (i, props)
        try:
            build = backend_name(i)
            if props["major"] == 9:
                build += "; fast: " + backend_name(i, "fast")
        except RuntimeError as e:
            build = "not supported: %s" % e
        print("cuda:%d: %s, sm_%d%d, %d SMs, driver %d: %s" % (
            i, props["name"], props["major"], props["minor"], props["sm_count"],
            props["driver_version"], build), file=out)
    cache = tuning.cache()
    entries = cache.entries()
    exists = os.path.exists(cache.path)
    print("tuning cache: %s (%s)" % (cache.path, "%d device entries of this version"
                                     % len(entries) if exists else "absent"), file=out)
    for key in sorted(entries):
        mark = " [cuda:%d]" % present[key][0] if key in present else ""
        print("  %s%s" % (key, mark), file=out)
        for skey, table in sorted(entries[key].items()):
            print("    %s: %s" % (skey, ", ".join("M=%d -> %s" % (m, table[m])
                                                 for m in sorted(table))), file=out)
    for key, (i, props) in sorted(present.items(), key=lambda kv: kv[1][0]):
        print("tile=\"auto\" on cuda:%d at N=%d K=%d: %s" % (i, INFO_N, INFO_K,
                                                          _auto_picks(props, cache)), file=out)
    print("tile=\"auto\" on SM12x parts without a tuning cache entry (the heuristic), N=%d K=%d:"
          % (INFO_N, INFO_K), file=out)
    for props in SM12X_PARTS:
        print("  %s, sm_%d%d, %d SMs: %s" % (props["name"], props["major"], props["minor"],
                                           props["sm_count"], _auto_picks(props)), file=out)
    return 0


def cmd_selftest(out, err):
    from . import selftest
    return selftest.run(out, err)


def cmd_tune(args, err):
    from . import autotune, tuning
    try:
        autotune.tune(args.m or tuning.DEFAULT_M_BUCKETS, args.n, args.k, args.device,
                      args.sm90_emulation, args.reps)
    except autotune.NoCudaError as e:
        print("%s tune: error: needs a CUDA device and torch with CUDA: %s" % (PROG, e),
              file=err)
        return 1
    except ValueError as e:  # --device outside the machine's devices
        print("%s tune: error: %s" % (PROG, e), file=err)
        return 2
    return 0


def cmd_bench(args, out, err):
    from . import _native, autotune
    if args.tile not in _native.tiles():
        print("%s bench: error: --tile must be one of %s, got %r" % (
            PROG, ", ".join(_native.tiles()), args.tile), file=err)
        return 2
    try:
        if args.first_call:
            _, index = autotune.require_cuda(args.device)
            from . import hosttime
            for route in ("fast", "full"):  # the second for comparison, no verdict
                hosttime.first_call(index, (args.m or (1,))[0], args.n, args.k, args.tile,
                                    args.sm90_emulation, out=out, route=route)
            return 0
        autotune.bench(args.m or (1, 128, 1024, 4096), args.n, args.k, args.device,
                       args.sm90_emulation, args.tile, args.reps, out=out)
    except autotune.NoCudaError as e:
        print("%s bench: error: needs a CUDA device and torch with CUDA: %s" % (PROG, e),
              file=err)
        return 1
    except ValueError as e:  # --device outside the machine's devices
        print("%s bench: error: %s" % (PROG, e), file=err)
        return 2
    except RuntimeError as e:  # the first-call process failed
        print("%s bench: error: %s" % (PROG, e), file=err)
        return 1
    return 0


def main(argv=None):
    args = _parser().parse_args(argv)
    out, err = sys.stdout, sys.stderr
    if args.command == "info":
        return cmd_info(out)
    if args.command == "selftest":
        return cmd_selftest(out, err)
    if args.command == "tune":
        return cmd_tune(args, err)
    if args.command in ("inspect", "convert"):
        from . import checkpoint_cli
        return getattr(checkpoint_cli, "cmd_" + args.command)(args, out, err, PROG)
    return cmd_bench(args, out, err)


if __name__ == "__main__":
    sys.exit(main())
