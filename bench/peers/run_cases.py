# Runs every (model, batch, mode) case with frugal and PyTorch alternating, process by
# process (frugal, torch, frugal, torch ...), so the load of a shared machine hits both
# alike, and writes one JSON line per run. make_table.py turns the lines into the table.
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# (label, model, batch, mode, dtype, extra flags, steps, rounds): steps per process, the
# first a warm-up; rounds of (frugal, torch). Few steps and one round: on the shared 2-core
# machine a whole pass must stay near 25 minutes (VGG-A trains at ~30 s a step in PyTorch).
# Cheap cases first, so that the time budget, when spent, skips the heaviest (and lists them).
# Cases whose PyTorch side takes other flags than frugal's.
TORCH_FLAGS = {
    "resnet110-budget-ckpt4": ["--segments", "4"],
    "resnet110-budget-ckpt10": ["--segments", "10"],
    "resnet110-rebuild": [],  # PyTorch's plain eager step
}
# The torchvision models at ImageNet size (--set torchvision): PyTorch runs the torchvision
# module, frugal its training-mode ONNX export (export_torchvision.py), one step's warm-up and
# two timed, batch 32 as issue 17 asks.
TORCHVISION_CASES = [(f"tv-{n}", f"tv-{n}", 32, "training", "f32", [], 3, 1)
                     for n in ("squeezenet1_1", "mobilenet_v2", "shufflenet_v2_x1_0", "unet",
                               "resnet18", "efficientnet_b0", "resnet50", "densenet121",
                               "convnext_tiny", "resnet18_gn", "vit_b_16",
                               # beyond issue 17's list: hardswish and squeeze-and-excitation,
                               # RegNet's grouped convolutions, ResNeXt's 32 groups, Swin-T's
                               # shifted windows
                               "mobilenet_v3_large", "regnet_y_400mf", "resnext50_32x4d",
                               "swin_t")]
TORCHVISION_CASES += [(f"tv-{n}", f"tv-{n}", b, "inference", "f32", [], 3, 1)
                      for n in ("mobilenet_v2", "shufflenet_v2_x1_0", "unet", "resnet50",
                                "convnext_tiny", "vit_b_16", "mobilenet_v3_large", "swin_t")
                      for b in (1, 32)]
# timm's models (--set timm), as the torchvision ones: b32 training, b1 and b32 inference.
TIMM_CASES = [(f"tm-{n}", f"tm-{n}", 32, "training", "f32", [], 3, 1)
              for n in ("vit_small_patch16_224", "resnet50d", "nf_resnet26",
                        # Sequencer's LSTMs (unrolled), XCiT's repeated position features
                        "sequencer2d_s", "xcit_nano_12_p16_224")]
TIMM_CASES += [(f"tm-{n}", f"tm-{n}", b, "inference", "f32", [], 3, 1)
               for n in ("vit_small_patch16_224", "resnet50d") for b in (1, 32)]
# torchvision's video networks (--set video) on clips (3, 8, 112, 112), batch 8: Conv3d
# windows 1 wide along no axis (r3d_18, mc3_18) and R(2+1)D's factored ones.
VIDEO_CASES = [(f"tv-{n}", f"tv-{n}", 8, "training", "f32", [], 3, 1)
               for n in ("r3d_18", "mc3_18", "r2plus1d_18")]
# A 3-D U-Net (pytorch_nets.UNet3d) on volumes 1 x 48 x 64 x 64, batch 4.
VIDEO_CASES += [("tv-unet3d", "tv-unet3d", 4, "training", "f32", [], 3, 1)]
# S3D (separable convolutions, (1, k, k) then (k, 1, 1)) on clips 3 x 16 x 224 x 224, batch 4.
VIDEO_CASES += [("tv-s3d", "tv-s3d", 4, "training", "f32", [], 3, 1)]
# Each again with --recompute cheap on frugal's side (REBUILD, below), against PyTorch's plain
# step.
VIDEO_CASES += [(f"{c[0]}-rebuild", c[1], c[2], c[3], c[4], ["--recompute", "cheap"], c[6], c[7])
                for c in list(VIDEO_CASES)]
# Models of several inputs (--set inputs): a denoising diffusion U-Net (pytorch_nets.
# DiffusionUNet: images 3 x 64 x 64 and a timestep each), batch 16, plain and with --recompute
# cheap on frugal's side.
INPUTS_CASES = [("tv-ddpm-unet", "tv-ddpm-unet", 16, "training", "f32", [], 3, 1),
                ("tv-ddpm-unet-rebuild", "tv-ddpm-unet", 16, "training", "f32",
                 ["--recompute", "cheap"], 3, 1)]
# And of several outputs: Inception v3 with its auxiliary head, batch 16 at 299 x 299.
INPUTS_CASES += [("tv-inception_v3_aux", "tv-inception_v3_aux", 16, "training", "f32", [], 3, 1)]
# Issue 16, op-level recomputation on the torchvision models (--set recompute): frugal with
# --recompute cheap against PyTorch's plain step, and DenseNet-121 also against torchvision's
# densenet121(memory_efficient=True), which checkpoints each dense layer's concat-BN-ReLU-conv.
REBUILD = ["--recompute", "cheap"]
RECOMPUTE_CASES = [(f"tv-{n}-rebuild", f"tv-{n}", 32, "training", "f32", REBUILD, 3, 1)
                   for n in ("densenet121", "resnet50", "mobilenet_v2", "resnet18",
                             "efficientnet_b0", "squeezenet1_1", "shufflenet_v2_x1_0", "unet",
                             "resnet18_gn", "swin_t")]
RECOMPUTE_CASES.insert(1, ("tv-densenet121-rebuild-vs-efficient", "tv-densenet121", 32,
                           "training", "f32", REBUILD, 3, 1))
# frugal's bundled DenseNet-121 with --recompute cheap (--set recompute too).
RECOMPUTE_CASES += [("densenet121-rebuild", "densenet121", 32, "training", "f32", REBUILD, 3, 1),
                    ("densenet121-rebuild-vs-efficient", "densenet121", 32, "training", "f32",
                     REBUILD, 3, 1)]
# Packing (--set pack): frugal with --pack (ReLU and ReLU6 outputs kept packed between forward
# and backward) against PyTorch's plain step, on the torchvision models of issue 17's list
# whose activations are ReLUs (EfficientNet-B0's SiLUs have no zeros to pack).
PACK = ["--pack"]
PACK_CASES = [(f"tv-{n}-pack", f"tv-{n}", 32, "training", "f32", PACK, 3, 1)
              for n in ("resnet50", "densenet121", "resnet18", "unet", "mobilenet_v2",
                        "shufflenet_v2_x1_0", "squeezenet1_1")]
# Batch norms from their outputs (--set bnout): frugal with --bn-from-output (a batch norm whose
# output a SiLU, hardswish or convolution keeps for backward reads that output, and its input
# dies after forward) against PyTorch's plain step; MobileNetV2 with --pack as well.
BNOUT = ["--bn-from-output"]
BNOUT_CASES = [(f"tv-{n}-bnout", f"tv-{n}", 32, "training", "f32", BNOUT, 3, 1)
               for n in ("efficientnet_b0", "mobilenet_v2", "mobilenet_v3_large")]
BNOUT_CASES.append(("tv-mobilenet_v2-pack-bnout", "tv-mobilenet_v2", 32, "training", "f32",
                    PACK + BNOUT, 3, 1))
# Layer norms from their outputs (--set lnout): frugal with --ln-from-output (a layer norm whose
# output a linear layer keeps for backward reads that output, and its input dies after forward)
# against PyTorch's plain step.
LNOUT = ["--ln-from-output"]
LNOUT_CASES = [(f"tv-{n}-lnout", f"tv-{n}", 32, "training", "f32", LNOUT, 2, 1)
               for n in ("vit_b_16", "swin_t", "convnext_tiny")]
# PyTorch's side of a case where it runs another module than frugal's model name says.
TORCH_MODEL = {"tv-densenet121-rebuild-vs-efficient": "tv-densenet121-efficient",
               "densenet121-rebuild-vs-efficient": "tv-densenet121-efficient"}
CASES = [
    ("resnet110", "resnet110", 64, "training", "f32", [], 3, 1),
    ("alexnet", "alexnet", 64, "training", "f32", ["--no-dropout"], 2, 1),
    ("revnet38", "revnet38", 64, "training", "f32", [], 2, 1),
    ("revnet110", "revnet110", 64, "training", "f32", [], 2, 1),
    # Issue 16: op outputs rebuilt in backward (BatchNorm, ReLU, adds; no convolution).
    ("resnet110-rebuild", "resnet110", 64, "training", "f32", ["--recompute", "cheap"], 3, 1),
    ("resnet110-ckpt4", "resnet110", 64, "training", "f32", ["--segments", "4"], 2, 1),
    ("resnet110-ckpt10", "resnet110", 64, "training", "f32", ["--segments", "10"], 2, 1),
    # frugal's budget set so that its whole peak (arena + weights, momentum and inputs, 14 MiB)
    # stays at or under checkpoint_sequential's measured peak: the least recompute that fits.
    ("resnet110-budget-ckpt4", "resnet110", 64, "training", "f32", ["--memory-budget", "242M"],
     2, 1),
    ("resnet110-budget-ckpt10", "resnet110", 64, "training", "f32", ["--memory-budget", "122M"],
     2, 1),
    ("resnet110", "resnet110", 1, "inference", "f64", [], 3, 1),
    ("alexnet", "alexnet", 1, "inference", "f64", [], 3, 1),
    ("googlenet", "googlenet", 1, "inference", "f64", [], 3, 1),
    ("vgg-a", "vgg-a", 1, "inference", "f64", [], 3, 1),
    ("googlenet", "googlenet", 64, "training", "f32", [], 2, 1),
    ("vgg-a", "vgg-a", 64, "training", "f32", ["--no-dropout"], 2, 1),
    ("resnet110", "resnet110", 128, "inference", "f32", [], 2, 1),
    ("alexnet", "alexnet", 128, "inference", "f32", [], 2, 1),
    ("googlenet", "googlenet", 128, "inference", "f32", [], 2, 1),
    ("vgg-a", "vgg-a", 128, "inference", "f32", [], 2, 1),
]


# Debian's python3-torch multiplies matrices with the system's libblas.so.3: the reference BLAS
# where OpenBLAS is not installed, about 25x slower (bench/peers/run_peers.sh installs
# libopenblas0-pthread). Asked of the interpreter itself (a venv over Debian's packages, a wheel
# with a BLAS of its own): the reference libblas its process maps after a product, else None.
BLAS_PROBE = ("import torch; torch.ones(64, 64) @ torch.ones(64, 64); "
              "print('\\n'.join(sorted({ln.split()[-1] for ln in open('/proc/self/maps') "
              "if 'blas' in ln or 'mkl' in ln})))")


def reference_blas(python):
    try:
        p = subprocess.run([python, "-c", BLAS_PROBE], capture_output=True, text=True,
                           timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return None
    # The GEMM comes from libblas.so.3 even where OpenBLAS's LAPACK is mapped beside it.
    reference = [lib for lib in p.stdout.split() if os.sep + "blas" + os.sep in lib and
                 os.path.basename(lib).startswith("libblas")]
    return reference[0] if reference else None


# --torch-max-isa avx2: PyTorch's libraries held to AVX2, as on a machine without AVX-512 (the
# frugal side is then a -march=haswell build): oneDNN's convolutions, ATen's own kernels,
# OpenBLAS and MKL, each by its documented switch.
def isa_env(isa):
    if not isa:
        return None
    return {**os.environ, "ONEDNN_MAX_CPU_ISA": isa.upper(), "DNNL_MAX_CPU_ISA": isa.upper(),
            "ATEN_CPU_CAPABILITY": isa.lower(), "OPENBLAS_CORETYPE": "Haswell",
            "MKL_ENABLE_INSTRUCTIONS": isa.upper()}


def run_json(cmd, timeout, env=None):
    """Runs one measurement process; its last stdout line is a JSON object."""
    started = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s", "command": cmd}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        return {"error": (p.stderr or p.stdout).strip()[-2000:], "command": cmd}
    r = json.loads(lines[-1])
    r["wall_s"] = time.time() - started
    return r


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--frugal", required=True, help="the frugal program")
    p.add_argument("--python", default=sys.executable, help="Python with torch")
    p.add_argument("--torch-source", default="", help="how PyTorch was installed")
    p.add_argument("--out", required=True, help="JSON lines written here")
    p.add_argument("--budget-minutes", type=float, default=25.0,
                   help="cases not started within this time are skipped (and listed)")
    p.add_argument("--only", default="",
                   help="comma-separated labels ('vgg-a') or cases ('vgg-a b1 inference f64')")
    p.add_argument("--timeout", type=int, default=900, help="seconds per process")
    p.add_argument("--any-blas", action="store_true",
                   help="run PyTorch even on the reference BLAS (its steps are then not its own)")
    p.add_argument("--torch-max-isa", choices=["avx2"], default="",
                   help="hold PyTorch's kernels to this instruction set (compare with a frugal "
                   "built for it)")
    p.add_argument("--set",
                   choices=["bundled", "torchvision", "recompute", "timm", "video", "inputs",
                            "pack", "bnout", "lnout"],
                   default="bundled",
                   help="the bundled networks, torchvision's through ONNX, those with "
                   "--recompute cheap, timm's through ONNX, torchvision's video networks, or "
                   "models of several inputs (a diffusion U-Net), or those with --pack, "
                   "--bn-from-output or --ln-from-output")
    o = p.parse_args()
    slow = reference_blas(o.python)
    if slow and not o.any_blas:
        sys.exit(f"run_cases: PyTorch ({o.python}) would multiply matrices with the reference "
                 f"BLAS ({slow}), some 25x slower than OpenBLAS: install libopenblas0-pthread "
                 "(bench/peers/run_peers.sh does), or pass --any-blas to run anyway")

    only = set(filter(None, o.only.split(",")))
    cases = {"torchvision": TORCHVISION_CASES, "recompute": RECOMPUTE_CASES,
             "timm": TIMM_CASES, "video": VIDEO_CASES,
             "inputs": INPUTS_CASES, "pack": PACK_CASES,
             "bnout": BNOUT_CASES, "lnout": LNOUT_CASES}.get(o.set, CASES)
    onnx_dir = os.path.join(os.path.dirname(os.path.abspath(o.out)), "peers-onnx")
    start = time.time()
    with open(o.out, "w") as out:
        def emit(record):
            out.write(json.dumps(record) + "\n")
            out.flush()

        for label, model, batch, mode, dtype, flags, steps, rounds in cases:
            key = f"{label} b{batch} {mode} {dtype}"
            if only and label not in only and key not in only:
                continue
            if time.time() - start > o.budget_minutes * 60:
                emit({"case": key, "skipped": f"time budget of {o.budget_minutes:g} min spent"})
                print(f"skipped {key}: time budget spent", flush=True)
                continue
            common = ["--model", model, "--batch", str(batch), "--steps", str(steps),
                      "--mode", mode, "--dtype", dtype, "--threads", "2", "--json", *flags]
            frugal = [o.frugal, "bench", "--memory", "planned", *common]
            if model.startswith(("tv-", "tm-")):  # frugal runs the model's training-mode export
                onnx = os.path.join(onnx_dir, model + ".onnx")
                if not os.path.exists(onnx):
                    os.makedirs(onnx_dir, exist_ok=True)
                    subprocess.run([o.python, os.path.join(HERE, "export_torchvision.py"),
                                    "--model", model, "--out", onnx], check=True)
                frugal = [o.frugal, "bench", "--memory", "planned", "--onnx", onnx, *common[2:]]
            torch = [o.python, os.path.join(HERE, "measure_torch.py"), *common,
                     "--source", o.torch_source]
            if label in TORCH_FLAGS or flags in (REBUILD, PACK, BNOUT, PACK + BNOUT, LNOUT):
                # PyTorch's side: its own flags, not frugal's
                torch = [*torch[:-2 - len(flags)], *TORCH_FLAGS.get(label, []), *torch[-2:]]
            if label in TORCH_MODEL:
                torch[torch.index("--model") + 1] = TORCH_MODEL[label]
            for r in range(rounds):
                for name, cmd in (("frugal", frugal), ("pytorch", torch)):
                    with open("/proc/loadavg") as f:
                        load = float(f.read().split()[0])
                    env = isa_env(o.torch_max_isa) if name == "pytorch" else None
                    res = run_json(cmd, o.timeout, env)
                    res.update({"case": key, "round": r, "runner": name, "load_before": load})
                    if env:
                        res["max_isa"] = o.torch_max_isa
                    emit(res)
                    what = res.get("error", "").splitlines()[-1:] or [
                        f"median {res['median_s']:.3f} s, allocator peak "
                        f"{res['allocator_peak_bytes'] / 2**20:.1f} MiB, RSS "
                        f"{res['rss_peak_bytes'] / 2**20:.1f} MiB"]
                    print(f"{key} round {r} {name:7s} {what[0]}", flush=True)
    print(f"all cases: {(time.time() - start) / 60:.1f} min", flush=True)


if __name__ == "__main__":
    main()
