"""The eager fast path's checks, generated from the operand table (_eager execs the source)."""


def route_checks_source(n, required, not_on_gpu, value_rows, written, out, act_q, act_sf,
                        residual):
    """The source of _eager's _route_checks(ops, sm90, gemm, tile), written out row by row from
    the operand table: it runs on every eager call, and unrolled it costs a fraction of loops
    over the rows (host time per call, NOTES.md). It returns (device, dev, out, act_q, act_sf,
    key) where the call may run on the fast path, else None (the full route). key: (dev, sm90,
    gemm, tile, the operands' shapes in table order; None for an operand not given, a host
    value, or an in-place residual). The arguments are row indices of the table (n rows); the
    source uses _eager's names (_PLAIN, _DTYPES, _STRIDED, _C, _forward_ad, _inference_mode)."""
    bad = ("type({t}) not in _PLAIN or {t}.dtype not in _DTYPES[{i}] "
           "or {t}.layout is not _STRIDED or {t}.device != device "
           "or not {t}.is_contiguous() or (grad and {t}.requires_grad)")
    lines = [
        "def _route_checks(ops, sm90, gemm, tile):",
        "    (%s,) = ops" % ", ".join("o%d" % i for i in range(n)),
        "    if type(o0) not in _PLAIN:",
        "        return None",
        "    device = o0.device",
        "    cuda = o0.is_cuda",
        "    if cuda:",
        "        dev = device.index",
        "    elif o0.is_cpu:",
        "        dev = -1",
        "    else:",
        "        return None",
        # A required operand missing is the full route's TypeError; so in_place is only ever
        # read with a residual (a missing residual and a missing out are two absent operands).
        "    if %s:" % " or ".join("o%d is None" % i for i in required),
        "        return None",
    ]
    if not_on_gpu:  # operands the GPU refuses, through the full route (_eager._NOT_ON_GPU)
        lines += ["    if cuda and (%s):" % " or ".join("o%d is not None" % i for i in not_on_gpu),
                  "        return None"]
    for i in value_rows:  # a tensor, or a Python float for the host value
        lines += ["    if type(o%d) not in _PLAIN and type(o%d) is not float:" % (i, i),
                  "        return None"]
    lines += [
        "    out, act_q, act_sf = o%d, o%d, o%d" % (out, act_q, act_sf),
        "    in_place = out is o%d" % residual,
        "    if cuda and (act_q is None) != (act_sf is None):",
        "        return None",  # the GPU's error (both or neither), through the full route
        "    if _forward_ad is not None and getattr(_forward_ad, '_current_level', -1) >= 0:",
        "        return None",
        # The route's checks: type, dtype, device, contiguity, grad (module docstring). A layout
        # without strides (sparse: is_contiguous() may say True, data_ptr() raises) is the full
        # route's, as is anything that raises here.
        "    grad = _C.is_grad_enabled()",
        "    try:",
    ]
    for i in range(n):
        cond = bad.format(t="o%d" % i, i=i)
        if i in value_rows:
            cond = "type(o%d) is not float and (%s)" % (i, cond)
        elif i not in required:
            cond = "o%d is not None and (%s)" % (i, cond)
        lines += ["        if %s:" % cond, "            return None"]
    lines += [
        "    except RuntimeError:",
        "        return None",
        # Writing an inference tensor outside inference mode: the op's route refuses it.
        "    if not _inference_mode() and (%s):" % " or ".join(
            "(o%d is not None and o%d.is_inference())" % (i, i) for i in written),
        "        return None",
        "    a_shape = o0.shape",
        "    if len(a_shape) != 2 or not a_shape[0]:",
        "        return None",  # M = 0 or not 2-D: rare, the full route (its checks, its errors)
    ]
    shapes = []
    for i in range(n):
        if i == 0:
            shapes.append("a_shape")
        elif i == residual:
            shapes.append("None if in_place else o%d.shape" % i)
        elif i in value_rows:
            shapes.append("None if type(o%d) is float else o%d.shape" % (i, i))
        elif i in required:
            shapes.append("o%d.shape" % i)
        else:
            shapes.append("None if o%d is None else o%d.shape" % (i, i))
    lines.append("    return device, dev, out, act_q, act_sf, (dev, sm90, gemm, tile, %s)"
                 % ", ".join("(%s)" % x for x in shapes))
    return "\n".join(lines) + "\n"
