"""frugal beside PyTorch on one CUDA GPU, alternated in one invocation.

For each case, `rounds` rounds each run `frugal bench --device cuda --json` and then
`measure_torch.py --device cuda --json` as separate processes (a fresh CUDA context and
allocator each), and the medians of the step times and the peaks are compared as ratios:

- allocator peak: frugal's allocator (parameters, momentum, the planned arena with every
  cuDNN workspace in it, inputs) against torch.cuda.max_memory_allocated (the same things plus
  PyTorch's gradients and workspaces, all through its caching allocator);
- driver: the device memory in use at the highest reading (cudaMemGetInfo after each step)
  above the reading before the model was made, cuDNN's and cuBLAS's own allocations included.

Writes a Markdown section (--markdown FILE) and the raw JSON (--raw FILE).
Usage: gpu_peers.py --frugal build-gpu/apps/frugal [--rounds 3] [--only resnet110-b64,...]
       gpu_peers.py --frugal build-gpu/apps/frugal --set onnx [--onnx-dir .gpu-deps/onnx]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# (name, model, batch, mode, peak goal: frugal / PyTorch at most this, step goal, frugal's
# extra flags). The rows with --workspace-growth let the arena grow that much so that the
# convolutions where the step peaks get faster cuDNN algorithms (memory traded for speed, said
# in the row's name); the rows without it keep the arena at its least-workspace size.
CASES = [
    ("resnet110-b64", "resnet110", 64, "training", 1.0, 1.1, []),
    ("resnet110-b128", "resnet110", 128, "training", 1.0, 1.1, []),
    ("alexnet-b64", "alexnet", 64, "training", 0.75, 1.1, []),
    ("vgg-a-b64", "vgg-a", 64, "training", 0.6, 1.1, []),
    ("vgg-a-b64-growth-1G", "vgg-a", 64, "training", 0.6, 1.1, ["--workspace-growth", "1G"]),
    ("googlenet-b64", "googlenet", 64, "training", 0.8, 1.1, []),
    ("googlenet-b64-growth-256M", "googlenet", 64, "training", 0.8, 1.1,
     ["--workspace-growth", "256M"]),
    ("resnet110-b128-inference", "resnet110", 128, "inference", None, 1.1, []),
    ("alexnet-b128-inference", "alexnet", 128, "inference", None, 1.1, []),
    ("alexnet-b128-inference-growth-256M", "alexnet", 128, "inference", None, 1.1,
     ["--workspace-growth", "256M"]),
    ("vgg-a-b128-inference", "vgg-a", 128, "inference", None, 1.1, []),
    ("googlenet-b128-inference", "googlenet", 128, "inference", None, 1.1, []),
]
# Users' models (--set onnx): PyTorch runs the torchvision module (measure_torch.py --model
# tv-NAME), frugal its training-mode ONNX export (export_torchvision.py; scripts/gpu-bundle.sh
# makes them, --onnx-dir says where). No GPU goals were set for them: ratios only.
ONNX_CASES = [(f"{m}-b32{suffix}", m, 32, mode, None, None, [])
              for m in ("tv-mobilenet_v2", "tv-efficientnet_b0")
              for mode, suffix in (("training", ""), ("inference", "-inference"))]


def run_json(cmd, timeout):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def mib(b):
    return b / (1 << 20)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--frugal", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=6, help="steps per run; the first is a warm-up")
    p.add_argument("--only", default="", help="comma-separated case names")
    p.add_argument("--markdown", default="")
    p.add_argument("--raw", default="")
    p.add_argument("--timeout", type=int, default=300, help="seconds per run")
    p.add_argument("--set", choices=["bundled", "onnx"], default="bundled",
                   help="the bundled networks, or torchvision's through ONNX")
    p.add_argument("--onnx-dir", default=".gpu-deps/onnx",
                   help="where the --set onnx exports are (NAME.onnx)")
    o = p.parse_args()
    only = set(filter(None, o.only.split(",")))
    cases = [c for c in (ONNX_CASES if o.set == "onnx" else CASES) if not only or c[0] in only]
    results = []
    for name, model, batch, mode, peak_goal, step_goal, extra in cases:
        runs = {"frugal": [], "pytorch": []}
        for r in range(o.rounds):
            common = ["--batch", str(batch), "--mode", mode, "--steps", str(o.steps), "--json"]
            source = (["--onnx", os.path.join(o.onnx_dir, model + ".onnx")] if o.set == "onnx"
                      else ["--model", model])
            runs["frugal"].append(run_json(
                [o.frugal, "bench", "--device", "cuda"] + source + common + extra, o.timeout))
            runs["pytorch"].append(run_json(
                [sys.executable, os.path.join(HERE, "measure_torch.py"), "--device", "cuda",
                 "--model", model] + common, o.timeout))
            print(f"{name} round {r + 1}: frugal {runs['frugal'][-1]['median_s']:.4f} s, "
                  f"PyTorch {runs['pytorch'][-1]['median_s']:.4f} s", file=sys.stderr, flush=True)

        def med(fw, key):
            return statistics.median(x[key] for x in runs[fw])

        row = {
            "case": name, "model": model, "batch": batch, "mode": mode, "rounds": o.rounds,
            "frugal_step_s": med("frugal", "median_s"),
            "torch_step_s": med("pytorch", "median_s"),
            "frugal_peak": med("frugal", "allocator_peak_bytes"),
            "torch_peak": med("pytorch", "allocator_peak_bytes"),
            "frugal_driver": med("frugal", "driver_peak_bytes")
            - med("frugal", "driver_start_bytes"),
            "torch_driver": med("pytorch", "driver_peak_bytes")
            - med("pytorch", "driver_start_bytes"),
            "peak_goal": peak_goal, "step_goal": step_goal, "runs": runs,
        }
        row["peak_ratio"] = row["frugal_peak"] / row["torch_peak"]
        row["driver_ratio"] = row["frugal_driver"] / row["torch_driver"]
        row["step_ratio"] = row["frugal_step_s"] / row["torch_step_s"]
        results.append(row)

    torch_info = results[0]["runs"]["pytorch"][0] if results else {}
    lines = [
        f"Measured {time.strftime('%Y-%m-%d')} on {torch_info.get('gpu', '?')}, PyTorch "
        f"{torch_info.get('torch', '?')} (cuDNN {torch_info.get('cudnn', '?')}, TF32 off), "
        f"{o.rounds} alternated rounds of {o.steps} steps (the first a warm-up), medians; "
        f"`bench/peers/gpu_peers.py --set {o.set} --rounds {o.rounds} --steps {o.steps}` "
        f"(run by `scripts/gpu-check.sh`).",
        "",
        "| case | frugal step (s) | PyTorch step (s) | step ratio | frugal peak (MiB) | "
        "PyTorch peak (MiB) | peak ratio | driver: frugal / PyTorch (MiB) | goals |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    met = total = 0
    for r in results:
        goals = []
        if r["peak_goal"] is not None:
            ok = r["peak_ratio"] <= r["peak_goal"]
            met += ok
            total += 1
            goals.append(f"peak ≤ {r['peak_goal']}×: {'met' if ok else 'NOT met'}")
        if r["step_goal"] is not None:
            ok = r["step_ratio"] <= r["step_goal"]
            met += ok
            total += 1
            goals.append(f"step ≤ {r['step_goal']}×: {'met' if ok else 'NOT met'}")
        if not goals:
            goals.append("none set")
        lines.append(
            f"| {r['case']} | {r['frugal_step_s']:.4f} | {r['torch_step_s']:.4f} | "
            f"{r['step_ratio']:.2f}× | {mib(r['frugal_peak']):.1f} | {mib(r['torch_peak']):.1f} | "
            f"{r['peak_ratio']:.2f}× | {mib(r['frugal_driver']):.0f} / "
            f"{mib(r['torch_driver']):.0f} | {'; '.join(goals)} |")
    if total:
        lines += ["", f"{met} of {total} GPU goals met."]
    text = "\n".join(lines) + "\n"
    print(text)
    if o.markdown:
        with open(o.markdown, "w") as f:
            f.write(text)
    if o.raw:
        with open(o.raw, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
