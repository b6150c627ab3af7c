"""After `python -m minimax_h3_nvfp4 tune`: shows, per M bucket of the tuning cache, the tile a
tile="auto" call on CUDA device 0 actually ran with (the op reports it), beside the cache's
winner. Exit status 0 when every call ran its bucket's winner, 1 otherwise (or with no cache
entry for this device).

    PYTHONPATH=PKG_DIR MINIMAX_H3_NVFP4_TUNE_CACHE=... python3 python/tests/auto_tile_check.py
"""

import sys

import torch

from minimax_h3_nvfp4 import _native, _torch_op, tuning
from minimax_h3_nvfp4.diffusion_ops import minimax_h3_nvfp4_out_proj

N, K, G = 5376, 7168, 9


def main():
    props = _native.device_properties(0)
    cache = tuning.cache()
    table = cache.entries().get(tuning.device_key(props), {})
    names = {code: name for name, code in _native.tiles().items()}
    dev = torch.device("cuda", 0)
    ok, shown = True, 0
    for emu in ("faithful", "fast") if props["major"] == 9 else ("faithful",):
        buckets = table.get(tuning.shape_key(props, N, K, emu), {})
        for m in sorted(buckets):
            x = torch.randn(m, K, device=dev).to(torch.bfloat16)
            q = torch.zeros(N, K // 2, dtype=torch.uint8, device=dev)
            sf = torch.full((N, K // 16), 0x38, dtype=torch.uint8, device=dev)
            one = torch.ones(1, device=dev)
            gate = torch.randn(G, N, device=dev).to(torch.bfloat16)
            idx = torch.zeros(m, dtype=torch.int32, device=dev)
            res = torch.randn(m, N, device=dev).to(torch.bfloat16)
            minimax_h3_nvfp4_out_proj(x, q, sf, one, one, gate, idx, res, sm90_emulation=emu)
            torch.cuda.synchronize()
            ran = names.get(_torch_op.stats.get("tile"), "?")
            want = buckets[m]
            good = ran == want
            ok &= good
            shown += 1
            print("auto: %s M=%d: tile=\"auto\" ran %s; tuned winner %s: %s"
                  % (emu, m, ran, want, "PASS" if good else "FAIL"))
    if not shown:
        print("auto: FAIL: the tuning cache %s has no entry for %s at N=%d K=%d (run tune first)"
              % (cache.path, tuning.device_key(props), N, K))
        return 1
    print("auto picks the tuned winner: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
