#!/usr/bin/env python3
"""The data-parallel cost model of docs/DISTRIBUTED.md: the predicted scaling efficiency of a
training step (weak scaling: the per-rank batch fixed) from 2 to 1024 ranks.

    step(N) = compute + max(0, comm(N) - backward) + tail(N)

compute and backward are one rank's measured step and backward seconds (frugal bench --json);
comm(N) is the allreduce of every gradient bucket, as frugal's executor cuts them (an eighth of
the gradient bytes each, within [64 KiB, 25 MiB]); it overlaps backward, except the reduction
of the last bucket (tail), which starts when backward ends. Allreduce of n bytes over N ranks:
    ring: 2 (N-1) alpha + 2 (N-1)/N n beta
    tree: 2 ceil(log2 N) alpha + 2 n beta   (a pipelined reduce and broadcast)
efficiency(N) = compute / step(N).

Each model is also shown with its compute 100x faster (a device 100 times this CPU's rank,
same bytes to reduce), where the interconnect starts to matter.

Usage: bench/dist_model.py MEASURED.json
MEASURED.json: {"models": {name: {"step_s", "backward_s", "grad_bytes", "batch"}},
                "loopback": {"alpha_us", "beta_ns"}}
"""
import json
import math
import sys

INTERCONNECTS = [
    # name, alpha (s), beta (s per byte), where the figures come from
    ("loopback (measured)", None, None, "bench_allreduce on this machine"),
    ("10 GbE", 20e-6, 1 / 1.25e9,
     "20 us end to end (Hurwitz & Feng, HOTI 2003); 10 Gb/s line rate"),
    ("InfiniBand EDR", 4.1e-6, 1 / 12.5e9,
     "4.1 us MPI latency (Liu et al., IBM, InfiniBand over PCI Express, 2005); 100 Gb/s line rate"),
]
RANKS = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]


def buckets(grad_bytes):
    size = min(max(grad_bytes / 8, 64 << 10), 25 << 20)
    k = math.ceil(grad_bytes / size)
    return [size] * (k - 1) + [grad_bytes - size * (k - 1)]


def allreduce(n, N, alpha, beta, algo):
    if N == 1:
        return 0.0
    if algo == "ring":
        return 2 * (N - 1) * alpha + 2 * (N - 1) / N * n * beta
    return 2 * math.ceil(math.log2(N)) * alpha + 2 * n * beta


def efficiency(m, N, alpha, beta, algo):
    bs = buckets(m["grad_bytes"])
    comm = sum(allreduce(b, N, alpha, beta, algo) for b in bs)
    tail = allreduce(bs[-1], N, alpha, beta, algo)
    step = m["step_s"] + max(0.0, comm - m["backward_s"]) + tail
    return m["step_s"] / step


def main():
    measured = json.load(open(sys.argv[1]))
    loop = measured["loopback"]
    print("| model (per-rank batch, step, backward) | interconnect | algorithm | "
          + " | ".join(str(n) for n in RANKS) + " |")
    print("| --- | --- | --- | " + " | ".join("---:" for _ in RANKS) + " |")
    models = []
    for name, m in measured["models"].items():
        models.append((name, m))
        fast = dict(m, step_s=m["step_s"] / 100, backward_s=m["backward_s"] / 100)
        models.append((name + ", compute 100x faster", fast))
    for name, m in models:
        for net, alpha, beta, _ in INTERCONNECTS:
            if alpha is None:
                alpha, beta = loop["alpha_us"] * 1e-6, loop["beta_ns"] * 1e-9
            for algo in ("ring", "tree"):
                effs = [efficiency(m, n, alpha, beta, algo) for n in RANKS]
                print(f"| {name} (b{m['batch']}, {m['step_s']:.3g} s, {m['backward_s']:.3g} s) "
                      f"| {net} | {algo} | " + " | ".join(f"{e:.2f}" for e in effs) + " |")
    print()
    for net, alpha, beta, source in INTERCONNECTS:
        if alpha is None:
            alpha, beta = loop["alpha_us"] * 1e-6, loop["beta_ns"] * 1e-9
        print(f"- {net}: alpha {alpha * 1e6:.1f} us, beta {beta * 1e9:.3f} ns/byte "
              f"({1 / beta / 1e9:.2f} GB/s): {source}")


if __name__ == "__main__":
    main()
