"""Writes minimax_h3_nvfp4/_operands.py, the Python mirror of the op's operand table.

    python3 gen_operands.py core/operands.def python/native/capi.h OUT

Reads every H3_OPERAND(...) row of core/operands.def (the one declaration, core/operands.h) and
H3_CAPI_BASE_VERSION of capi.h (the version is that times 100 plus the rows, as capi.h says).
Standard library only. The package checks the mirror against the
loaded library's own layout of H3OutProjArgs (h3_args_size / h3_args_offset) when it loads it.
"""

import re
import sys

_ROW = re.compile(r"H3_OPERAND\(\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,"
                  r"\s*(\w+)\s*,\s*(\w+)\s*,\s*(\d+)\s*,\s*((?:\"[^\"]*\"\s*)+)\)")


# core/operands.h's Extent: a row over any other symbol is a typo the C++ build would refuse.
_EXTENTS = ("M", "N", "K", "G", "R", "K_2", "K_16", "X")


def rows(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)  # the header comment names the macro too
    found = []
    for m in _ROW.finditer(text):
        name, dtype, shape, d0, d1, presence, role, align, what = m.groups()
        what = "".join(re.findall(r"\"([^\"]*)\"", what))
        for d in (d0, d1):
            if d not in _EXTENTS:
                raise SystemExit("gen_operands: %s: unknown extent %s (core/operands.h's Extent: "
                                 "%s)" % (name, d, ", ".join(_EXTENTS)))
        dims = tuple(d for d in (d0, d1) if d != "X")
        found.append((name, dtype, shape, dims, presence, role, int(align), what))
    if not found:
        raise SystemExit("gen_operands: no H3_OPERAND rows in the table")
    return found


def main(argv):
    table, capi, out = argv[1:4]
    with open(table) as f:
        ops = rows(f.read())
    with open(capi) as f:
        version = re.search(r"#define H3_CAPI_BASE_VERSION (\d+)", f.read())
    if version is None:
        raise SystemExit("gen_operands: no H3_CAPI_BASE_VERSION in %s" % capi)
    lines = [
        '"""The op\'s operands, one row each: generated from core/operands.def by',
        'python/gen_operands.py (do not edit). Fields: name, dtype, shape, dims, presence, role,',
        'gpu_align, what (core/operands.def says what each means)."""',
        "",
        "import collections",
        "",
        "CAPI_VERSION = %d  # capi.h: H3_CAPI_BASE_VERSION * 100 + the table's rows"
        % (int(version.group(1)) * 100 + len(ops)),
        "",
        "Operand = collections.namedtuple(",
        '    "Operand", "name dtype shape dims presence role gpu_align what")',
        "",
        "OPERANDS = (",
    ]
    for r in ops:
        lines.append("    Operand(%r, %r, %r, %r, %r, %r, %d, %r)," % r)
    lines += [")", "", "NAMES = tuple(o.name for o in OPERANDS)", ""]
    with open(out, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv)
