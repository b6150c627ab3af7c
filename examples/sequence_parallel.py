#!/usr/bin/env python3
"""Sequence parallelism: the fused NVFP4 out projection on each rank's tokens, gathered.

    venv/bin/python -m torch.distributed.run --standalone --nproc_per_node=N \\
        --redirects 1 --tee 1 examples/sequence_parallel.py [--device cpu|cuda] [--tokens M] \\
        [--out_features N] [--in_features K]

(venv/bin/python: the venv of README.md "Python". Long option names: torch.distributed.run's
own parser would take --m or --n as an abbreviation of one of its options. --redirects 1 --tee 1:
without them the launcher of Debian's torch 1.13 on Python 3.11 crashes before starting a rank,
sequence_parallel_test.py says why; newer torch takes them too.)

In xDiT-style sequence parallelism (Ulysses or ring attention), after attention every rank holds
its own tokens with all heads: [M_r, K]. The out projection with its gated residual is
row-parallel over tokens: each rank runs it on its shard with the full weight, and no
communication is needed for the op itself. This script does that with uneven shards (M need not
divide by the world size), then gathers the shards on rank 0 (for the check only; a model
would keep them sharded) and compares them bit for bit with one process running all M tokens.

The one value that must agree across ranks is the activation global scale: each rank's
calibration amax is all-reduced with MAX, so every shard quantizes with the scale one process
computes over all tokens. (A per-shard scale would give each rank a different NVFP4 grid.)

--device cpu: gloo, the bit-exact emulator on CPU torch tensors. --device cuda: one GPU per rank
with NCCL; with more ranks than GPUs, ranks share GPUs and gloo carries the gather (through the
host). Exit status 0 when the gathered output is bit-identical, 1 otherwise (every rank).
"""

import argparse
import os
import shlex
import sys

import torch
import torch.distributed as dist

from minimax_h3_nvfp4 import NVFP4GatedResidualLinear, calibration


def shard_bounds(m, world):
    """[start, stop) of each rank's tokens: the first m % world ranks take one more."""
    base, extra = divmod(m, world)
    bounds, start = [], 0
    for r in range(world):
        size = base + (1 if r < extra else 0)
        bounds.append((start, start + size))
        start += size
    return bounds


def problem(m, n, k, g, seed):
    """Every rank makes the same full problem (CPU), then keeps its shard: bf16 attention
    outputs with outlier channels, an nn.Linear-like weight, the gate table, indices (some
    outside [0, G): those rows are the residual), residual."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(m, k, generator=gen)
    x[:, torch.randperm(k, generator=gen)[: max(1, k // 200)]] *= 40.0
    w = torch.randn(n, k, generator=gen) / k ** 0.5
    gate = torch.randn(g, n, generator=gen) * 0.5
    idx = torch.randint(-1, g + 1, (m,), generator=gen, dtype=torch.int32)
    res = torch.randn(m, n, generator=gen)
    bf = lambda t: t.to(torch.bfloat16)  # noqa: E731
    return bf(x), bf(w), bf(gate), idx, bf(res)


def act_global_scale(x_local, device, group_backend_device):
    """RN(RN(1 / amax) * 2688) over every rank's tokens (contract section 5, as
    calibration.act_global_scale): local amax, all-reduced with MAX."""
    amax = x_local.float().abs().amax() if x_local.numel() else torch.zeros(())
    amax = amax.reshape(1).to(group_backend_device)
    dist.all_reduce(amax, op=dist.ReduceOp.MAX)
    return calibration.global_scale_of_amax(amax.to(device))


def gather_rows(local, bounds, comm_device):
    """The shards, concatenated in rank order, on every rank. Shards are padded to the largest
    and travel as bytes (any backend carries uint8; bf16 bits are kept exactly)."""
    rows = max(b - a for a, b in bounds)
    n = local.shape[1]
    raw = local.contiguous().view(torch.uint8).to(comm_device)          # [m_r, 2n]
    padded = torch.zeros(rows, 2 * n, dtype=torch.uint8, device=comm_device)
    padded[: raw.shape[0]] = raw
    parts = [torch.empty_like(padded) for _ in bounds]
    dist.all_gather(parts, padded)
    full = torch.cat([p[: b - a] for p, (a, b) in zip(parts, bounds)])
    return full.view(torch.bfloat16)


def launch_command(nproc):
    """The command that runs this script, with its arguments, under the launcher (the
    --redirects / --tee values the module docstring explains)."""
    return shlex.join([sys.executable, "-m", "torch.distributed.run", "--standalone",
                       "--nproc_per_node=%d" % nproc, "--redirects", "1", "--tee", "1",
                       sys.argv[0]] + sys.argv[1:])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--tokens", type=int, default=1001, help="M in all (default 1001: uneven)")
    p.add_argument("--out_features", type=int, default=5376, help="N")
    p.add_argument("--in_features", type=int, default=7168, help="K")
    p.add_argument("--gates", type=int, default=9, help="G")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--per_shard_scale", action="store_true",
                   help="the mistake this script guards against: calibrate act_global_scale on "
                   "each rank's own tokens (the check then fails)")
    args = p.parse_args()
    if "RANK" not in os.environ:
        sys.exit("sequence_parallel: run it under torch.distributed.run, e.g.\n    %s"
                 % launch_command(2))
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    if args.device == "cuda":
        if not torch.cuda.is_available():
            sys.exit("sequence_parallel: --device cuda needs torch with a CUDA device")
        gpus = torch.cuda.device_count()
        device = torch.device("cuda", local_rank % gpus)
        torch.cuda.set_device(device)
        backend = "nccl" if world <= gpus and dist.is_nccl_available() else "gloo"
    else:
        device, backend = torch.device("cpu"), "gloo"
    comm_device = device if backend == "nccl" else torch.device("cpu")
    dist.init_process_group(backend)

    args.m, args.n, args.k = args.tokens, args.out_features, args.in_features
    bounds = shard_bounds(args.m, world)
    lo, hi = bounds[rank]
    x, w, gate, idx, res = problem(args.m, args.n, args.k, args.gates, args.seed)
    x_r, idx_r, res_r = (t[lo:hi].to(device) for t in (x, idx, res))

    # The weight is quantized once per rank (the same bits everywhere; a real model loads it).
    if args.per_shard_scale:
        proj = NVFP4GatedResidualLinear(w.to(device), calibration_sample=x_r)
    else:
        proj = NVFP4GatedResidualLinear(w.to(device), act_global_scale(x_r, device, comm_device))
    with torch.no_grad():
        out_r = proj(x_r, res_r, gate.to(device), idx_r)
    gathered = gather_rows(out_r, bounds, comm_device)

    verdict = torch.zeros(1, dtype=torch.int32, device=comm_device)
    if rank == 0:
        # One process over all tokens, calibrated on all of them (so the all-reduced scale is
        # checked too).
        single = NVFP4GatedResidualLinear(w.to(device), calibration_sample=x.to(device))
        with torch.no_grad():
            want = single(x.to(device), res.to(device), gate.to(device), idx.to(device)).cpu()
        got = gathered.cpu()
        diff = (got.view(torch.int16) != want.view(torch.int16))
        shards = [b - a for a, b in bounds]
        what = ("world %d (%s, %s), shards %s rows, gathered [%d, %d] bf16"
                % (world, backend, device.type, shards, got.shape[0], got.shape[1]))
        if diff.any():
            i, j = (int(v) for v in diff.nonzero()[0])
            print("sequence_parallel: %s: DIFFERS from one process over all %d tokens at %d "
                  "elements; first [%d, %d]: got 0x%04x, want 0x%04x" % (
                      what, args.m, int(diff.sum()), i, j,
                      int(got.view(torch.int16)[i, j]) & 0xFFFF,
                      int(want.view(torch.int16)[i, j]) & 0xFFFF), flush=True)
            verdict.fill_(1)
        else:
            print("sequence_parallel: %s: BIT-IDENTICAL to one process over all %d tokens "
                  "(N=%d, K=%d, act_global_scale %.6g)" % (
                      what, args.m, args.n, args.k, float(proj.act_global_scale)), flush=True)
    dist.broadcast(verdict, src=0)
    dist.destroy_process_group()
    return int(verdict.item())


if __name__ == "__main__":
    sys.exit(main())
