#!/usr/bin/env python3
"""Vision models as Hugging Face's transformers writes them (small configurations, random
weights, 5 classes, nothing downloaded) exported by PyTorch in eval mode with a dynamic batch at
32 x 32, each with PyTorch's output and input gradient beside it, for the same test as the
torchvision exports of scripts/onnx_fixtures.py:

    /usr/bin/python3 -m venv --system-site-packages /tmp/hf
    /tmp/hf/bin/pip install --no-deps transformers==4.30.2 huggingface_hub==0.16.4 \
        tokenizers==0.13.3 safetensors regex filelock pyyaml requests tqdm "numpy<2"
    /tmp/hf/bin/python scripts/hf_exports.py build/hf-models
    FRUGAL_ONNX_MODELS=build/hf-models build/tests/frugal_tests \
        -tc="onnx: torchvision exports give*"

(transformers is not a Debian package and not a dependency of anything here; 4.30 is a version
that runs on Debian's PyTorch 1.13, and --no-deps keeps pip from replacing it.)

The models' own classes (ViTForImageClassification, ...), their logits the output; SegFormer's
are per pixel (N, 5, H/4, W/4): a segmentation model. Not exported by this PyTorch or this
transformers: DINOv2 (not in 4.30), EfficientFormer and CvT (their small configurations fail in
PyTorch itself).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_fixtures  # noqa: E402  (the export helpers, one definition)


def models(T):
    """name -> a function building the model (T: the transformers module)."""
    vit = dict(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
               num_attention_heads=2, intermediate_size=64, num_labels=5)
    stages = dict(hidden_sizes=[8, 16, 24, 32], depths=[1, 1, 1, 1], num_labels=5)
    return {
        "hf_vit": lambda: T.ViTForImageClassification(T.ViTConfig(**vit)),
        "hf_deit": lambda: T.DeiTForImageClassification(T.DeiTConfig(**vit)),
        "hf_beit": lambda: T.BeitForImageClassification(
            T.BeitConfig(**vit, use_relative_position_bias=True)),
        "hf_convnext": lambda: T.ConvNextForImageClassification(T.ConvNextConfig(**stages)),
        "hf_convnextv2": lambda: T.ConvNextV2ForImageClassification(T.ConvNextV2Config(**stages)),
        "hf_poolformer": lambda: T.PoolFormerForImageClassification(T.PoolFormerConfig(**stages)),
        "hf_swin": lambda: T.SwinForImageClassification(T.SwinConfig(
            image_size=32, patch_size=2, embed_dim=8, depths=[1, 1], num_heads=[1, 2],
            window_size=4, num_labels=5)),
        "hf_segformer": lambda: T.SegformerForSemanticSegmentation(T.SegformerConfig(
            num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1], hidden_sizes=[8, 16],
            num_attention_heads=[1, 2], patch_sizes=[7, 3], strides=[4, 2],
            decoder_hidden_size=16, num_labels=5)),
        "hf_mobilevit": lambda: T.MobileViTForImageClassification(T.MobileViTConfig(
            image_size=32, hidden_sizes=[16, 24, 32],
            neck_hidden_sizes=[8, 8, 16, 16, 24, 24, 32], num_labels=5)),
        "hf_resnet": lambda: T.ResNetForImageClassification(T.ResNetConfig(
            embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], num_labels=5)),
        "hf_regnet": lambda: T.RegNetForImageClassification(T.RegNetConfig(
            embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], groups_width=8,
            num_labels=5)),
        "hf_levit": lambda: T.LevitForImageClassification(T.LevitConfig(
            image_size=32, hidden_sizes=[16, 24, 32], num_attention_heads=[1, 2, 2],
            depths=[1, 1, 1], key_dim=[8, 8, 8], num_labels=5)),
    }


def main(out, only):
    import warnings

    import torch
    import transformers

    class Logits(torch.nn.Module):
        """The model's logits alone (its output object holds more)."""

        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, x):
            return self.net(pixel_values=x).logits

    os.makedirs(out, exist_ok=True)
    for name, make in models(transformers).items():
        if only and name not in only:
            continue
        torch.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            net = Logits(make().eval()).eval()  # the export restores the wrapper's mode after
            onnx_fixtures.export_eval_with_grad(net, out, name, 32, 14)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
