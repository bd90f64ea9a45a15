# One PyTorch network timed and weighed as `frugal bench` does it: steps on random data
# (training: forward, NLL / cross-entropy, backward, SGD momentum 0.9), the median step time
# after a warm-up, the peak live bytes of PyTorch's CPU allocator, and the process peak RSS.
#
# Allocator peak: one more steady-state step runs under torch.profiler with
# profile_memory=True; its allocation events (every alloc and free of the CPU allocator, in
# order) give the live-byte curve above the bytes already live when the step starts
# (parameters, BN running statistics, momentum, inputs), which are added back. Gradients are
# dropped before each step (zero_grad(set_to_none=True)), PyTorch's lowest-memory setting.
#
# --device cuda: the same steps on the GPU, timed with a synchronize before each clock read; the
# allocator peak is torch.cuda.max_memory_allocated over the measured steps (cuDNN's workspace
# is allocated through it, so it is included), and the driver's figure is cudaMemGetInfo's used
# memory at its highest reading. TF32 is off for convolutions and matrix products, as in
# frugal's CUDA backend, so both compute in full f32.
import argparse
import json
import resource
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

import pytorch_nets


def peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def tensor_bytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def allocator_curve(prof):
    """(peak, net) bytes above the start of the profiled region, from its memory events."""
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    starts = [e.start_us() for e in events]
    assert all(a <= b for a, b in zip(starts, starts[1:])), "memory events out of order"
    live = peak = 0
    for e in events:
        live += e.nbytes()
        peak = max(peak, live)
    return peak, live


def total_loss(loss_fn, out, labels):
    """The loss of a model's output, summed over its outputs where it has several (auxiliary
    heads, as frugal scores them)."""
    if isinstance(out, tuple):
        return sum(loss_fn(o, labels) for o in out if o is not None)
    return loss_fn(out, labels)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", required=True, choices=sorted(pytorch_nets.NETS))
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=5, help="steps timed; the first is a warm-up")
    p.add_argument("--mode", choices=["training", "inference"], default="training")
    p.add_argument("--dtype", choices=["f32", "f64"], default="f32")
    p.add_argument("--no-dropout", action="store_true")
    p.add_argument("--no-batch-norm", action="store_true")
    p.add_argument("--segments", type=int, default=0,
                   help="resnet110: checkpoint_sequential over the blocks in this many segments")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--source", default="", help="where this PyTorch came from (for the record)")
    p.add_argument("--json", action="store_true")
    o = p.parse_args()

    if o.device == "cuda":
        return measure_cuda(o)
    torch.set_num_threads(o.threads)
    torch.manual_seed(0)
    rss_start = peak_rss_bytes()
    dtype = torch.float64 if o.dtype == "f64" else torch.float32
    model, shape, classes, log_probs = pytorch_nets.build(
        o.model, dropout=not o.no_dropout, batch_norm=not o.no_batch_norm, segments=o.segments)
    model = model.to(dtype)
    training = o.mode == "training"
    model.train(training)
    x = torch.randn(o.batch, *shape, dtype=dtype)
    # The model's inputs after the images (a diffusion U-Net's timesteps), drawn as it says.
    extra = [make(o.batch).to(dtype) for _, make in pytorch_nets.EXTRA_INPUTS.get(o.model, [])]
    labels = torch.randint(0, classes, (o.batch, *pytorch_nets.LABEL_SHAPE.get(o.model, ())))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9) if training else None
    loss_fn = F.nll_loss if log_probs else F.cross_entropy

    def step():
        if training:
            total_loss(loss_fn, model(x, *extra), labels).backward()
            opt.step()
        else:
            with torch.no_grad():
                model(x, *extra)

    times = []
    for s in range(o.steps):
        if training:
            opt.zero_grad(set_to_none=True)
        start = time.perf_counter()
        step()
        if s > 0 or o.steps == 1:
            times.append(time.perf_counter() - start)

    if training:
        opt.zero_grad(set_to_none=True)
    state = [v for st in (opt.state.values() if training else []) for v in st.values()
             if torch.is_tensor(v)]
    params = tensor_bytes(list(model.parameters()) + list(model.buffers()))
    inputs = tensor_bytes([x, *extra] + ([labels] if training else []))
    live_at_start = params + tensor_bytes(state) + inputs
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    above, net = allocator_curve(prof)
    grads = tensor_bytes([q.grad for q in model.parameters() if q.grad is not None])

    r = {
        "framework": "pytorch",
        "torch": torch.__version__,
        "source": o.source,
        "model": o.model,
        "batch": o.batch,
        "mode": o.mode,
        "dtype": o.dtype,
        "segments": o.segments,
        "threads": torch.get_num_threads(),
        "steps": o.steps,
        "step_s": times,
        "median_s": statistics.median(times),
        "allocator_peak_bytes": live_at_start + above,
        "param_bytes": params,
        "optimizer_state_bytes": tensor_bytes(state),
        "input_bytes": inputs,
        "step_net_bytes": net,  # what the profiled step left allocated: the gradients
        "grad_bytes": grads,
        "rss_start_bytes": rss_start,
        "rss_peak_bytes": peak_rss_bytes(),
        "allocator_method": "torch.profiler profile_memory events + live bytes at step start",
    }
    if o.json:
        print(json.dumps(r))
    else:
        mib = 1 << 20
        print(f"{o.model}, batch {o.batch}, {o.mode}, {o.dtype}, PyTorch {torch.__version__}, "
              f"{r['threads']} threads")
        print(f"step time: median {r['median_s']:.4f} s over {len(times)} step(s)")
        print(f"allocator peak {r['allocator_peak_bytes'] / mib:.2f} MiB (params "
              f"{params / mib:.2f}, momentum {tensor_bytes(state) / mib:.2f}, inputs "
              f"{inputs / mib:.2f}); step left {net / mib:.2f} MiB, gradients {grads / mib:.2f}")
        print(f"process peak RSS {r['rss_peak_bytes'] / mib:.2f} MiB "
              f"({rss_start / mib:.2f} MiB after importing torch)")


def measure_cuda(o):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    dev = torch.device("cuda")
    dtype = torch.float64 if o.dtype == "f64" else torch.float32
    free, total = torch.cuda.mem_get_info()
    driver_start = total - free
    model, shape, classes, log_probs = pytorch_nets.build(
        o.model, dropout=not o.no_dropout, batch_norm=not o.no_batch_norm, segments=o.segments)
    model = model.to(device=dev, dtype=dtype)
    training = o.mode == "training"
    model.train(training)
    x = torch.randn(o.batch, *shape, dtype=dtype, device=dev)
    extra = [make(o.batch).to(device=dev, dtype=dtype)
             for _, make in pytorch_nets.EXTRA_INPUTS.get(o.model, [])]
    labels = torch.randint(0, classes, (o.batch, *pytorch_nets.LABEL_SHAPE.get(o.model, ())),
                           device=dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9) if training else None
    loss_fn = F.nll_loss if log_probs else F.cross_entropy

    def step():
        if training:
            opt.zero_grad(set_to_none=True)
            total_loss(loss_fn, model(x, *extra), labels).backward()
            opt.step()
        else:
            with torch.no_grad():
                model(x, *extra)

    times = []
    driver_peak = driver_start
    for s in range(o.steps):
        if s == 1 or o.steps == 1:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        torch.cuda.synchronize()
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        if s > 0 or o.steps == 1:
            times.append(time.perf_counter() - start)
        free, total = torch.cuda.mem_get_info()
        driver_peak = max(driver_peak, total - free)
    state = [v for st in (opt.state.values() if training else []) for v in st.values()
             if torch.is_tensor(v)]
    params = tensor_bytes(list(model.parameters()) + list(model.buffers()))
    inputs = tensor_bytes([x, *extra] + ([labels] if training else []))
    r = {
        "framework": "pytorch",
        "torch": torch.__version__,
        "cudnn": torch.backends.cudnn.version(),
        "gpu": torch.cuda.get_device_name(),
        "device": "cuda",
        "model": o.model,
        "batch": o.batch,
        "mode": o.mode,
        "dtype": o.dtype,
        "segments": o.segments,
        "steps": o.steps,
        "step_s": times,
        "median_s": statistics.median(times),
        "allocator_peak_bytes": torch.cuda.max_memory_allocated(),
        "allocator_reserved_bytes": torch.cuda.max_memory_reserved(),
        "param_bytes": params,
        "optimizer_state_bytes": tensor_bytes(state),
        "input_bytes": inputs,
        "driver_start_bytes": driver_start,
        "driver_peak_bytes": driver_peak,
        "allocator_method": "torch.cuda.max_memory_allocated over the measured steps",
    }
    if o.json:
        print(json.dumps(r))
    else:
        mib = 1 << 20
        print(f"{o.model}, batch {o.batch}, {o.mode}, {o.dtype}, PyTorch {torch.__version__}, "
              f"{r['gpu']}")
        print(f"step time: median {r['median_s']:.4f} s over {len(times)} step(s)")
        print(f"allocator peak {r['allocator_peak_bytes'] / mib:.2f} MiB (reserved "
              f"{r['allocator_reserved_bytes'] / mib:.2f}); driver peak "
              f"{(driver_peak - driver_start) / mib:.2f} MiB above the start")
    return 0


if __name__ == "__main__":
    sys.exit(main())
