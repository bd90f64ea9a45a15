#!/usr/bin/env python3
"""What any lossless coder of single values could save on EfficientNet-B0's saved activations.

Runs torchvision's EfficientNet-B0 (its own initialization, random data, training mode) and
measures, per kind of activation that its backward reads (convolution, BatchNorm, SiLU and
squeeze-excitation outputs), the order-0 entropy of each float's sign and exponent (its top 9
bits) and of its top 16 bits. The low 16 mantissa bits of such values are close to uniform, so
H(top 16 bits) + 16 bounds what a coder of single values can reach; the weighted bound says
what fraction of the saved bytes any such packing would keep. Not a dependency of the library:
a measurement for docs/BENCHMARKS.md ("Packing every saved tensor would not reach
EfficientNet-B0's goal").

    /usr/bin/python3 bench/peers/activation_entropy.py [--batch 8] [--seed 0]
"""
import argparse
import collections

import numpy as np
import torch
import torchvision


def entropy(symbols):
    _, counts = np.unique(symbols, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    model = torchvision.models.efficientnet_b0()
    model.train()
    outputs = collections.defaultdict(list)

    def keep(kind):
        def hook(module, inputs, output):
            outputs[kind].append(output.detach().clone())  # before an in-place SiLU runs

        return hook

    kinds = {"Conv2d": "convolution", "BatchNorm2d": "BatchNorm", "SiLU": "SiLU",
             "SqueezeExcitation": "squeeze-excitation product"}
    for module in model.modules():
        kind = kinds.get(type(module).__name__)
        if kind:
            module.register_forward_hook(keep(kind))
    with torch.no_grad():
        model(torch.randn(a.batch, 3, 224, 224))

    print(f"EfficientNet-B0, batch {a.batch}, training mode, random data (seed {a.seed})")
    print("| outputs | MiB | H(sign, exponent) bits | H(top 16 bits) bits | bound, bits a value |")
    print("|---|---|---|---|---|")
    total_bytes = 0.0
    total_bits = 0.0
    for kind, tensors in outputs.items():
        n = sum(t.numel() for t in tensors)
        top9 = top16 = 0.0
        for t in tensors:
            bits = t.contiguous().numpy().view(np.uint32).ravel()
            top9 += entropy(bits >> 23) * bits.size
            top16 += entropy(bits >> 16) * bits.size
        bound = top16 / n + 16
        print(f"| {kind} | {4 * n / 2**20:.1f} | {top9 / n:.2f} | {top16 / n:.2f} | {bound:.2f} |")
        total_bytes += 4 * n
        total_bits += bound * n
    n_all = total_bytes / 4
    print(f"All of them: at least {total_bits / n_all:.2f} bits a value, "
          f"{total_bits / n_all / 32:.3f} of their bytes")


if __name__ == "__main__":
    main()
