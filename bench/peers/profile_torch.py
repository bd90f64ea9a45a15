# Where a PyTorch peer's training step goes, beside `frugal bench --profile`: the same network
# as measure_torch.py builds (bench/peers/pytorch_nets.py), random data, SGD momentum 0.9, two
# warm-up steps, one step timed on its own, then one step under torch.profiler, whose operators
# are listed by their own CPU time (convolution_backward, mkldnn_convolution, mm, ...).
#   python3 bench/peers/profile_torch.py --model alexnet --batch 64
import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_nets  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", required=True, choices=sorted(pytorch_nets.NETS))
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rows", type=int, default=15, help="operators listed")
    o = p.parse_args()
    torch.set_num_threads(o.threads)
    torch.manual_seed(0)
    model, shape, classes, log_probs = pytorch_nets.build(o.model)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(o.batch, *shape)
    extra = [make(o.batch) for _, make in pytorch_nets.EXTRA_INPUTS.get(o.model, [])]
    y = torch.randint(0, classes, (o.batch, *pytorch_nets.LABEL_SHAPE.get(o.model, ())))
    loss_of = F.nll_loss if log_probs else F.cross_entropy

    def step():
        opt.zero_grad(set_to_none=True)
        loss_of(model(x, *extra), y).backward()
        opt.step()

    step()
    step()
    start = time.perf_counter()
    step()
    print(f"{o.model} batch {o.batch}, {o.threads} threads: a step took "
          f"{time.perf_counter() - start:.3f} s outside the profiler")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        step()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=o.rows))


if __name__ == "__main__":
    main()
