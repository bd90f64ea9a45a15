# Turns run_cases.py's JSON lines into the "frugal vs PyTorch" section of docs/BENCHMARKS.md:
# medians per case, ratios frugal / PyTorch, and the goals with met / not met. The
# section is replaced if present, else appended; other sections are left as they are.
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess

HEADING = "## frugal vs PyTorch"
TV_HEADING = "## frugal vs PyTorch: torchvision models through ONNX"
# Issue 17, training at batch 32: allocator peak <= 0.8x PyTorch's (DenseNet-121 0.6x), step
# <= 1.0x on ResNet-50 and MobileNetV2, 1.2x on the rest; inference peaks <= 1x.
TV_PEAK_TARGETS = {"tv-densenet121": 0.6}
RC_HEADING = "## frugal --recompute cheap vs PyTorch: torchvision models through ONNX"
# Issue 16, DenseNet-121 b32 training: peak <= 0.5x torchvision's densenet121() and <= its
# memory_efficient=True, with a shorter step than the latter. The other rows: issue 17's 0.8x.
RC_PEAK_TARGETS = {"tv-densenet121-rebuild": 0.5, "tv-densenet121-rebuild-vs-efficient": 1.0,
                   "densenet121-rebuild": 0.5, "densenet121-rebuild-vs-efficient": 1.0}
RC_STEP_TARGETS = {"tv-densenet121-rebuild-vs-efficient": 1.0,
                   "densenet121-rebuild-vs-efficient": 1.0}
TV_STEP_TARGETS = {"tv-resnet50": 1.0, "tv-mobilenet_v2": 1.0}
PACK_HEADING = "## frugal --pack vs PyTorch: torchvision models through ONNX"
# Issue 17's goals again, for the rows with --pack (no recompute: the outputs are packed).
PACK_PEAK_TARGETS = {"tv-densenet121-pack": 0.6}
PACK_STEP_TARGETS = {"tv-resnet50-pack": 1.0, "tv-mobilenet_v2-pack": 1.0}
BNOUT_HEADING = "## frugal --bn-from-output vs PyTorch: torchvision models through ONNX"
LNOUT_HEADING = "## frugal --ln-from-output vs PyTorch: torchvision's transformers and ConvNeXt"
# Issue 17's goals again (no recompute: the batch norms' gradients come from kept outputs).
BNOUT_STEP_TARGETS = {"tv-mobilenet_v2-bnout": 1.0, "tv-mobilenet_v2-pack-bnout": 1.0}
MIB = float(1 << 20)

# Allocator-peak targets (frugal / PyTorch) at batch 64 in training; every other case: <= 1.
PEAK_TARGETS = {"vgg-a": 0.6, "googlenet": 0.8, "alexnet": 0.75, "resnet110-rebuild": 0.8}
STEP_TARGETS = {"resnet110 b64 training f32": 1.0}
# The budget rows run at checkpoint_sequential's peak; "beat it on both axes" holds where the
# row is at or below it in peak and in step time at once.
BOTH_AXES = ("resnet110-budget-ckpt4 b64 training f32", "resnet110-budget-ckpt10 b64 training f32")
# reference/published.md: PyTorch 1.13 on a 2-core machine (allocator peak MiB, step s).
PUBLISHED = {
    "resnet110 b64 training f32": (532, 1.23),
    "alexnet b64 training f32": (991, 2.17),
    "vgg-a b64 training f32": (4645, 26.7),
    "googlenet b64 training f32": (2341, 12.1),
    "resnet110-ckpt4 b64 training f32": (257, 1.65),
    "resnet110-ckpt10 b64 training f32": (129, 1.58),
    "resnet110-budget-ckpt4 b64 training f32": (257, 1.65),
    "resnet110-budget-ckpt10 b64 training f32": (129, 1.58),
    "revnet38 b64 training f32": ("213 (activations stored)", 0.46),
    "revnet110 b64 training f32": ("605 (activations stored)", 1.19),
}
LABELS = {
    "resnet110-ckpt4": "resnet110, 4 checkpoint segments",
    "resnet110-ckpt10": "resnet110, 10 checkpoint segments",
    "resnet110-budget-ckpt4": "resnet110, budget 242M (PyTorch: 4 segments)",
    "resnet110-budget-ckpt10": "resnet110, budget 122M (PyTorch: 10 segments)",
    "resnet110-rebuild": "resnet110, --recompute cheap (PyTorch: eager)",
    "revnet38": "revnet38 (PyTorch: memcnn)",
    "revnet110": "revnet110 (PyTorch: memcnn)",
}


TV_NOTE = (
    "torchvision's models at 224 x 224 with 1000 classes: PyTorch runs the torchvision module "
    "(bench/peers/pytorch_nets.py, `tv-NAME`), frugal the same module exported in training mode "
    "(bench/peers/export_torchvision.py: torch.onnx.TrainingMode.TRAINING, opset 15, so "
    "BatchNorm and Dropout stay as they train), imported with `frugal bench --onnx`. Softmax "
    "cross-entropy on both sides; EfficientNet-B0 without stochastic depth on both sides. Both "
    "sides: 2 threads, random data, training = forward, loss, backward, SGD lr 0.01 momentum "
    "0.9; the first step of each process is a warm-up and the step time is the median of the "
    "others (count in brackets). Each case ran frugal and PyTorch alternately, process by "
    "process. frugal: `frugal bench --memory planned --onnx FILE`. PyTorch: "
    "`zero_grad(set_to_none=True)`.")


PACK_NOTE = (
    "frugal: `frugal bench --memory planned --pack --onnx FILE`, the file's exported weights: "
    "ReLU and ReLU6 outputs that backward reads wait for it packed outside the arena (a bit per "
    "element and the nonzero values; nothing recomputed, results bitwise equal to the step "
    "without packing); their bytes depend on the data, and the allocator peak counts them. "
    "PyTorch: its plain step.")


BNOUT_NOTE = (
    "frugal: `frugal bench --memory planned --bn-from-output --onnx FILE` (and `--pack` where "
    "the label says so), the file's exported weights: a batch norm whose output a later op's "
    "backward keeps (a SiLU's, a hardswish's, a convolution's weight gradient) takes its "
    "gradients "
    "from that output, x^ = (y - beta) / gamma, so its input dies after forward; nothing "
    "recomputed, gradients rounded differently from the default step's (within 1e-4 of "
    "PyTorch's, tests/test_onnx_torchvision.cpp). PyTorch: its plain step.")
LNOUT_NOTE = (
    "frugal: `frugal bench --memory planned --ln-from-output --onnx FILE`, the file's exported "
    "weights: a layer norm whose output a linear layer's backward keeps takes its gradients "
    "from that output, x^ = (y - beta) / gamma, so its input (the residual stream, or "
    "ConvNeXt's depthwise convolution's output) dies after forward; nothing recomputed, "
    "gradients rounded differently from the default step's. PyTorch runs its plain step. These "
    "models are not on issue 17's list: the goal column is make_table's default for a training "
    "row.")


RC_NOTE = (
    "frugal: `frugal bench --memory planned --recompute cheap --onnx FILE`: BatchNorm, "
    "activations, adds, pools and concats rebuilt in backward where the planner finds that "
    "lowers the arena, no convolution rebuilt; results bitwise equal to the step without "
    "rebuilds. PyTorch: its plain step, except the row against torchvision's "
    "`densenet121(memory_efficient=True)`.")
LABELS.update({
    "tv-densenet121-rebuild-vs-efficient":
        "tv-densenet121, --recompute cheap (PyTorch: memory_efficient=True)",
    "densenet121-rebuild": "densenet121 (bundled), --recompute cheap (PyTorch: torchvision's)",
    "densenet121-rebuild-vs-efficient":
        "densenet121 (bundled), --recompute cheap (PyTorch: memory_efficient=True)",
})


def aggregate(lines):
    """case -> runner -> {median_s, peak, rss, rss_start, n}, plus errors and skips."""
    cases, notes = {}, []
    for r in lines:
        if "skipped" in r:
            notes.append(f"{r['case']}: skipped ({r['skipped']})")
            continue
        if "error" in r:
            notes.append(f"{r['case']} {r['runner']}: failed: {r['error'].splitlines()[-1]}")
            continue
        c = cases.setdefault(r["case"], {}).setdefault(r["runner"], {"runs": []})
        c["runs"].append(r)
    for runners in cases.values():
        for c in runners.values():
            runs = c["runs"]
            c["median_s"] = statistics.median(t for x in runs for t in x["step_s"])
            c["n"] = sum(len(x["step_s"]) for x in runs)
            c["peak"] = max(x["allocator_peak_bytes"] for x in runs) / MIB
            c["rss"] = max(x["rss_peak_bytes"] for x in runs) / MIB
            c["rss_start"] = max(x["rss_start_bytes"] for x in runs) / MIB
    return cases, notes


def verdict(ratio, target):
    off = 100.0 * (ratio / target - 1.0)
    return f"met ({-off:.1f}% under)" if ratio <= target else f"not met ({off:.1f}% over)"


def machine():
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = re.search(r"Model name:\s*(.+)", out)
    return f"{model.group(1).strip() if model else 'unknown CPU'}, {os.cpu_count()} cores"


def planned_peak_mib(frugal, model):
    """frugal's allocator peak for a b64 training step of `model` without running it: the
    planned arena (`frugal memory`, shapes only) + weights + momentum + inputs, the sum that
    `frugal bench` measures."""
    cmd = [frugal, "memory", "--model", model, "--batch", "64", "--mode", "training", "--json"]
    if model in ("alexnet", "vgg-a"):
        cmd.append("--no-dropout")
    p = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)["modes"]
    momentum = p["planned"]["optimizer_state"]
    inputs = 64 * 4 * (3 * 224 * 224 + 1) if model != "resnet110" else 64 * 4 * (3 * 32 * 32 + 1)
    return (p["planned"]["arena"] + 2 * momentum + inputs) / MIB  # no BN: weights = momentum


def estimates(cases, frugal):
    """Goal cases not run: frugal from shapes beside published.md's PyTorch peak; and for the
    goal cases run, the shapes figure beside the measured one (the check that they agree)."""
    out, checks = [], []
    for key, (torch_mib, _) in PUBLISHED.items():
        model = key.split()[0]
        if model not in PEAK_TARGETS or not frugal:
            continue
        mine = planned_peak_mib(frugal, model)
        if key in cases and "frugal" in cases[key]:
            checks.append(f"{model} {mine:.1f} vs {cases[key]['frugal']['peak']:.1f} measured")
        elif key not in cases or "pytorch" not in cases[key]:
            out.append((key, mine, torch_mib, mine / torch_mib, PEAK_TARGETS[model]))
    return out, checks


def reproduced(cases):
    """Cases where this pass's PyTorch peak is within 1% of published.md's."""
    return [k.split()[0] for k, (mib, _) in PUBLISHED.items()
            if isinstance(mib, (int, float)) and "pytorch" in cases.get(k, {})
            and abs(cases[k]["pytorch"]["peak"] / mib - 1) < 0.01]


def section(cases, notes, o, loads):
    rows, goals = [], []
    for key, runners in cases.items():
        f, t = runners.get("frugal"), runners.get("pytorch")
        if not f or not t:
            continue
        model, batch, mode, dtype = key.split()
        peak_r, rss_r = f["peak"] / t["peak"], f["rss"] / t["rss"]
        step_r = f["median_s"] / t["median_s"]
        published = "{} MiB, {} s".format(*PUBLISHED[key]) if key in PUBLISHED else ""
        published = published.replace(" (activations stored) MiB", " MiB activations stored")
        target = PEAK_TARGETS.get(model, 1.0) if (batch, mode) == ("b64", "training") else 1.0
        if o.set == "torchvision":
            target = TV_PEAK_TARGETS.get(model, 0.8) if mode == "training" else 1.0
        if o.set == "recompute":
            target = RC_PEAK_TARGETS.get(model, 0.8)
        if o.set == "pack":
            target = PACK_PEAK_TARGETS.get(model, 0.8)
        if o.set in ("bnout", "lnout"):
            target = 0.8
        rows.append(
            f"| {LABELS.get(model, model)} | {batch[1:]} | {mode} {dtype} | {f['peak']:.1f} | "
            f"{t['peak']:.1f} | **{peak_r:.2f}** | {f['rss']:.0f} | {t['rss']:.0f} | {rss_r:.2f} | "
            f"{f['median_s']:.3f} ({f['n']}) | {t['median_s']:.3f} ({t['n']}) | {step_r:.2f} | "
            f"{published} | ≤ {target:g}× PyTorch: {verdict(peak_r, target)} |")
        goals.append((f"allocator peak, {key}", f"≤ {target:g}×", peak_r,
                      verdict(peak_r, target)))
        step_target = STEP_TARGETS.get(key)
        if o.set == "torchvision" and mode == "training":
            step_target = TV_STEP_TARGETS.get(model, 1.2)
        if o.set == "recompute":
            step_target = RC_STEP_TARGETS.get(model)
        if o.set == "pack":
            step_target = PACK_STEP_TARGETS.get(model, 1.2)
        if o.set in ("bnout", "lnout"):
            step_target = BNOUT_STEP_TARGETS.get(model, 1.2)
        if step_target:
            s = step_target
            goals.append((f"step time, {key}", f"≤ {s:g}×", step_r, verdict(step_r, s)))
        if key in BOTH_AXES:
            goals.append((f"peak and step time at once (the larger ratio), {key} against "
                          "checkpoint_sequential", "≤ 1×", max(peak_r, step_r),
                          verdict(max(peak_r, step_r), 1.0)))
    est, checks = estimates(cases, o.frugal) if o.set == "bundled" else ([], [])
    for key, _, _, r, target in est:
        goals.append((f"allocator peak, {key} (estimated, not run)", f"≤ {target:g}×", r,
                      verdict(r, target)))
    est_rows = [f"| {k} | {m:.1f} | {t} | {r:.2f} | ≤ {g:g}×: {verdict(r, g)} |"
                for k, m, t, r, g in est]
    date = datetime.date.today().isoformat()
    met = sum(g[3].startswith("met") for g in goals)
    torch_start = [c["pytorch"]["rss_start"] for c in cases.values() if "pytorch" in c]
    out = [o.heading, "",
           f"Measured {date} on {machine()}, {o.torch_source}; {o.memcnn}. "
           f"Commit {o.commit}. The pass took {o.minutes:.0f} min. Command, from the "
           "repository root:", "",
           f"    {o.command}", "",
           "**Step times are noisy**: this is a shared virtual machine whose speed drifts by up "
           "to a third within minutes, for every process alike, so only ratios of alternated runs "
           "mean much, and a row with more rounds (count in brackets) means more. The 1-minute "
           f"load average before each run was {min(loads):.1f}–{max(loads):.1f} on 2 cores; it "
           "counts this pass's own previous process, whose two threads hold it near 2 for a "
           "minute after. Memory figures do not depend on load.", "",
           *([TV_NOTE, ""] if o.set == "torchvision" else [TV_NOTE, RC_NOTE, ""]
             if o.set == "recompute" else [TV_NOTE, PACK_NOTE, ""] if o.set == "pack" else [TV_NOTE, BNOUT_NOTE, ""] if o.set == "bnout" else [TV_NOTE, LNOUT_NOTE, ""] if o.set == "lnout" else [
           "Both sides: 2 threads, random data, training = forward, NLL (log-softmax nets) or "
           "softmax cross-entropy (ResNet), backward, SGD lr 0.01 momentum 0.9; the first step "
           "of each process is a warm-up and the step time is the median of the others (count in "
           "brackets). Each case ran frugal and PyTorch alternately, process by process. frugal: "
           "`frugal bench --memory planned`. PyTorch: bench/peers/pytorch_nets.py (the same "
           "networks, parameter counts checked equal), `zero_grad(set_to_none=True)`. RevNets: "
           "memcnn's own RevNet (units free their inputs and rebuild them in backward; the first "
           "unit keeps its input, which the stem's ReLU saved for backward, else PyTorch 1.13's "
           "in-place check fails). Checkpoint rows: frugal `--segments k` and PyTorch's "
           "`checkpoint_sequential(blocks, k)` cut the 54 blocks alike: k − 1 recomputed runs "
           "of floor(54/k), the rest stored (k = 4: 3 × 13 + 15; k = 10: 9 × 5 + 9).", ""
           ]),
           "- **allocator peak**: frugal: the allocator's peak bytes over the measured steps "
           "(parameters, BN statistics, momentum, the planned arena, inputs). PyTorch: peak live "
           "bytes of its CPU allocator during one more steady-state step, from `torch.profiler` "
           "memory events (profile_memory=True) plus the bytes live when the step starts "
           "(parameters, buffers, momentum, inputs).",
           "- **RSS**: process peak resident set (getrusage ru_maxrss) of each measurement "
           "process, everything included; PyTorch's runtime alone is about "
           f"{statistics.median(torch_start) if torch_start else 0:.0f} MiB after `import torch`, "
           "frugal's about 4 MiB.", "",
           "| network | batch | mode | frugal peak MiB | PyTorch peak MiB | peak ratio | frugal "
           "RSS MiB | PyTorch RSS MiB | RSS ratio | frugal step s | PyTorch step s | step ratio "
           "| PyTorch in published.md | memory goal |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|", *rows, "",
           f"Goals from the issue ({met} of {len(goals)} met; ratio = frugal / PyTorch):", "",
           "| goal | target | measured | result |", "|---|---|---|---|",
           *[f"| {g} | {t} | {r:.2f}× | {v} |" for g, t, r, v in goals], "",
           *(["Goal cases not run in this pass, estimated: frugal's peak from shapes (`frugal "
              "memory`: planned arena + weights + momentum + inputs; in the goal cases that ran: "
              f"{'; '.join(checks) or 'none'}) beside PyTorch 1.13's peak from "
              "reference/published.md (this pass's PyTorch peaks are within 1% of published.md "
              f"for {', '.join(reproduced(cases)) or 'none'}):",
              "", "| case | frugal peak MiB (shapes) | PyTorch peak MiB (published) | ratio | "
              "goal |", "|---|---|---|---|---|", *est_rows, ""] if est_rows else []),
           *(["Not measured:", ""] + [f"- {n}." for n in notes] + [""] if notes else [])]
    return "\n".join(out)


def write_section(path, text, heading):
    """Replaces this section in `path` (up to the next '## ' heading) or appends it."""
    doc = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    start = doc.find(heading + "\n")
    if start < 0:
        doc = doc.rstrip("\n") + "\n\n" + text
    else:
        nxt = doc.find("\n## ", start + len(heading))
        doc = doc[:start] + text + ("\n" + doc[nxt + 1:] if nxt >= 0 else "")
    with open(path, "w") as f:
        f.write(doc.rstrip("\n") + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("results", help="JSON lines from run_cases.py")
    p.add_argument("--doc", default="docs/BENCHMARKS.md")
    p.add_argument("--command", default="bench/peers/run_peers.sh")
    p.add_argument("--torch-source", default="PyTorch")
    p.add_argument("--memcnn", default="memcnn not used")
    p.add_argument("--commit", default="unknown")
    p.add_argument("--frugal", default="", help="the frugal program, to estimate goal cases "
                   "that were not run")
    p.add_argument("--print-only", action="store_true")
    p.add_argument("--set",
                   choices=["bundled", "torchvision", "recompute", "pack", "bnout", "lnout"],
                   default="bundled")
    o = p.parse_args()
    o.heading = {"torchvision": TV_HEADING, "recompute": RC_HEADING,
                 "pack": PACK_HEADING, "bnout": BNOUT_HEADING,
                 "lnout": LNOUT_HEADING}.get(o.set, HEADING)
    lines = [json.loads(ln) for ln in open(o.results) if ln.strip()]
    cases, notes = aggregate(lines)
    loads = [r["load_before"] for r in lines if "load_before" in r] or [0.0]
    o.minutes = sum(r.get("wall_s", 0) for r in lines) / 60
    text = section(cases, notes, o, loads)
    print(text)
    if not o.print_only:
        write_section(o.doc, text, o.heading)


if __name__ == "__main__":
    main()
