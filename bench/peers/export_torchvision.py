# Writes a torchvision model (pytorch_nets.TORCHVISION; or a timm model, pytorch_nets.TIMM,
# tm-NAME) as a training-mode ONNX export: the network measure_torch.py builds for --model
# tv-NAME (same constructor, same seed, same
# weights), with BatchNorm and Dropout kept as they train (torch.onnx.TrainingMode.TRAINING,
# opset 15), and a dynamic batch. `frugal bench --onnx FILE` then runs what PyTorch runs.
#   python3 export_torchvision.py --model tv-mobilenet_v2 --out build/peers-onnx/tv-mobilenet_v2.onnx
import argparse
import copy
import os
import warnings

import torch

import pytorch_nets


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--model", required=True,
                   choices=sorted(n for n in pytorch_nets.NETS if n.startswith(("tv-", "tm-"))))
    p.add_argument("--out", required=True)
    o = p.parse_args()
    torch.manual_seed(0)
    model, shape, _, _ = pytorch_nets.build(o.model)
    model.train()
    tmp = o.out + ".tmp"
    # Inputs after the images (a diffusion U-Net's timesteps): inputs of the file too, named
    # "in1", "in2", ..., their batch dynamic as the images'.
    extra = [make(2) for _, make in pytorch_nets.EXTRA_INPUTS.get(o.model, [])]
    names = ["x"] + [f"in{i + 1}" for i in range(len(extra))]
    with torch.no_grad():  # several outputs (auxiliary heads): "y", then "aux1", "aux2", ...
        out = copy.deepcopy(model)(torch.rand(2, *shape), *extra)  # running statistics kept
    heads = len(out) if isinstance(out, tuple) else 1
    outputs = ["y"] + [f"aux{i}" for i in range(1, heads)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.rand(2, *shape), *extra), tmp, opset_version=15,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          input_names=names, output_names=outputs,
                          dynamic_axes={n: {0: "N"} for n in names + outputs})
    os.replace(tmp, o.out)  # never a partial file under the final name
    print(f"{o.out}: {o.model} {tuple(shape)}")


if __name__ == "__main__":
    main()
