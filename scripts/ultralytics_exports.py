#!/usr/bin/env python3
"""Detectors as users bring them: ultralytics' YOLO models (random weights, built from their
yaml files, nothing downloaded) exported by PyTorch in eval mode with a dynamic batch at 64 x 64,
each with PyTorch's output and input gradient beside it, for the same test as the torchvision
exports of scripts/onnx_fixtures.py:

    /usr/bin/python3 -m venv --system-site-packages /tmp/ultralytics
    /tmp/ultralytics/bin/pip install --no-deps ultralytics==8.0.200
    /tmp/ultralytics/bin/pip install opencv-python-headless pyyaml tqdm psutil py-cpuinfo \
        requests matplotlib seaborn "numpy<2"
    /tmp/ultralytics/bin/python scripts/ultralytics_exports.py build/yolo-models
    FRUGAL_ONNX_MODELS=build/yolo-models build/tests/frugal_tests \
        -tc="onnx: torchvision exports give*"

(ultralytics is not a Debian package and not a dependency of anything here; --no-deps keeps
pip from replacing Debian's PyTorch 1.13, and numpy below 2 is the one it was built against.)

A detector's output is its decoded boxes and class scores, (N, 4 + classes, anchors) (the
segmentation model's first output: with mask coefficients), flattened to (N, features) here so
the test can compare it as it compares a classifier's. What the heads compute from shapes (the
anchor points, the strides) frugal evaluates while recording; the box decoding subtracts
predicted distances from those anchor points; YOLOv8-pose's head writes its keypoints' sigmoid
into a slice of its output (ScatterND into an activation). PyTorch cannot differentiate that
in-place write in eval mode, so the pose model has no input gradient to compare (<name>.grad).
Not tried: RT-DETR.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_fixtures  # noqa: E402  (the export helpers, one definition)

# yaml name (ultralytics' own), the task's model class
MODELS = [("yolov8n", "detect"), ("yolov8n-seg", "segment"), ("yolov8n-pose", "pose"),
          ("yolov8n-cls", "classify"), ("yolov5nu", "detect"), ("yolov3-tinyu", "detect")]


def main(out, only):
    import warnings

    import torch
    from ultralytics.nn.tasks import (ClassificationModel, DetectionModel, PoseModel,
                                      SegmentationModel)

    classes = {"detect": DetectionModel, "segment": SegmentationModel, "pose": PoseModel,
               "classify": ClassificationModel}

    class Flat(torch.nn.Module):
        """The model's first output (its decoded boxes and scores), flattened per image."""

        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, x):
            y = self.net(x)
            while isinstance(y, (list, tuple)):
                y = y[0]
            return y.flatten(1)

    os.makedirs(out, exist_ok=True)
    for name, task in MODELS:
        if only and name not in only:
            continue
        torch.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            net = classes[task](name + ".yaml", verbose=False).eval()
        if task != "classify":
            net.model[-1].dynamic = True  # anchors from each input's shape, none cached
        # eval() on the wrapper too: the export puts every module back in its mode afterwards
        flat, file = Flat(net).eval(), name.replace("-", "_")
        if task == "pose":  # its head's in-place sigmoid: PyTorch's own backward refuses it
            onnx_fixtures.export_with_output(flat, torch.rand(2, 3, 64, 64) * 2 - 1, out, file, 13)
        else:
            onnx_fixtures.export_eval_with_grad(flat, out, file, 64, 13)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
