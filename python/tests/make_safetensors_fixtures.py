#!/usr/bin/env python3
"""Writes small safetensors files with the REAL `safetensors` package, and a manifest of what
they hold, for python/tests/safetensors_io_test.py (issue 31): our reader must read them and
our writer must write the same bytes.

    python3 python/tests/make_safetensors_fixtures.py OUT_DIR     # needs safetensors + numpy
                                                                  # (torch: the BF16 / F8 file)
    cp OUT_DIR/* testdata/safetensors/                            # then commit them

Files (each with at most one metadata key: the real library keeps metadata in a hash map,
whose order varies between runs, so only such files have one byte layout):
  u8_np.safetensors     safetensors.numpy: "codes" U8 [4, 8]; metadata {"format": "np"}
  mixed_np.safetensors  safetensors.numpy: F32 [3, 5], I64 [2], F16 [] (0-d), BOOL [2, 2],
                        I8 [0, 4] (empty), U16 [3]; no metadata (the real library's sort by
                        dtype alignment, then name, is what the layout shows)
  torch_pt.safetensors  safetensors.torch, where torch is importable: BF16 [3, 5], F32 []
                        and, with torch >= 2.1, F8_E4M3 [2, 8]; metadata {"format": "pt"}
  manifest.json         per file: sha256, metadata (null for none), the tensors in file order
                        with dtype, shape and values as our reader returns them (BF16 as uint16
                        bit patterns, F8 as uint8 bytes), and the versions that wrote them.

Standalone: it does not import minimax_h3_nvfp4.
"""

import hashlib
import json
import os
import sys


def _file_order(path):
    """Tensor names by data offset, read from the header (the order the real library chose)."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n).decode("utf-8"))
    header.pop("__metadata__", None)
    return sorted(header, key=lambda name: header[name]["data_offsets"])


def _entry(dtype, array):
    return {"dtype": dtype, "shape": list(array.shape), "values": array.tolist()}


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    out = argv[1]
    try:
        import numpy as np
        import safetensors
        import safetensors.numpy
    except ImportError as e:
        print("make_safetensors_fixtures: needs numpy and the real safetensors package (%s)"
              % e, file=sys.stderr)
        return 1
    try:
        import torch
        import safetensors.torch
    except ImportError:
        torch = None
    os.makedirs(out, exist_ok=True)
    files = {}

    codes = np.arange(32, dtype=np.uint8).reshape(4, 8)
    files["u8_np.safetensors"] = ({"codes": _entry("U8", codes)}, {"format": "np"})
    safetensors.numpy.save_file({"codes": codes}, os.path.join(out, "u8_np.safetensors"),
                                metadata={"format": "np"})

    mixed = {
        "w": ("F32", (np.arange(15, dtype=np.float32) * 0.25 - 1.5).reshape(3, 5)),
        "ids": ("I64", np.array([-1, 2 ** 40], dtype=np.int64)),
        "scale": ("F16", np.array(1.5, dtype=np.float16)),
        "mask": ("BOOL", np.array([[True, False], [False, True]])),
        "empty": ("I8", np.zeros((0, 4), dtype=np.int8)),
        "u16": ("U16", np.array([0, 1, 65535], dtype=np.uint16)),
    }
    files["mixed_np.safetensors"] = ({k: _entry(d, a) for k, (d, a) in mixed.items()}, None)
    safetensors.numpy.save_file({k: a for k, (d, a) in mixed.items()},
                                os.path.join(out, "mixed_np.safetensors"))

    if torch is not None:
        bf16 = (torch.arange(15, dtype=torch.float32) * 0.25 - 1.5).reshape(3, 5)
        bf16 = bf16.to(torch.bfloat16)
        tensors = {"weight_bf16": bf16, "weight_scale_2": torch.tensor(0.125)}
        entries = {"weight_bf16": _entry("BF16", bf16.view(torch.int16).numpy().view(np.uint16)),
                   "weight_scale_2": _entry("F32", tensors["weight_scale_2"].numpy())}
        if hasattr(torch, "float8_e4m3fn"):
            f8 = torch.linspace(-448, 448, 16).reshape(2, 8).to(torch.float8_e4m3fn)
            tensors["weight_scale"] = f8
            entries["weight_scale"] = _entry("F8_E4M3", f8.view(torch.uint8).numpy())
        else:
            print("make_safetensors_fixtures: torch %s has no float8_e4m3fn: no F8_E4M3 tensor"
                  % torch.__version__, file=sys.stderr)
        files["torch_pt.safetensors"] = (entries, {"format": "pt"})
        safetensors.torch.save_file(tensors, os.path.join(out, "torch_pt.safetensors"),
                                    metadata={"format": "pt"})
    else:
        print("make_safetensors_fixtures: no torch: torch_pt.safetensors not written",
              file=sys.stderr)

    manifest = {
        "generator": "python/tests/make_safetensors_fixtures.py",
        "safetensors_version": getattr(safetensors, "__version__", "unknown"),
        "numpy_version": np.__version__,
        "torch_version": torch.__version__ if torch is not None else None,
        "files": {},
    }
    for name, (entries, metadata) in sorted(files.items()):
        path = os.path.join(out, name)
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        manifest["files"][name] = {
            "sha256": digest,
            "metadata": metadata,
            "tensors": [dict(entries[t], name=t) for t in _file_order(path)],
        }
    with open(os.path.join(out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    for name in sorted(manifest["files"]) + ["manifest.json"]:
        print(os.path.join(out, name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
