"""`python -m minimax_h3_nvfp4 inspect FILE_OR_DIR` and `convert SRC DST`: users' NVFP4
checkpoints (minimax_h3_nvfp4.checkpoints). Exit status: 0 success; 1 a checkpoint refused
(unreadable, ambiguous, unsupported, a layer contradicting its format); 2 a usage error."""

import os

import numpy as np

from . import checkpoint_formats as cf
from . import checkpoints

FORMAT_CHOICES = ("auto",) + tuple(checkpoints.FORMATS)


def add_parsers(sub):
    """The two subcommands, on __main__'s subparsers."""
    s = sub.add_parser("inspect", help="a users' NVFP4 checkpoint (ModelOpt NVFP4 or NVFP4_SVD, "
                       "compressed-tensors, comfy, Nunchaku SVDQuant; or a converted file): the "
                       "format detected and why, the layers, shapes, scale ranges, anything "
                       "suspicious")
    s.add_argument("path", metavar="FILE_OR_DIR")
    s.add_argument("--format", choices=FORMAT_CHOICES, default="auto")
    s = sub.add_parser("convert", help="a checkpoint's NVFP4 layers to this package's layout: "
                       "one safetensors file DST and DST's .manifest.json")
    s.add_argument("src", metavar="SRC")
    s.add_argument("dst", metavar="DST")
    s.add_argument("--format", choices=FORMAT_CHOICES, default="auto")
    s.add_argument("--layers", metavar="REGEX", default=None,
                   help="only layers whose name matches (re.search)")


def _range(values):
    nz = values[values > 0]
    if not nz.size:
        return "all zero"
    return "%.6g .. %.6g" % (nz.min(), nz.max())


def _layer_report(fmt, ckpt, name, out):
    """Prints one layer; returns (refused?, [suspicious lines])."""
    own = sorted((n, t) for n, t in ckpt.tensors.items()
                 if n.startswith(name + ".") and "." not in n[len(name) + 1:])
    stored = "      tensors: %s" % ", ".join("%s %s %s" % (n[len(name):], t.dtype, list(t.shape))
                                           for n, t in own)
    try:
        c = checkpoints.convert_layer(ckpt, name, fmt)
    except checkpoints.CheckpointError as e:
        print("  %s: REFUSED: %s" % (name, e), file=out)
        print(stored, file=out)
        return True, []
    n, k = c.out_features, c.in_features
    sf = cf.e4m3_value(cf.unswizzle(c.o_weight_sf, n, k // 16))
    zero = int((sf == 0).sum())
    print("  %s: N=%d K=%d; block scales %d: %s, %d zero; o_weight_global_scale %.9g%s"
          % (name, n, k, sf.size, _range(sf), zero, float(c.o_weight_global_scale[0]),
             "; act_global_scale %.9g" % float(c.act_global_scale[0])
             if c.act_global_scale is not None else
             "; act_global_scale: calibration required (no input scale in the checkpoint)"),
          file=out)
    if c.act_smooth is not None or c.lora_down is not None:
        print("      options: %s" % "; ".join(
            ([] if c.act_smooth is None else ["act_smooth [%d]: %s" % (
                k, _range(np.abs(c.act_smooth.astype(np.float64))))])
            + ([] if c.lora_down is None else ["lora_down [%d, %d], lora_up [%d, %d] (rank %d)"
                                               % (c.lora_down.shape + c.lora_up.shape
                                                  + (c.lora_down.shape[0],))])), file=out)
    print(stored, file=out)
    for note in c.notes:
        print("      %s" % note, file=out)
    sus = []
    if zero:
        rows = np.flatnonzero((sf == 0).all(axis=1))
        tail = rows[rows >= n - len(rows)] if len(rows) else rows
        sus.append("%s: %d of %d block scales are zero%s" % (
            name, zero, sf.size, " (rows %d..%d all zero: %s)" % (
                tail[0], n - 1, "comfy pads rows to a multiple of 16" if fmt == "comfy"
                else "padding?") if len(tail) and tail[-1] == n - 1 and
            np.array_equal(tail, np.arange(tail[0], n)) else ""))
    if np.unique(c.o_weight_q).size == 1:
        sus.append("%s: every code byte is 0x%02x (all-equal codes)" % (name, c.o_weight_q.flat[0]))
    if sf.size and sf.max() != 448:
        sus.append("%s: the largest block scale is %.6g, not 448: the global scale was not made "
                   "from this weight's amax (a static or calibrated global scale?)"
                   % (name, sf.max()))
    gs = float(c.o_weight_global_scale[0])
    if gs < 1:
        sus.append("%s: o_weight_global_scale %.6g < 1 means amax > 2688: is the source's "
                   "global scale stored in the other direction?" % (name, gs))
    return False, sus


def cmd_inspect(args, out, err, prog):
    try:
        ckpt = checkpoints.open_checkpoint(args.path)
        fmt, why = checkpoints.detect(ckpt, args.format)
        fmt, names, skipped = checkpoints.list_layers(ckpt, fmt)
    except checkpoints.CheckpointError as e:
        print("%s inspect: error: %s" % (prog, e), file=err)
        return 1
    print("checkpoint: %s" % ckpt.path, file=out)
    print("  files: %s" % ", ".join("%s (%d tensors)" % (
        os.path.basename(f), sum(1 for v in ckpt.file_of.values() if v == f))
        for f in ckpt.files), file=out)
    if ckpt.configs:
        print("  configs: %s" % ", ".join(sorted(ckpt.configs)), file=out)
    print("format: %s (%s)" % (fmt, checkpoints.FORMATS.get(fmt, "converted by this package")),
          file=out)
    for reason in why:
        print("  because: %s" % reason, file=out)
    print("layers: %d NVFP4" % len(names), file=out)
    refused, sus = 0, []
    for name in names:
        bad, s = _layer_report(fmt, ckpt, name, out)
        refused += bad
        sus += s
    for name, reason in sorted(skipped.items()):
        print("  %s: skipped: %s" % (name, reason), file=out)
    print("suspicious: %s" % ("none" if not sus else "%d" % len(sus)), file=out)
    for s in sus:
        print("  %s" % s, file=out)
    if refused:
        print("%s inspect: error: %d of %d layers refused (REFUSED above)"
              % (prog, refused, len(names)), file=err)
        return 1
    return 0


def cmd_convert(args, out, err, prog):
    try:
        m = checkpoints.convert(args.src, args.dst, format=args.format, layers=args.layers,
                                progress=True)
    except checkpoints.CheckpointError as e:
        print("%s convert: error: %s" % (prog, e), file=err)
        return 1
    calib = [l["name"] for l in m["layers"] if l["calibration_required"]]
    print("converted %d %s layers of %s into %s (%d bytes; manifest %s)" % (
        len(m["layers"]), m["source"]["format"], args.src, args.dst,
        os.path.getsize(args.dst), checkpoints.manifest_path(args.dst)), file=out)
    print("  detected because: %s" % "; ".join(m["source"]["detected_because"]), file=out)
    if m["skipped_layers"]:
        print("  skipped: %s" % "; ".join("%s (%s)" % kv for kv in
                                          sorted(m["skipped_layers"].items())), file=out)
    print("  calibration required (no input scale): %s" % (", ".join(calib) if calib
                                                           else "none"), file=out)
    return 0
