#!/usr/bin/env python3
"""Segmentation models as segmentation_models_pytorch builds them (random weights, 3 classes,
nothing downloaded) exported by PyTorch in eval mode with a dynamic batch at 64 x 64, each
with PyTorch's per-pixel output and input gradient beside it, for the same test as the
torchvision exports of scripts/onnx_fixtures.py:

    /usr/bin/python3 -m venv --system-site-packages /tmp/smp
    /tmp/smp/bin/pip install --no-deps segmentation-models-pytorch==0.3.3 timm==0.9.2 \
        pretrainedmodels==0.7.4 efficientnet-pytorch==0.7.1 munch huggingface_hub==0.16.4 \
        safetensors pyyaml tqdm "numpy<2"
    /tmp/smp/bin/python scripts/smp_exports.py build/smp-models
    FRUGAL_ONNX_MODELS=build/smp-models build/tests/frugal_tests \
        -tc="onnx: torchvision exports give*"

(segmentation_models_pytorch 0.3.3 pins timm 0.9.2 and runs on Debian's PyTorch 1.13; --no-deps
keeps pip from replacing it.)

Architectures: U-Net, U-Net++, FPN, DeepLabV3, DeepLabV3+, Linknet and MAnet, each over the
ResNet-18, MobileNetV2, EfficientNet-B0 and RegNetX-200MF encoders, and U-Net, FPN and MAnet
over SegFormer's MiT-B0 (the others do not take it); PSPNet over ResNet-18 at 192 px (its
adaptive pools export only where their sizes divide the map). Not here: PAN, whose pyramid is
too deep for 64 px; at 192 px it imports and gives PyTorch's output, but its float32 input
gradient is off by up to 2% of the largest (ReLU inputs within frugal's float32 rounding of
the kink in its dilated 12 x 12 stage: in float64, frugal's gradient is within 1.3e-7 of
PyTorch's float64 one), past the test's bound.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_fixtures  # noqa: E402  (the export helpers, one definition)

ARCHS = ["Unet", "UnetPlusPlus", "FPN", "DeepLabV3", "DeepLabV3Plus", "Linknet", "MAnet"]
ENCODERS = ["resnet18", "mobilenet_v2", "efficientnet-b0", "timm-regnetx_002", "mit_b0"]
MIT = {"Unet", "FPN", "MAnet"}  # the architectures that take mit_b0


def main(out, only):
    import warnings

    import torch
    import segmentation_models_pytorch as smp

    os.makedirs(out, exist_ok=True)
    for arch in ARCHS:
        for encoder in ENCODERS:
            if encoder == "mit_b0" and arch not in MIT:
                continue
            name = f"smp_{arch}_{encoder}".lower().replace("-", "_")
            if only and name not in only:
                continue
            torch.manual_seed(0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                net = getattr(smp, arch)(encoder_name=encoder, encoder_weights=None,
                                         classes=3).eval()
                onnx_fixtures.export_eval_with_grad(net, out, name, 64, 13)
    if not only or "smp_pspnet_resnet18" in only:
        torch.manual_seed(0)
        net = smp.PSPNet(encoder_name="resnet18", encoder_weights=None, classes=3).eval()
        onnx_fixtures.export_eval_with_grad(net, out, "smp_pspnet_resnet18", 192, 13)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
