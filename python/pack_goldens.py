"""Packs the op goldens selftest needs (testdata/op_exact_*, op_entropy_*) into one .npz.

    python3 pack_goldens.py OUT.npz FILE.npy...

An .npz is a zip of .npy files named by their keys: the standard library writes it, so the build
needs no NumPy. Files of other cases, and the exact accumulator (not used), are left out.
"""

import os
import sys
import zipfile

CASES = ("op_exact", "op_entropy")
FIELDS = ("attn_out", "o_weight_q", "o_weight_sf", "o_weight_global_scale", "act_global_scale",
          "gate", "gate_index", "residual", "out", "act_q", "act_sf")


def main(argv):
    if len(argv) < 3 or not argv[1].endswith(".npz"):
        sys.exit("usage: pack_goldens.py OUT.npz FILE.npy... (got %r)" % (argv[1:2],))
    by_name = {os.path.basename(p): p for p in argv[2:]}
    want = ["%s_%s.npy" % (c, f) for c in CASES for f in FIELDS]
    missing = [w for w in want if w not in by_name]
    if missing:
        sys.exit("pack_goldens.py: the inputs must include %s, missing %s"
                 % (", ".join(want), ", ".join(missing)))
    with zipfile.ZipFile(argv[1], "w", zipfile.ZIP_DEFLATED) as z:
        for w in want:
            info = zipfile.ZipInfo(w, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(by_name[w], "rb") as f:
                z.writestr(info, f.read())


if __name__ == "__main__":
    main(sys.argv)
