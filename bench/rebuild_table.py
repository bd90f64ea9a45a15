#!/usr/bin/env python3
"""Planned training memory with and without op-level recomputation (`--recompute cheap`) for
the bundled networks, from `frugal memory --json` (shapes only: nothing runs), as the
markdown table of docs/RECOMPUTE.md. Usage: bench/rebuild_table.py [--frugal build/apps/frugal]
"""
import argparse
import json
import subprocess
import time

CASES = [("resnet20", 128), ("resnet110", 64), ("resnet1001", 16), ("resnet18", 32),
         ("resnet50", 32), ("googlenet", 64), ("alexnet", 64), ("vgg-a", 64),
         ("densenet121", 32), ("densenet40", 64), ("densenet100", 64), ("densenet160", 64),
         ("small-cnn", 64)]
MIB = float(1 << 20)


def memory(frugal, model, batch, recompute):
    cmd = [frugal, "memory", "--model", model, "--batch", str(batch), "--json",
           "--recompute", recompute]
    if model in ("alexnet", "vgg-a"):
        cmd.append("--no-dropout")
    start = time.time()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out)["modes"], time.time() - start


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--frugal", default="build/apps/frugal")
    o = p.parse_args()
    print("| network | batch | eager (PyTorch-like) MiB | planned MiB | --recompute cheap MiB | "
          "cheap / planned | cheap / eager | rebuilt ops | rebuild flops, % of forward | "
          "`frugal memory` s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for model, batch in CASES:
        base, _ = memory(o.frugal, model, batch, "none")
        modes, seconds = memory(o.frugal, model, batch, "cheap")
        r = modes.get("recompute")
        eager = base["eager"]["total"] / MIB
        planned = base["planned"]["total"] / MIB
        cheap = r["total"] / MIB if r else planned
        ops = ", ".join(f"{n} {k}" for k, n in r.get("rebuilt_by_op", {}).items()) if r else "none"
        share = 100.0 * r["rebuild_flops"] / r["forward_flops"] if r and r["forward_flops"] else 0
        print(f"| {model} | {batch} | {eager:.1f} | {planned:.1f} | {cheap:.1f} | "
              f"{cheap / planned:.2f} | {cheap / eager:.2f} | {ops} | {share:.2f} | "
              f"{seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
