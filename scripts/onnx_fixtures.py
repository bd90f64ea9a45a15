#!/usr/bin/env python3
"""(One builder function per test model, so this script runs past 400 lines.)

Writes the small ONNX test models of tests/test_onnx.cpp and, beside each, its expected
forward: tests/data/onnx/<name>.onnx and <name>.io (float32 input (2, C, H, W), then the
float32 output (2, classes), little-endian). The reference outputs come from ONNX's own
reference evaluator (onnx.reference, numpy), not from frugal. Needs `pip install onnx numpy`;
it is not a dependency of the library or of the tests, which read the committed files.

    python3 scripts/onnx_fixtures.py tests/data/onnx

With --torchvision DIR it exports torchvision models instead (random weights, eval mode, as
torch.onnx.export writes them) with PyTorch's own output beside each (<name>.io) and the
gradient of sum(R * output) with respect to the input for a random R, computed in float64
(<name>.grad: R, then d input, as float32), for the test
"onnx: torchvision exports give PyTorch's outputs" (FRUGAL_ONNX_MODELS=DIR). Needs Debian's
python3-torch and python3-torchvision (run it with /usr/bin/python3):

    /usr/bin/python3 scripts/onnx_fixtures.py --torchvision build/onnx-models [NAME ...]

With --segmentation DIR [--small] it writes a U-Net for `frugal segment` (DIR/unet.onnx; with
--small the test fixture unet_seg.onnx), exported by PyTorch (Debian's python3-torch):

    /usr/bin/python3 scripts/onnx_fixtures.py --segmentation build/onnx-models

With --pytorch DIR it writes the test models PyTorch exports, each with PyTorch's own output:
double_net.onnx (a float64 export), bilinear_net.onnx (bilinear resizing three ways),
matmul_net.onnx (MatMul by weights, on tokens and on pooled features), pad_net.onnx
(reflect and edge borders), focus_net.onnx (slices with steps), extras_net.onnx (means over
other axes, GELU's tanh form, torch.flip, torch.erf) and norm_net.onnx / norm13_net.onnx
(LayerNorm at opsets 17 and 13, ConvNeXt's block) bmm_net.onnx (MatMul with broadcast
leading axes), gather_net.onnx (Gather over activations) and reduce_net.onnx, reduce11_net.onnx
(ReduceSum, ReduceMax, ReduceMin, ReduceL1, ReduceL2, ReduceLogSumExp at opsets 13 and 11) and
expand_net.onnx (Expand over activations), instance_norm_net.onnx (InstanceNormalization,
GroupNorm's export), group_norm_lookalike_net.onnx (GroupNorm's five nodes over a reshape
that is no grouping), prelu_net.onnx (PReLU per channel and shared), activation_net.onnx (ELU, SELU, Mish, Softplus, Exp, Neg, Log,
Reciprocal), elu_net.onnx (ELU and CELU with alphas of their own), var_net.onnx (torch.var and std),
trig_net.onnx (sin, cos, atan, sign, LPPool2d), nearest_net.onnx (nearest resizing to any
size), einsum2_net.onnx (torch.einsum beyond batched products), gem_net.onnx (a
learned pow exponent), pixel_net.onnx (PixelShuffle, PixelUnshuffle, GlobalMaxPool, LogSoftmax),
lrn_net.onnx (LocalResponseNorm), minmax_net.onnx (torch.maximum, minimum, clamp by tensors),
lrn_torch_net.onnx (LocalResponseNorm as PyTorch exports it: an If), pool_window_net.onnx
(rectangular, 1-D and 3-D pools), pool_pad_net.onnx (pools padded unevenly, a dilated max
pool), same_pad_net.onnx (auto_pad SAME and VALID, ConvTranspose's output_shape),
round_net.onnx (Floor, Ceil and Round of activations), grid_sample_net.onnx (F.grid_sample),
signal_net.onnx (a 1-D network over (N, C, L) labelling each position), features_net.onnx
(an MLP over (N, F)), video_net.onnx (factored 3-D convolutions over (N, C, D, H, W)
labelling each voxel), conv3d_full_net.onnx (3-D windows
1 wide along no axis) and unet3d_net.onnx (a 3-D U-Net: 3-D pools, transposed convolutions
and resizing):

    /usr/bin/python3 scripts/onnx_fixtures.py --pytorch tests/data/onnx

With --torchvision-training DIR it writes training-mode exports with PyTorch's parameter
gradients of one step (<name>.pgrad and <name>.pgrad.txt, see torchvision_training) for the
test "onnx: torchvision training exports ... parameter gradients" (FRUGAL_ONNX_TRAINING=DIR):

    /usr/bin/python3 scripts/onnx_fixtures.py --torchvision-training build/onnx-training [NAME ...]

(NAMEs: only those of the lists below.)
"""
import sys

import numpy as np

# The ONNX builders' modules, where they run (imported, this file lends its PyTorch export
# helpers to scripts/timm_exports.py, which needs only PyTorch).
if __name__ == "__main__" and not {"--torchvision", "--torchvision-training", "--segmentation",
                                   "--pytorch"} & set(sys.argv):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

rng = np.random.default_rng(7)


def weight(name, *shape, scale=0.3):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def positive(name, *shape):
    return numpy_helper.from_array(rng.uniform(0.5, 1.5, shape).astype(np.float32), name)


def model(name, nodes, inits, in_shape, out_features, opset=13):
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", *in_shape])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", out_features])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="frugal scripts/onnx_fixtures.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def bn(prefix, c, x, y):
    inits = [positive(prefix + ".weight", c), weight(prefix + ".bias", c),
             weight(prefix + ".running_mean", c, scale=0.1), positive(prefix + ".running_var", c)]
    node = helper.make_node("BatchNormalization", [x] + [t.name for t in inits], [y],
                            name=prefix, epsilon=1e-5, momentum=0.9)
    return node, inits


def residual_net():
    """Conv, BN, ReLU, a residual Add, MaxPool, Clip (ReLU6), Sigmoid, HardSwish, Concat,
    LeakyRelu, Tanh, AveragePool, GlobalAveragePool, Flatten and Gemm."""
    n, i = [], []
    i += [weight("c1.weight", 4, 3, 3, 3), weight("c1.bias", 4)]
    n.append(helper.make_node("Conv", ["x", "c1.weight", "c1.bias"], ["a"], name="c1",
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]))
    node, ini = bn("bn1", 4, "a", "b")
    n.append(node), i.extend(ini)
    n.append(helper.make_node("Relu", ["b"], ["h1"], name="relu1"))
    i += [weight("c2.weight", 4, 4, 3, 3)]
    n.append(helper.make_node("Conv", ["h1", "c2.weight"], ["c"], name="c2", kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]))
    node, ini = bn("bn2", 4, "c", "d")
    n.append(node), i.extend(ini)
    n.append(helper.make_node("Add", ["d", "h1"], ["e"], name="add"))
    n.append(helper.make_node("Relu", ["e"], ["f"], name="relu2"))
    n.append(helper.make_node("MaxPool", ["f"], ["g"], name="pool", kernel_shape=[2, 2],
                              strides=[2, 2]))
    i += [weight("c3.weight", 6, 4, 1, 1), weight("c3.bias", 6)]
    n.append(helper.make_node("Conv", ["g", "c3.weight", "c3.bias"], ["h"], name="c3",
                              kernel_shape=[1, 1]))
    i += [numpy_helper.from_array(np.array(0, np.float32), "zero"),
          numpy_helper.from_array(np.array(6, np.float32), "six")]
    n.append(helper.make_node("Clip", ["h", "zero", "six"], ["r6"], name="relu6"))
    n.append(helper.make_node("Sigmoid", ["h"], ["s"], name="sigmoid"))
    n.append(helper.make_node("HardSwish", ["h"], ["hs"], name="hardswish"))
    n.append(helper.make_node("Concat", ["r6", "s", "hs"], ["cat"], name="cat", axis=1))
    n.append(helper.make_node("LeakyRelu", ["cat"], ["lr"], name="leaky", alpha=0.1))
    n.append(helper.make_node("Tanh", ["lr"], ["t"], name="tanh"))
    n.append(helper.make_node("AveragePool", ["t"], ["ap"], name="avg", kernel_shape=[3, 3],
                              strides=[1, 1], pads=[1, 1, 1, 1], count_include_pad=1))
    n.append(helper.make_node("GlobalAveragePool", ["ap"], ["gap"], name="gap"))
    n.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1))
    i += [weight("fc.weight", 5, 18), weight("fc.bias", 5)]
    n.append(helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["y"], name="fc",
                              transB=1))
    return model("residual_net", n, i, [3, 8, 8], 5, opset=14)


def reshape_net():
    """Constant, Reshape to (N, -1), Dropout and Identity folded, HardSigmoid, strided Conv,
    MaxPool in ceil mode, opset 11."""
    n, i = [], []
    i += [weight("conv.weight", 3, 2, 3, 3), weight("conv.bias", 3)]
    n.append(helper.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["a"], name="conv",
                              kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    n.append(helper.make_node("HardSigmoid", ["a"], ["b"], name="hsig", alpha=1.0 / 6, beta=0.5))
    n.append(helper.make_node("MaxPool", ["b"], ["c"], name="pool", kernel_shape=[2, 2],
                              strides=[2, 2], ceil_mode=1))
    n.append(helper.make_node("Dropout", ["c"], ["d"], name="drop"))
    n.append(helper.make_node("Identity", ["d"], ["e"], name="id"))
    n.append(helper.make_node("Constant", [], ["shape"], name="shape",
                              value=numpy_helper.from_array(np.array([0, -1], np.int64))))
    n.append(helper.make_node("Reshape", ["e", "shape"], ["f"], name="reshape"))
    i += [weight("fc.weight", 4, 12), weight("fc.bias", 4)]
    n.append(helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], name="fc",
                              transB=1))
    return model("reshape_net", n, i, [2, 7, 7], 4, opset=11)


def mobile_net():
    """Grouped, depthwise, dilated and asymmetrically padded Conv; squeeze-and-excitation (Mul
    of (N,C,1,1) by (N,C,H,W)); SiLU as x * sigmoid(x); Sub, Div and Mul by Constant scalars
    and per-channel initializers, on either side; Add of a broadcast bias; AveragePool without
    counting its padding; ReduceMean over H and W without keepdims; opset 13."""
    n, i = [], []
    i += [weight("expand.weight", 8, 2, 1, 1)]
    n.append(helper.make_node("Conv", ["x", "expand.weight"], ["a"], name="expand",
                              kernel_shape=[1, 1]))
    n.append(helper.make_node("Clip", ["a", "zero", "six"], ["a6"], name="relu6"))
    i += [numpy_helper.from_array(np.array(0, np.float32), "zero"),
          numpy_helper.from_array(np.array(6, np.float32), "six")]
    # TensorFlow's "same" at stride 2: the extra row and column at the bottom and right.
    i += [weight("dw.weight", 8, 1, 3, 3), weight("dw.bias", 8)]
    n.append(helper.make_node("Conv", ["a6", "dw.weight", "dw.bias"], ["b"], name="dw",
                              kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 1, 1], group=8))
    # Squeeze and excitation.
    n.append(helper.make_node("GlobalAveragePool", ["b"], ["sq"], name="squeeze"))
    i += [weight("se1.weight", 4, 8, 1, 1), weight("se1.bias", 4)]
    n.append(helper.make_node("Conv", ["sq", "se1.weight", "se1.bias"], ["s1"], name="se1",
                              kernel_shape=[1, 1]))
    n.append(helper.make_node("Relu", ["s1"], ["s2"], name="se_relu"))
    i += [weight("se2.weight", 8, 4, 1, 1), weight("se2.bias", 8)]
    n.append(helper.make_node("Conv", ["s2", "se2.weight", "se2.bias"], ["s3"], name="se2",
                              kernel_shape=[1, 1]))
    n.append(helper.make_node("Sigmoid", ["s3"], ["s"], name="se_gate"))
    n.append(helper.make_node("Mul", ["s", "b"], ["c"], name="excite"))
    # A dilated grouped conv (2 groups), then arithmetic with constants.
    i += [weight("grp.weight", 6, 4, 3, 3)]
    n.append(helper.make_node("Conv", ["c", "grp.weight"], ["d"], name="grp",
                              kernel_shape=[3, 3], pads=[2, 2, 2, 2], dilations=[2, 2],
                              group=2))
    # SiLU as PyTorch exports it: x * sigmoid(x).
    n.append(helper.make_node("Sigmoid", ["d"], ["d_sig"], name="silu_sigmoid"))
    n.append(helper.make_node("Mul", ["d", "d_sig"], ["d_silu"], name="silu_mul"))
    n.append(helper.make_node("Constant", [], ["half"], name="half",
                              value=numpy_helper.from_array(np.array(0.5, np.float32))))
    n.append(helper.make_node("Sub", ["d_silu", "half"], ["e"], name="sub"))
    i += [positive("scale", 6, 1, 1)]
    n.append(helper.make_node("Div", ["e", "scale"], ["f"], name="div"))
    n.append(helper.make_node("Mul", ["half", "f"], ["g"], name="mul"))
    i += [weight("shift", 1, 6, 1, 1)]
    n.append(helper.make_node("Add", ["g", "shift"], ["h"], name="add"))
    # An average whose divisor leaves the padding out (ONNX's default, count_include_pad 0).
    n.append(helper.make_node("AveragePool", ["h"], ["hp"], name="avg", kernel_shape=[3, 3],
                              strides=[1, 1], pads=[1, 1, 1, 1]))
    # The spatial mean as timm exports it, straight to (N, C).
    n.append(helper.make_node("ReduceMean", ["hp"], ["flat"], name="mean", axes=[-1, 2],
                              keepdims=0))
    i += [weight("fc.weight", 3, 6), weight("fc.bias", 3)]
    n.append(helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["y"], name="fc",
                              transB=1))
    return model("mobile_net", n, i, [2, 9, 9], 3, opset=13)


def train_net():
    """A training-mode export's form (torch.onnx.TrainingMode.TRAINING, opset 15): BatchNorm
    with training_mode 1 and its running statistics as extra outputs, Dropout with a ratio and
    training_mode true and a mask output. No reference output: its forward is random."""
    n, i = [], []
    i += [weight("conv.weight", 4, 2, 3, 3), weight("conv.bias", 4)]
    n.append(helper.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["a"], name="conv",
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    inits = [positive("bn.weight", 4), weight("bn.bias", 4),
             weight("bn.running_mean", 4, scale=0.1), positive("bn.running_var", 4)]
    n.append(helper.make_node("BatchNormalization", ["a"] + [t.name for t in inits],
                              ["b", "bn.mean_out", "bn.var_out"], name="bn", epsilon=1e-5,
                              momentum=0.9, training_mode=1))
    i += inits
    n.append(helper.make_node("Relu", ["b"], ["c"], name="relu"))
    n.append(helper.make_node("Constant", [], ["ratio"], name="ratio",
                              value=numpy_helper.from_array(np.array(0.25, np.float32))))
    n.append(helper.make_node("Constant", [], ["training"], name="training",
                              value=numpy_helper.from_array(np.array(True))))
    n.append(helper.make_node("Dropout", ["c", "ratio", "training"], ["d", "mask"], name="drop"))
    n.append(helper.make_node("GlobalAveragePool", ["d"], ["gap"], name="gap"))
    n.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1))
    i += [weight("fc.weight", 3, 4), weight("fc.bias", 3)]
    n.append(helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["y"], name="fc",
                              transB=1))
    return model("train_net", n, i, [2, 6, 6], 3, opset=15)


def unet_net():
    """A U-Net in small: a strided Conv down, ConvTranspose up twice (kernel 2 stride 2; kernel
    3 stride 2 pads 1 and output_padding 1) beside a nearest Resize by scales (asymmetric,
    floor: nn.Upsample's export), the skips joined by Concat on channels, and a nearest Resize
    by sizes (half_pixel) before the pool; opset 13. (ONNX's reference evaluator has no grouped
    ConvTranspose; the gradient tests cover groups.)"""
    n, i = [], []
    i += [weight("enc.weight", 4, 2, 3, 3), weight("enc.bias", 4)]
    n.append(helper.make_node("Conv", ["x", "enc.weight", "enc.bias"], ["e"], name="enc",
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    n.append(helper.make_node("Relu", ["e"], ["e1"], name="enc_relu"))
    i += [weight("down.weight", 6, 4, 3, 3), weight("down.bias", 6)]
    n.append(helper.make_node("Conv", ["e1", "down.weight", "down.bias"], ["d"], name="down",
                              kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    n.append(helper.make_node("Relu", ["d"], ["d1"], name="down_relu"))
    i += [weight("up.weight", 6, 4, 2, 2), weight("up.bias", 4)]
    n.append(helper.make_node("ConvTranspose", ["d1", "up.weight", "up.bias"], ["u"], name="up",
                              kernel_shape=[2, 2], strides=[2, 2]))
    i += [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
    n.append(helper.make_node("Resize", ["d1", "", "scales"], ["r"], name="resize",
                              mode="nearest", coordinate_transformation_mode="asymmetric",
                              nearest_mode="floor"))
    n.append(helper.make_node("Concat", ["u", "e1", "r"], ["cat"], name="skip", axis=1))
    i += [weight("up2.weight", 14, 3, 3, 3)]
    n.append(helper.make_node("ConvTranspose", ["cat", "up2.weight"], ["u2"], name="up2",
                              kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                              output_padding=[1, 1]))
    n.append(helper.make_node("Constant", [], ["sizes"], name="sizes",
                              value=numpy_helper.from_array(np.array([2, 3, 32, 32], np.int64))))
    n.append(helper.make_node("Resize", ["u2", "", "", "sizes"], ["u3"], name="resize_sizes",
                              mode="nearest"))
    n.append(helper.make_node("Relu", ["u3"], ["u4"], name="up_relu"))
    n.append(helper.make_node("GlobalAveragePool", ["u4"], ["gap"], name="gap"))
    n.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1))
    i += [weight("fc.weight", 3, 3), weight("fc.bias", 3)]
    n.append(helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["y"], name="fc",
                              transB=1))
    return model("unet_net", n, i, [2, 8, 8], 3, opset=13)


def shuffle_net():
    """ShuffleNet's moves with a dynamic batch, as torch.onnx.export writes them: the channel
    shuffle's target shape computed from Shape, Gather, Div, Cast, Unsqueeze and Concat, a 5-D
    Reshape and Transpose; Split with sizes; Slice with ends taken from a shape and a negative
    start; an asymmetric constant Pad of 0.25; Concat along the height; Softmax over the
    channels; opset 15."""
    n, i = [], []

    def const(name, values):
        n.append(helper.make_node("Constant", [], [name], name=name,
                                  value=numpy_helper.from_array(np.array(values, np.int64))))

    i += [weight("c1.weight", 8, 2, 3, 3), weight("c1.bias", 8)]
    n.append(helper.make_node("Conv", ["x", "c1.weight", "c1.bias"], ["a"], name="c1",
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    n.append(helper.make_node("Relu", ["a"], ["a1"], name="relu1"))
    # channel shuffle: (N, 2, C/2, H, W) -> swap -> (N, C, H, W), shapes from Shape
    n.append(helper.make_node("Shape", ["a1"], ["s"], name="shape"))
    for k in range(4):
        const(f"k{k}", k)
        n.append(helper.make_node("Gather", ["s", f"k{k}"], [f"g{k}"], name=f"gather{k}", axis=0))
    const("two", 2)
    n.append(helper.make_node("Div", ["g1", "two"], ["half"], name="div"))
    n.append(helper.make_node("Cast", ["half"], ["half64"], name="cast", to=TensorProto.INT64))
    const("ax0", [0])
    for k, v in (("n", "g0"), ("c", "half64"), ("h", "g2"), ("w", "g3")):
        n.append(helper.make_node("Unsqueeze", [v, "ax0"], [f"u{k}"], name=f"unsq_{k}"))
    const("groups", [2])
    const("minus1", [-1])
    n.append(helper.make_node("Concat", ["un", "groups", "uc", "uh", "uw"], ["shape5"],
                              name="shape5", axis=0))
    n.append(helper.make_node("Reshape", ["a1", "shape5"], ["r5"], name="view5"))
    n.append(helper.make_node("Transpose", ["r5"], ["t5"], name="swap", perm=[0, 2, 1, 3, 4]))
    n.append(helper.make_node("Concat", ["un", "minus1", "uh", "uw"], ["shape4"], name="shape4",
                              axis=0))
    n.append(helper.make_node("Reshape", ["t5", "shape4"], ["sh"], name="view4"))
    # split into 3 + 5 channels; slice the first part's rows [1, H) with H from the shape,
    # and the second part's last two columns
    const("sizes", [3, 5])
    n.append(helper.make_node("Split", ["sh", "sizes"], ["p0", "p1"], name="split", axis=1))
    n.append(helper.make_node("Shape", ["p0"], ["s0"], name="shape_p0"))
    const("k2b", [2])
    n.append(helper.make_node("Gather", ["s0", "k2b"], ["hend"], name="gather_h", axis=0))
    const("one", [1])
    n.append(helper.make_node("Slice", ["p0", "one", "hend", "k2b"], ["q0"], name="slice_rows"))
    const("neg2", [-2])
    const("big", [1000])
    const("ax3", [3])
    n.append(helper.make_node("Slice", ["p1", "neg2", "big", "ax3"], ["q1"], name="slice_cols"))
    # pad q0 (N,3,H-1,W) to (N,3,H,W+1) with 0.25; q1 (N,5,H,2) cropped/padded to (N,5,H,W+1)
    const("pads0", [0, 0, 1, 0, 0, 0, 0, 1])
    i += [numpy_helper.from_array(np.array(0.25, np.float32), "quarter")]
    n.append(helper.make_node("Pad", ["q0", "pads0", "quarter"], ["v0"], name="pad0"))
    const("pads1", [0, 0, 0, 0, 0, 0, 0, 7])
    n.append(helper.make_node("Pad", ["q1", "pads1"], ["v1"], name="pad1"))
    n.append(helper.make_node("Concat", ["v0", "v1"], ["cat"], name="cat_channels", axis=1))
    const("zero", [0])
    const("ax2", [2])
    n.append(helper.make_node("Slice", ["cat", "zero", "one", "ax2"], ["top"], name="top_row"))
    n.append(helper.make_node("Concat", ["cat", "top"], ["tall"], name="cat_rows", axis=-2))
    n.append(helper.make_node("Softmax", ["tall"], ["sm"], name="softmax", axis=1))
    n.append(helper.make_node("GlobalAveragePool", ["sm"], ["gap"], name="gap"))
    n.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1))
    i += [weight("fc.weight", 4, 8), weight("fc.bias", 4)]
    n.append(helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["y"], name="fc",
                              transB=1))
    return model("shuffle_net", n, i, [2, 8, 8], 4, opset=15)


def dense_net():
    """A dense block as torchvision's DenseNet exports it: each layer's BatchNormalization reads
    a channel Concat of the block input and every feature map before it (frugal fuses each such
    pair into one op), a bottleneck layer (1x1 Conv, BN, ReLU, 3x3 Conv), then a transition (the
    last Concat, BN, ReLU, 1x1 Conv, AveragePool) and the head."""
    n, i = [], []
    i += [weight("c0.weight", 4, 3, 3, 3)]
    n.append(helper.make_node("Conv", ["x", "c0.weight"], ["f0"], name="c0", kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]))
    feats = ["f0"]
    for layer in (1, 2, 3):
        p = f"l{layer}"
        c = 4 + 2 * (layer - 1)
        x = feats[0]
        if len(feats) > 1:
            x = f"{p}.cat"
            n.append(helper.make_node("Concat", feats, [x], name=x, axis=1))
        node, ini = bn(f"{p}.norm1", c, x, f"{p}.b1")
        n.append(node), i.extend(ini)
        n.append(helper.make_node("Relu", [f"{p}.b1"], [f"{p}.r1"], name=f"{p}.relu1"))
        h = f"{p}.r1"
        if layer == 2:  # the bottleneck: 1x1 to 4 channels, BN, ReLU
            i += [weight(f"{p}.conv1.weight", 4, c, 1, 1)]
            n.append(helper.make_node("Conv", [h, f"{p}.conv1.weight"], [f"{p}.c1"],
                                      name=f"{p}.conv1", kernel_shape=[1, 1]))
            node, ini = bn(f"{p}.norm2", 4, f"{p}.c1", f"{p}.b2")
            n.append(node), i.extend(ini)
            n.append(helper.make_node("Relu", [f"{p}.b2"], [f"{p}.r2"], name=f"{p}.relu2"))
            h, c = f"{p}.r2", 4
        i += [weight(f"{p}.conv.weight", 2, c, 3, 3)]
        n.append(helper.make_node("Conv", [h, f"{p}.conv.weight"], [f"f{layer}"], name=f"{p}.conv",
                                  kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        feats.append(f"f{layer}")
    n.append(helper.make_node("Concat", feats, ["t.cat"], name="t.cat", axis=1))
    node, ini = bn("t.norm", 10, "t.cat", "t.b")
    n.append(node), i.extend(ini)
    n.append(helper.make_node("Relu", ["t.b"], ["t.r"], name="t.relu"))
    i += [weight("t.conv.weight", 5, 10, 1, 1)]
    n.append(helper.make_node("Conv", ["t.r", "t.conv.weight"], ["t.c"], name="t.conv",
                              kernel_shape=[1, 1]))
    n.append(helper.make_node("AveragePool", ["t.c"], ["t.p"], name="t.pool", kernel_shape=[2, 2],
                              strides=[2, 2]))
    n.append(helper.make_node("GlobalAveragePool", ["t.p"], ["gap"], name="gap"))
    n.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1))
    i += [weight("fc.weight", 5, 5), weight("fc.bias", 5)]
    n.append(helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["y"], name="fc",
                              transB=1))
    return model("dense_net", n, i, [3, 8, 8], 5, opset=14)


def mask_net():
    """What Swin's shifted windows export, in a few nodes: a float mask built from x's shape
    (Shape, Gather, ConstantOfShape with a float value, ScatterND, Range, Mod, Cast to float,
    an Add broadcast (H, W) + (W), Equal, Not, Where over floats), a weight table gathered by
    constant indices (3, 4) and transposed (a relative position bias), a Pow of two constants;
    opset 13. Its own random weights, so the other models' stay as they were."""
    r = np.random.default_rng(21)

    def const(name, values, dtype):
        return numpy_helper.from_array(np.array(values, dtype), name)

    # Float constants as PyTorch writes them: Constant nodes (initializers are weights).
    n = [helper.make_node("Constant", [], [name], name=name, value=numpy_helper.from_array(
        np.array(v, np.float32), name)) for name, v in
         [("fives", [[5, 5, 5, 5]]), ("fzero", 0), ("minus", -1.5), ("sixteen", 16),
          ("minus_half", -0.5)]]
    n += [helper.make_node("Shape", ["x"], ["s"], name="shape"),
         helper.make_node("Gather", ["s", "i2"], ["h"], name="h", axis=0),
         helper.make_node("Gather", ["s", "i3"], ["w"], name="w", axis=0),
         helper.make_node("Unsqueeze", ["h", "axes0"], ["h1"], name="h1"),
         helper.make_node("Unsqueeze", ["w", "axes0"], ["w1"], name="w1"),
         helper.make_node("Concat", ["h1", "w1"], ["hw"], name="hw", axis=0),
         helper.make_node("ConstantOfShape", ["hw"], ["zeros"], name="zeros",
                          value=helper.make_tensor("v", TensorProto.FLOAT, [1], [0.0])),
         helper.make_node("ScatterND", ["zeros", "rows", "fives"], ["m1"], name="scatter"),
         helper.make_node("Range", ["zero", "w", "one"], ["cols"], name="range"),
         helper.make_node("Mod", ["cols", "two"], ["parity"], name="mod"),
         helper.make_node("Cast", ["parity"], ["parity_f"], name="cast", to=TensorProto.FLOAT),
         helper.make_node("Add", ["m1", "parity_f"], ["m2"], name="add_mask"),
         helper.make_node("Equal", ["m2", "fzero"], ["eq"], name="equal"),
         helper.make_node("Not", ["eq"], ["ne"], name="not"),
         helper.make_node("Where", ["ne", "minus", "fzero"], ["mask"], name="where"),
         helper.make_node("Unsqueeze", ["mask", "axes01"], ["mask4"], name="mask4"),
         helper.make_node("Add", ["x", "mask4"], ["a"], name="add_x"),
         helper.make_node("Gather", ["table", "index"], ["g"], name="bias", axis=0),
         helper.make_node("Transpose", ["g"], ["bias"], name="bias_t", perm=[2, 0, 1]),
         helper.make_node("Add", ["a", "bias"], ["b"], name="add_bias"),
         helper.make_node("Pow", ["sixteen", "minus_half"], ["scale"], name="pow"),
         helper.make_node("Mul", ["b", "scale"], ["c"], name="scale"),
         helper.make_node("GlobalAveragePool", ["c"], ["gap"], name="gap"),
         helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1),
         helper.make_node("Gemm", ["flat", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1)]
    i = [const("i2", 2, np.int64), const("i3", 3, np.int64), const("axes0", [0], np.int64),
         const("axes01", [0, 1], np.int64), const("rows", [[1]], np.int64),
         const("zero", 0, np.int64), const("one", 1, np.int64), const("two", 2, np.int64),
         const("index", r.integers(0, 5, (3, 4)), np.int64),
         numpy_helper.from_array(r.standard_normal((5, 2)).astype(np.float32), "table"),
         numpy_helper.from_array((r.standard_normal((3, 2)) * 0.5).astype(np.float32),
                                 "fc.weight"),
         numpy_helper.from_array((r.standard_normal(3) * 0.1).astype(np.float32), "fc.bias")]
    return model("mask_net", n, i, [2, 3, 4], 3, opset=13)


def write(m, out):
    name = m.graph.name
    if name == "train_net":
        onnx.save(m, f"{out}/{name}.onnx")
        print(f"{out}/{name}.onnx (no reference output: training-mode dropout)")
        return
    dims = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim[1:]]
    x = rng.uniform(-1, 1, (2, *dims)).astype(np.float32)
    (y,) = ReferenceEvaluator(m).run(None, {"x": x})
    onnx.save(m, f"{out}/{name}.onnx")
    with open(f"{out}/{name}.io", "wb") as f:
        f.write(x.astype("<f4").tobytes())
        f.write(np.asarray(y, dtype="<f4").tobytes())
    print(f"{out}/{name}.onnx: input {x.shape}, output {np.asarray(y).shape}")


def main(out):
    # The models' weights, then each one's input, in the order the committed files were made.
    for m in (residual_net(), reshape_net()):
        write(m, out)
    write(mobile_net(), out)
    write(train_net(), out)
    write(unet_net(), out)
    write(shuffle_net(), out)
    write(dense_net(), out)
    write(mask_net(), out)


def plain_googlenet(num_classes):
    """torchvision's GoogLeNet without its auxiliary heads (their outputs are a tuple)."""
    import torchvision
    return torchvision.models.googlenet(num_classes=num_classes, aux_logits=False,
                                        init_weights=True)


def plain_inception_v3(num_classes):
    """torchvision's Inception v3 without its auxiliary head."""
    import torchvision
    return torchvision.models.inception_v3(num_classes=num_classes, aux_logits=False,
                                           init_weights=True)


def segmentation(make):
    """A constructor of torchvision's segmentation model `make` (random weights, no auxiliary
    head) whose output is its dict's "out": (N, classes, H, W)."""
    import torch

    class Out(torch.nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, x):
            return self.net(x)["out"]

    return lambda num_classes: Out(make(weights=None, weights_backbone=None,
                                        num_classes=num_classes, aux_loss=False))


def torchvision_models(out, only=()):
    import torch
    import torchvision
    import torchvision.models.segmentation as tvs

    torch.manual_seed(0)
    # name, constructor, input side, opset, calibrate. Calibrated models first run a few batches
    # in training mode so that BatchNorm's running statistics fit the data: with the initial
    # ones (mean 0, variance 1) MobileNetV2's and EfficientNet's outputs shrink to 1e-10.
    cases = [("resnet18", torchvision.models.resnet18, 64, 13, False),
             ("resnet50", torchvision.models.resnet50, 64, 13, False),
             ("squeezenet1_1", torchvision.models.squeezenet1_1, 96, 13, False),
             ("alexnet", torchvision.models.alexnet, 224, 11, False),
             ("vgg11_bn", torchvision.models.vgg11_bn, 224, 17, False),
             ("mobilenet_v2", torchvision.models.mobilenet_v2, 64, 13, True),
             ("efficientnet_b0", torchvision.models.efficientnet_b0, 64, 13, True),
             ("densenet121", torchvision.models.densenet121, 64, 13, True),
             ("shufflenet_v2_x1_0", torchvision.models.shufflenet_v2_x1_0, 64, 15, True),
             ("convnext_tiny", torchvision.models.convnext_tiny, 64, 17, False),
             ("mobilenet_v3_large", torchvision.models.mobilenet_v3_large, 64, 15, True),
             ("regnet_y_400mf", torchvision.models.regnet_y_400mf, 64, 15, True),
             ("resnext50_32x4d", torchvision.models.resnext50_32x4d, 64, 15, False),
             ("googlenet", plain_googlenet, 64, 15, True),
             ("efficientnet_v2_s", torchvision.models.efficientnet_v2_s, 64, 15, True),
             # Segmentation, output (N, 10, 64, 64): dilated backbones, ASPP's pooled branch
             # upsampled from 1x1 and its rates wider than the 4x4 map, bilinear upsampling by
             # 8 and 16 (align_corners=False).
             ("deeplabv3_mobilenet_v3_large", segmentation(tvs.deeplabv3_mobilenet_v3_large),
              64, 15, True),
             ("lraspp_mobilenet_v3_large", segmentation(tvs.lraspp_mobilenet_v3_large), 64, 15,
              True),
             # Swin-T: shifted windows (their mask and relative position bias computed in the
             # graph), exported unfolded below so the bias tables stay weights.
             ("swin_t", torchvision.models.swin_t, 64, 17, False),
             # MaxViT-T (224 px: its windows and grids of 7 must divide every stage's map):
             # attention as Einsum, MBConv blocks with squeeze-and-excitation.
             ("maxvit_t", torchvision.models.maxvit_t, 224, 17, True),
             # Video networks over clips (3, 4, 32, 32): Conv3d 1 wide along no axis (r3d_18,
             # mc3_18) and R(2+1)D's factored windows, BatchNorm3d folded, AdaptiveAvgPool3d.
             ("r3d_18", torchvision.models.video.r3d_18, (3, 4, 32, 32), 13, True),
             ("mc3_18", torchvision.models.video.mc3_18, (3, 4, 32, 32), 13, True),
             ("r2plus1d_18", torchvision.models.video.r2plus1d_18, (3, 4, 32, 32), 13, True)]
    # Not here: MNASNet 0.5 and Inception v3 import and match PyTorch's float64 gradients
    # (--torchvision-training), but at these sizes their float32 eval outputs and input
    # gradients are off PyTorch's past this comparison's bounds (Inception v3's output by 2e-4
    # of the largest; their input gradients by 1.2-1.6% in L2); so are FCN-ResNet50's (output
    # 1.1e-4 of the largest, input gradient, of values up to 467, 1.5-1.9% in L2), and S3D's
    # (torchvision.models.video.s3d on clips (3, 16, 224, 224), its least: output 3.5e-5 of
    # 0.68, input gradient 2.7% in L2, where PyTorch's own float32 gradient is 2.2% off its
    # float64 one). At random weights these networks' float32 results are that sensitive to
    # rounding.
    for name, make, side, opset, calibrate in cases:
        if only and name not in only:
            continue
        net = make(num_classes=10)
        if calibrate:
            calibrate_batch_norm(net, side)
        export_eval_with_grad(net.eval(), out, name, side, opset, fold=not name.startswith("swin"))


def sample_shape(side):
    """One sample's shape: 3 x side x side images, or the shape itself (a clip's)."""
    return tuple(side) if isinstance(side, tuple) else (3, side, side)


def calibrate_batch_norm(net, side):
    """Runs a few random batches in training mode so that BatchNorm's running statistics fit
    the data (a plain average over them)."""
    import torch

    for m in net.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.momentum = None  # a plain average over the calibration batches
    net.train()
    with torch.no_grad():
        for _ in range(4):
            net(torch.rand(16, *sample_shape(side)) * 2 - 1)


def export_eval_with_grad(net, out, name, side, opset, fold=True):
    """Exports `net` (eval mode) with a dynamic batch to <out>/<name>.onnx, never leaving a
    partial file, with PyTorch's output of two random images (<name>.io) and the input gradient
    of sum(R * y) for a random R (<name>.grad: R, then d input), for the test "onnx: torchvision
    exports give PyTorch's outputs" (FRUGAL_ONNX_MODELS)."""
    import copy
    import os
    import warnings

    import torch

    x = torch.rand(2, *sample_shape(side)) * 2 - 1
    with torch.no_grad():
        y = net(x)
    path = f"{out}/{name}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, x, path + ".tmp", opset_version=opset,
                          input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "N"}, "y": {0: "N"}},
                          do_constant_folding=fold)
    os.replace(path + ".tmp", path)
    # d sum(R * y) / d x for a random R: the backward pass through every op, independent of
    # how the export names or folds the weights (eval mode: BatchNorm is linear). Computed
    # in float64, the truth both float32 runs (PyTorch's and frugal's) approach. (frugal
    # takes gradients in training mode, so the test compares them only where the export
    # folded every BatchNorm into a convolution.)
    r = torch.rand(y.shape) * 2 - 1
    xg = x.double().requires_grad_(True)
    (copy.deepcopy(net).double()(xg) * r.double()).sum().backward()
    with open(f"{out}/{name}.io", "wb") as f:
        f.write(x.numpy().astype("<f4").tobytes())
        f.write(y.numpy().astype("<f4").tobytes())
    with open(f"{out}/{name}.grad", "wb") as f:
        f.write(r.numpy().astype("<f4").tobytes())
        f.write(xg.grad.numpy().astype("<f4").tobytes())
    print(f"{out}/{name}.onnx: input {tuple(x.shape)}, output {tuple(y.shape)}, opset {opset}")


def export_with_output(net, x, out, name, opset, fold=True, dynamic=True, fixed_batch=None):
    """Exports `net` (eval mode) at input x with a dynamic batch (`dynamic` False: x's; or
    `fixed_batch`: at x's first images, the file fixing that batch), never leaving a partial
    file, and writes x and PyTorch's output beside it (<name>.io, in x's float type); `fold`
    False leaves constant expressions unfolded, as training-mode exports do."""
    import os
    import warnings

    import torch

    with torch.no_grad():
        y = net(x)
    path = f"{out}/{name}.onnx"
    if fixed_batch is not None:
        dynamic = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, x if fixed_batch is None else x[:fixed_batch], path + ".tmp",
                          opset_version=opset, input_names=["x"],
                          output_names=["y"],
                          dynamic_axes={"x": {0: "N"}, "y": {0: "N"}} if dynamic else None,
                          do_constant_folding=fold)
    os.replace(path + ".tmp", path)
    kind = "<f8" if x.dtype == torch.float64 else "<f4"
    with open(f"{out}/{name}.io", "wb") as f:
        f.write(x.numpy().astype(kind).tobytes())
        f.write(y.numpy().astype(kind).tobytes())
    print(f"{path}: {x.dtype}, input {tuple(x.shape)}, output {tuple(y.shape)}")


def export_seeded(make_net, seed, shape, out, name, opset=13):
    """The small fixtures' common tail: make_net() built right after torch.manual_seed(seed),
    in eval mode, exported (export_with_output) at an input drawn uniform in [-2, 2) of
    `shape` right after it."""
    import torch

    torch.manual_seed(seed)
    net = make_net().eval()
    x = torch.rand(*shape) * 4 - 2
    export_with_output(net, x, out, name, opset)


def double_net(out):
    """A small network exported by PyTorch in float64 (model.double()): a grouped convolution,
    BatchNorm in eval mode with non-trivial statistics, ReLU6, a channel shuffle (view,
    transpose, view with a dynamic batch), chunk, F.pad with a value, SiLU, max pooling, a
    transposed convolution, softmax and a linear head; tests/data/onnx/double_net.onnx and its
    PyTorch output in float64 (double_net.io: input (2, 4, 12, 12), then output (2, 5)), for
    the test that frugal's float64 forward is within 1e-10 of it."""

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(4, 8, 3, padding=1, groups=2)
            self.bn = nn.BatchNorm2d(8)
            self.up = nn.ConvTranspose2d(8, 6, 2, stride=2)
            self.fc = nn.Linear(6, 5)

        def forward(self, x):
            x = F.relu6(self.bn(self.conv(x)))
            n, c, h, w = x.size()
            x = x.view(n, 2, c // 2, h, w).transpose(1, 2).contiguous().view(n, c, h, w)
            a, b = x.chunk(2, dim=1)
            b = F.pad(F.silu(b), [1, 0, 0, 1], value=0.5)[:, :, :h, 1:]
            x = F.max_pool2d(torch.cat([b, a], 1), 2)
            x = torch.softmax(self.up(x), dim=1)
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    torch.manual_seed(0)
    net = Net()
    with torch.no_grad():
        net.bn.running_mean.uniform_(-0.5, 0.5)
        net.bn.running_var.uniform_(0.5, 1.5)
    net = net.double().eval()
    x = torch.rand(2, 4, 12, 12, dtype=torch.float64) * 2 - 1
    export_with_output(net, x, out, "double_net", 15)


def bilinear_net(out):
    """Bilinear resizing as PyTorch exports it: nn.Upsample(scale_factor=2, mode="bilinear")
    (pytorch_half_pixel), F.interpolate to a skip's size read from its shape with
    align_corners=True, and by a fractional factor 1.5 (half-pixel centres, output floor(7 x
    1.5)); tests/data/onnx/bilinear_net.onnx with PyTorch's float32 output (bilinear_net.io)."""

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.down = nn.Conv2d(2, 4, 3, stride=2, padding=1)
            self.up = nn.Upsample(scale_factor=2, mode="bilinear")
            self.mix = nn.Conv2d(6, 4, 3, padding=1)
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            d = torch.relu(self.down(x))                            # 7 x 7
            a = self.up(d)                                          # 14 x 14
            b = F.interpolate(d, size=x.shape[2:], mode="bilinear", align_corners=True)
            c = F.interpolate(x, scale_factor=1.5, mode="bilinear")  # 21 x 21
            m = torch.relu(self.mix(torch.cat([a, b[:, :2]], 1)))
            m = F.interpolate(m, size=c.shape[2:], mode="bilinear")
            return self.fc((m * c[:, :1]).mean((2, 3)))

    torch.manual_seed(1)
    net = Net().eval()
    x = torch.rand(2, 2, 14, 14) * 2 - 1
    export_with_output(net, x, out, "bilinear_net", 13)


def matmul_net(out):
    """Matrix products as PyTorch exports them: the feature map as tokens (flatten, transpose:
    (N, H W, C)), nn.Linear on the tokens (MatMul by a (C, D) weight, then Add of its bias) and
    GELU (five nodes around an Erf, fused back into one), self-attention over the tokens
    (MatMul between activations, Softmax),
    back to a feature map (transpose, reshape), pooled, and x @ W on the pooled (N, D)
    (MatMul); tests/data/onnx/matmul_net.onnx with PyTorch's float32 output (matmul_net.io)."""

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 6, 3, padding=1)
            self.tokens = nn.Linear(6, 8)
            self.w = nn.Parameter(torch.randn(8, 4) * 0.3)

        def forward(self, x):
            n, _, h, w = x.shape
            t = torch.relu(self.conv(x)).flatten(2).transpose(1, 2)  # (N, H W, 6)
            t = F.gelu(self.tokens(t))                                  # (N, H W, 8)
            att = torch.softmax(t @ t.transpose(1, 2) / 8 ** 0.5, dim=-1)  # (N, H W, H W)
            m = (att @ t).transpose(1, 2).reshape(n, 8, h, w)
            return F.adaptive_avg_pool2d(m, 1).flatten(1) @ self.w

    torch.manual_seed(2)
    net = Net().eval()
    x = torch.rand(2, 3, 5, 5) * 2 - 1
    export_with_output(net, x, out, "matmul_net", 14)


def focus_net(out):
    """Slices with steps as PyTorch exports them: YOLOv5's focus layer (the four phases
    x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2] joined along
    channels) and every third channel of a feature map (x[:, 1::3]), then a head;
    tests/data/onnx/focus_net.onnx with PyTorch's float32 output (focus_net.io)."""

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(12, 9, 3, padding=1)
            self.fc = nn.Linear(3, 4)

        def forward(self, x):
            x = torch.cat([x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2],
                           x[..., 1::2, 1::2]], 1)
            x = F.relu(self.conv(x))[:, 1::3]
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    torch.manual_seed(3)
    net = Net().eval()
    x = torch.rand(2, 3, 8, 8) * 2 - 1
    export_with_output(net, x, out, "focus_net", 13)


def pad_net(out):
    """Borders as PyTorch exports them: ReflectionPad2d (ONNX Pad, mode reflect) before a
    convolution, ReplicationPad2d (mode edge) before another, then a head;
    tests/data/onnx/pad_net.onnx with PyTorch's float32 output (pad_net.io)."""

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.reflect = nn.ReflectionPad2d((2, 1, 1, 2))
            self.conv1 = nn.Conv2d(3, 6, 3)
            self.edge = nn.ReplicationPad2d(1)
            self.conv2 = nn.Conv2d(6, 4, 3)
            self.fc = nn.Linear(4, 5)

        def forward(self, x):
            x = F.relu(self.conv1(self.reflect(x)))
            x = F.relu(self.conv2(self.edge(x)))
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    torch.manual_seed(4)
    net = Net().eval()
    x = torch.rand(2, 3, 6, 7) * 2 - 1
    export_with_output(net, x, out, "pad_net", 13)


def extras_net(out):
    """Ops from beyond the classic CNNs as PyTorch exports them: a channel mean subtracted
    (ReduceMean over axis 1 with keepdims, a Sub broadcast over the channels), GELU's tanh form
    (nine nodes, fused back into one), torch.flip on one axis and on two (Slice with a step of
    -1), torch.erf alone, and the mean over channels and width without keepdims (ReduceMean
    over axes 1 and 3: (N, H)) before a head; tests/data/onnx/extras_net.onnx with PyTorch's
    float32 output (extras_net.io)."""

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 6, 3, padding=1)
            self.conv2 = nn.Conv2d(6, 4, 3, padding=1)
            self.fc = nn.Linear(7, 5)

        def forward(self, x):
            a = self.conv(x)
            a = F.gelu(a - a.mean(1, keepdim=True), approximate="tanh")
            b = torch.erf(self.conv2(torch.flip(a, [3])))
            rows = torch.flip(b, [1, 2]).mean(dim=(1, 3))
            return self.fc(rows)

    torch.manual_seed(5)
    net = Net().eval()
    x = torch.rand(2, 3, 7, 6) * 2 - 1
    export_with_output(net, x, out, "extras_net", 17)


def bmm_net(out):
    """MatMul with broadcast leading axes as PyTorch exports it: two query heads against one
    shared key/value head (multi-query attention: (N, 2, T, 4) @ (N, 1, 4, T), then the
    attention (N, 2, T, T) @ (N, 1, T, 4)), then a head; tests/data/onnx/bmm_net.onnx with
    PyTorch's float32 output (bmm_net.io)."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.kv = nn.Conv2d(3, 4, 3, padding=1)
            self.fc = nn.Linear(8, 5)

        def forward(self, x):
            n, _, h, w = x.shape
            q = self.conv(x).flatten(2).transpose(1, 2).reshape(n, h * w, 2, 4).transpose(1, 2)
            kv = self.kv(x).flatten(2).transpose(1, 2).unsqueeze(1)  # (N, 1, T, 4)
            att = torch.softmax(q @ kv.transpose(-1, -2) / 2, dim=-1)  # (N, 2, T, T)
            y = (att @ kv).transpose(1, 2).reshape(n, h * w, 8)  # (N, T, 8)
            return self.fc(y.mean(1))

    torch.manual_seed(8)
    net = Net().eval()
    x = torch.rand(2, 3, 5, 4) * 2 - 1
    export_with_output(net, x, out, "bmm_net", 14)


def gather_net(out):
    """Indexing by constants as PyTorch exports it (Gather over activations): channels picked
    by a list (x[:, [4, 1, 1]]), the last row (x[:, :, -1]) and one channel (x[:, 0]), each
    pooled into a head; tests/data/onnx/gather_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 6, 3, padding=1)
            self.fc = nn.Linear(10, 5)

        def forward(self, x):
            y = torch.relu(self.conv(x))
            picked = y[:, [4, 1, 1]]  # (N, 3, H, W)
            row = y[:, :, -1]  # (N, 6, W)
            one = picked[:, 0]  # (N, H, W)
            return self.fc(torch.cat([picked.mean((2, 3)), row.mean(2),
                                      one.mean((1, 2)).unsqueeze(1)], 1))

    torch.manual_seed(9)
    net = Net().eval()
    x = torch.rand(2, 3, 5, 6) * 2 - 1
    export_with_output(net, x, out, "gather_net", 13)


def reduce_net(out):
    """Reductions as PyTorch exports them: a sum over the map (ReduceSum, its axes an input at
    opset 13, an attribute at 11), amax and amin (ReduceMax, ReduceMin), torch.norm's 2- and
    1-norms (ReduceL2 over channels and width, ReduceL1), logsumexp over the channels kept as
    an axis (ReduceLogSumExp, keepdims), torch.linalg.vector_norm (Abs, Pow, ReduceSum, Pow) and
    generalized-mean pooling (Pow by 3 and by 1/3), joined into a head; tests/data/onnx/reduce_net.onnx
    (opset 13) and reduce11_net.onnx (opset 11) with PyTorch's float32 output."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 6, 3, padding=1)
            self.fc = nn.Linear(36, 5)

        def forward(self, x):
            y = self.conv(x)  # (N, 6, 5, 4)
            a = y.sum((2, 3))
            b = y.amax(3).amin(2)
            c = torch.norm(y, p=2, dim=(1, 3))  # (N, 5)
            d = torch.logsumexp(y, dim=1, keepdim=True).mean((2, 3))  # (N, 1)
            e = torch.norm(y, p=1, dim=2).sum(2)
            f = torch.linalg.vector_norm(y, 2, dim=(2, 3))  # Abs, Pow, ReduceSum, Pow
            g = (torch.sigmoid(y) ** 3).mean((2, 3)) ** (1 / 3)  # GeM pooling: Pow by 3, 1/3
            return self.fc(torch.cat([a, b, c, d, e, f, g], 1))

    torch.manual_seed(10)
    net = Net().eval()
    x = torch.rand(2, 3, 5, 4) * 2 - 1
    export_with_output(net, x, out, "reduce_net", 13)
    export_with_output(net, x, out, "reduce11_net", 11)


def expand_net(out):
    """Expand over activations as PyTorch exports it: a spatial gate of one channel broadcast
    over the feature map's channels (m.expand(n, c, h, w), the sizes from x's shape) and a
    pooled vector repeated along a new middle axis (v[:, None].expand(n, 3, c)), joined into a
    head; tests/data/onnx/expand_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 6, 3, padding=1)
            self.gate = nn.Conv2d(6, 1, 1)
            self.fc = nn.Linear(6 + 18, 5)

        def forward(self, x):
            y = torch.relu(self.conv(x))
            n, c, h, w = y.shape
            m = torch.sigmoid(self.gate(y)).expand(n, c, h, w)
            v = (y * m).mean((2, 3))  # (N, 6)
            r = v[:, None].expand(n, 3, c) * torch.arange(1.0, 4.0).view(1, 3, 1)
            return self.fc(torch.cat([v, r.flatten(1)], 1))

    torch.manual_seed(11)
    net = Net().eval()
    x = torch.rand(2, 3, 5, 4) * 2 - 1
    export_with_output(net, x, out, "expand_net", 13)


def class_token_net(out):
    """A vision transformer's class token: a learned (1, 1, D) vector expanded over the batch
    (self.cls.expand(n, -1, -1), n from x's shape, as torchvision's ViT writes it) and joined in
    front of the patch tokens, a learned position embedding added, a LayerNorm, and a linear
    head on the class token's row; tests/data/onnx/class_token_net.onnx with PyTorch's float32
    output."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch = nn.Conv2d(3, 8, 2, stride=2)
            self.cls = nn.Parameter(torch.randn(1, 1, 8) * 0.5)
            self.pos = nn.Parameter(torch.randn(1, 7, 8) * 0.1)
            self.norm = nn.LayerNorm(8)
            self.head = nn.Linear(8, 5)

        def forward(self, x):
            n = x.shape[0]
            t = self.patch(x).flatten(2).transpose(1, 2)  # (N, 6, 8)
            t = torch.cat([self.cls.expand(n, -1, -1), t], dim=1) + self.pos
            return self.head(self.norm(t)[:, 0])

    torch.manual_seed(15)
    net = Net().eval()
    x = torch.rand(2, 3, 4, 6) * 2 - 1
    export_with_output(net, x, out, "class_token_net", 15)


def timm_net(out):
    """Blocks as timm writes them: TF's "same" padding computed from the input's size
    (Ceil, Clip over shapes, then Pad), NFNets' weight-standardized convolution with a learned
    gain (F.batch_norm over the weight in training mode), ECA's channel attention (a 1-D convolution over the
    pooled channels), a class token, attention whose q, k and v are unbound from one tensor
    (Split along an axis 0 a Transpose moved the batch off, then Squeeze) with q and k
    normalized (F.normalize: ReduceL2, Clip to a minimum, Div), LeViT's BatchNorm1d over the
    tokens (Flatten at axis 2), a clamp to [-1.5, 2]; tests/data/onnx/timm_net.onnx (a
    dynamic batch) and timm_static_net.onnx (exported at a fixed batch of 1, its output
    PyTorch's at a batch of 2), each with PyTorch's float32 output."""

    import torch
    from torch import nn
    from torch.nn import functional as F

    def pad_same(x, k, s):  # timm.layers.padding.pad_same, its traced form
        ih, iw = x.size()[-2:]

        def amount(size):
            if isinstance(size, torch.Tensor):
                return torch.clamp(((size / s).ceil() - 1) * s + (k - 1) + 1 - size, min=0)
            return max((-(-size // s) - 1) * s + (k - 1) + 1 - size, 0)

        ph, pw = amount(ih), amount(iw)
        return F.pad(x, (pw // 2, pw - pw // 2, ph // 2, ph - ph // 2))

    class Attention(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(dim, dim * 3)
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            b, n, c = x.shape
            qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
            q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
            attn = ((q @ k.transpose(-2, -1)) * 3.0).softmax(dim=-1)
            return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))

    class ScaledStdConv2d(nn.Conv2d):  # timm.layers.std_conv.ScaledStdConv2d
        def __init__(self, cin, cout, k):
            super().__init__(cin, cout, k, padding=k // 2)
            self.gain = nn.Parameter(torch.rand(cout, 1, 1, 1) + 0.5)
            self.scale = (cin * k * k) ** -0.5

        def forward(self, x):
            w = F.batch_norm(self.weight.reshape(1, self.out_channels, -1), None, None,
                             weight=(self.gain * self.scale).view(-1), training=True,
                             momentum=0.0, eps=1e-6).reshape_as(self.weight)
            return F.conv2d(x, w, self.bias, self.stride, self.padding)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 8, 3, stride=2)
            self.std = ScaledStdConv2d(8, 8, 3)
            self.eca = nn.Conv1d(1, 1, 3, padding=1, bias=False)
            self.cls = nn.Parameter(torch.randn(1, 1, 8) * 0.5)
            self.attn = Attention(8, 2)
            self.bn = nn.BatchNorm1d(8)
            self.head = nn.Linear(8, 5)

        def forward(self, x):
            x = self.std(self.stem(pad_same(x, 3, 2)))
            b = x.shape[0]
            y = self.eca(x.mean((2, 3)).view(b, 1, -1)).view(b, -1, 1, 1).sigmoid()
            t = (x * y).flatten(2).transpose(1, 2)
            t = torch.cat([self.cls.expand(b, -1, -1), t], dim=1)
            t = t + self.attn(t)
            t = self.bn(t.flatten(0, 1)).reshape(t.shape)
            return self.head(torch.clamp(t, -1.5, 2.0)[:, 0])

    torch.manual_seed(22)
    net = Net()
    with torch.no_grad():
        net.bn.running_mean.uniform_(-0.2, 0.2)
        net.bn.running_var.uniform_(0.5, 1.5)
        net.bn.weight.uniform_(0.5, 1.5)
        net.bn.bias.uniform_(-0.3, 0.3)
    net = net.eval()
    x = torch.rand(2, 3, 7, 9) * 4 - 2
    export_with_output(net, x, out, "timm_net", 17)
    export_with_output(net, x, out, "timm_static_net", 17, fixed_batch=1)


def tile_net(out):
    """x.repeat(...) (ONNX Tile) as timm's models write it: XCiT's position features, a
    convolution over a grid computed from the image's size (Range, then Tile over shape values),
    repeated for each sample (a Tile over a batch axis of 1); GCViT's global query, one per
    sample, repeated for each window of the batch (a Tile over the batch axis: window w of
    sample i reads copy (i * windows + w) // batch, as timm lays the copies out) and over the
    tokens; a weight repeated along its channels; tests/data/onnx/tile_net.onnx (a dynamic
    batch) and tile_static_net.onnx (exported at a fixed batch of 1, its output PyTorch's at a
    batch of 2), each with PyTorch's float32 output."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1)
            self.pos = nn.Conv2d(4, 8, 1)
            self.q = nn.Linear(8, 8)
            self.kv = nn.Linear(8, 16)
            self.gain = nn.Parameter(torch.rand(1, 4) + 0.5)
            self.head = nn.Linear(16, 5)

        def forward(self, x):
            x = self.stem(x)
            b, c, h, w = x.shape
            ys = torch.arange(1, h + 1, dtype=torch.float32).view(1, 1, h, 1).repeat(1, 1, 1, w)
            xs = torch.arange(1, w + 1, dtype=torch.float32).view(1, 1, 1, w).repeat(1, 1, h, 1)
            grid = torch.cat([ys / h, xs / w, (ys * 3.0 / h).sin(), (xs * 3.0 / w).cos()], dim=1)
            x = x + self.pos(grid).repeat(b, 1, 1, 1)
            # 2 x 2 windows of 2 x 2 pixels: (B * 4, 4, C)
            t = x.permute(0, 2, 3, 1).reshape(b, h // 2, 2, w // 2, 2, c)
            t = t.permute(0, 1, 3, 2, 4, 5).reshape(-1, 4, c)
            g = self.q(x.mean((2, 3)).view(b, 1, c))
            q = g.repeat(t.shape[0] // b, 4, 1)
            k, v = self.kv(t).chunk(2, dim=-1)
            a = ((q @ k.transpose(1, 2)) * c ** -0.5).softmax(-1) @ v
            a = a.reshape(b, -1, c).mean(1)
            return self.head(torch.cat([a, self.gain.repeat(1, 2) * a], dim=1))

    torch.manual_seed(23)
    net = Net().eval()
    x = torch.rand(2, 3, 8, 8) * 4 - 2
    export_with_output(net, x, out, "tile_net", 17)
    export_with_output(net, x, out, "tile_static_net", 17, fixed_batch=1)


def conv3d_net(out):
    """nn.Conv3d whose window is 1 wide along one axis: LambdaNetworks' position lambdas, a
    (3, 3, 1) window over (N, 1, D, H, W) padded along the first two; a grouped (1, 3, 3)
    window with a stride; a (2, 1, 3) window dilated along the last axis;
    tests/data/onnx/conv3d_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 4, 3, padding=1)
            self.last = nn.Conv3d(1, 2, (3, 3, 1), padding=(1, 1, 0))
            self.first = nn.Conv3d(2, 4, (1, 3, 3), stride=(1, 2, 1), padding=(0, 1, 1), groups=2)
            self.middle = nn.Conv3d(4, 3, (2, 1, 3), dilation=(1, 1, 2), bias=False)
            self.head = nn.Linear(3, 5)

        def forward(self, x):
            x = self.stem(x)
            b, c, h, w = x.shape
            v = self.last(x.reshape(b, 1, c, h, w)).relu()
            v = self.middle(self.first(v).relu())
            return self.head(v.mean((2, 3, 4)))

    torch.manual_seed(24)
    net = Net().eval()
    x = torch.rand(2, 3, 6, 7) * 4 - 2
    export_with_output(net, x, out, "conv3d_net", 17)


def bicubic_net(out):
    """Bicubic resizing as PyTorch exports it (Resize in cubic mode, Keys' coefficient -0.75):
    CrossViT's input scaled down to its second branch's size, an upscale by 1.5 and one to a
    size with align_corners; and CrossViT's head, torch.stack(xs, dim=0) of two branches'
    logits averaged over the new axis 0 (Unsqueeze, Concat along it, ReduceMean over it);
    tests/data/onnx/bicubic_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Conv2d(3, 4, 3, padding=1)
            self.b = nn.Conv2d(3, 4, 3, padding=1)
            self.head_a = nn.Linear(4, 5)
            self.head_b = nn.Linear(8, 5)

        def forward(self, x):
            a = self.a(x)
            b = self.b(F.interpolate(x, size=(7, 7), mode="bicubic", align_corners=False))
            up = F.interpolate(b, scale_factor=1.5, mode="bicubic")
            c = F.interpolate(b, size=(9, 12), mode="bicubic", align_corners=True)
            ya = self.head_a(a.mean((2, 3)))
            yb = self.head_b(torch.cat([up.mean((2, 3)), c.amax((2, 3))], dim=1))
            return torch.mean(torch.stack([ya, yb], dim=0), dim=0)

    torch.manual_seed(25)
    net = Net().eval()
    x = torch.rand(2, 3, 9, 9) * 4 - 2
    export_with_output(net, x, out, "bicubic_net", 17)


def where_net(out):
    """Comparisons and selection over activations: torch.where(y > 0, y, 0.1 * y) (Greater,
    Where), attention scores filled with -inf by a causal mask computed from shapes (Range,
    Greater of integers, Where with a constant condition), a mask compared from activations
    with Not and And (t < 0.5 and not t < -0.5) choosing between two activations, a constant
    chosen where a >= t (GreaterOrEqual), and ReLU's zeros found by Equal, cast to float;
    tests/data/onnx/where_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 6, 3, padding=1)
            self.q = nn.Linear(6, 8)
            self.k = nn.Linear(6, 8)
            self.fc = nn.Linear(18, 5)

        def forward(self, x):
            y = self.conv(x)
            y = torch.where(y > 0, y, 0.1 * y)
            t = y.flatten(2).transpose(1, 2)  # (N, L, 6)
            i = torch.arange(t.shape[1])
            s = self.q(t) @ self.k(t).transpose(1, 2)
            s = s.masked_fill(i[None, :] > i[:, None], float("-inf"))
            a = s.softmax(-1) @ t
            m = (t < 0.5) & ~(t < -0.5)
            b = torch.where(m, a, t)
            c = a.masked_fill(a >= t, 1.5)
            z = (torch.relu(y) == 0).float() * y
            return self.fc(torch.cat([b.mean(1), c.mean(1), z.mean((2, 3))], 1))

    torch.manual_seed(28)
    net = Net().eval()
    x = torch.rand(2, 3, 4, 5) * 2 - 1
    export_with_output(net, x, out, "where_net", 13)


def anchor_net(out):
    """A detection head's box decoding as ultralytics' YOLO heads write it: anchor points
    computed from the feature map's shape (arange, meshgrid, stack: shape arithmetic), box
    corners as the anchor points minus and plus predicted distances (Sub and Add whose first
    operand is computed from shapes), scaled by the stride, beside class scores; and the
    boxes scaled by each element of a constant tensor in turn (iterating it: a Split of a
    Constant, as YOLO iterates its strides); tests/data/onnx/anchor_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
            self.box = nn.Conv2d(8, 4, 1)
            self.cls = nn.Conv2d(8, 3, 1)
            self.scales = torch.tensor([1.5, -0.25])  # neither a parameter nor a buffer

        def forward(self, x):
            f = torch.relu(self.conv(x))
            h, w = f.shape[2], f.shape[3]
            sx = torch.arange(w, dtype=torch.float32) + 0.5
            sy = torch.arange(h, dtype=torch.float32) + 0.5
            gy, gx = torch.meshgrid(sy, sx, indexing="ij")
            anchors = torch.stack((gx, gy), -1).view(-1, 2).transpose(0, 1)  # (2, h * w)
            lt, rb = self.box(f).flatten(2).chunk(2, 1)  # (N, 2, h * w) each
            x1y1, x2y2 = anchors - lt, anchors + rb
            boxes = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * 2.0
            scales = [s * boxes for s in self.scales]  # a constant tensor iterated: Split
            return torch.cat([(scales[0] - scales[1]).flatten(1),
                              self.cls(f).sigmoid().flatten(1)], 1)

    torch.manual_seed(29)
    net = Net().eval()
    x = torch.rand(2, 3, 6, 8) * 2 - 1
    export_with_output(net, x, out, "anchor_net", 13)


def scatter_net(out):
    """Assignments into slices of activations, as PyTorch exports them (ScatterND over
    activations, the indices computed from shapes): YOLOv8-pose's y[:, 2::3] =
    y[:, 2::3].sigmoid() on (N, C, L), a row overwritten by another activation (y[:, 1] = z),
    and a column set to a constant (y[:, :, 0] = 0.5); tests/data/onnx/scatter_net.onnx with
    PyTorch's float32 output."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 9, 3, padding=1)
            self.fc = nn.Linear(9, 5)

        def forward(self, x):
            f = self.conv(x)
            y = f.flatten(2)  # (N, 9, L)
            y[:, 2::3] = y[:, 2::3].sigmoid()
            y[:, 1] = torch.tanh(y[:, 4] * 2)
            y[:, :, 0] = 0.5
            return self.fc((y * y).mean(2))

    torch.manual_seed(30)
    net = Net().eval()
    x = torch.rand(2, 3, 4, 5) * 2 - 1
    export_with_output(net, x, out, "scatter_net", 13)


def pool1d_net(out):
    """nn.AdaptiveAvgPool1d(1) over tokens (N, C, L), as Hugging Face's Swin pools them
    (GlobalAveragePool of a rank-3 value);
    tests/data/onnx/pool1d_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 6, 3, padding=1)
            self.pool = nn.AdaptiveAvgPool1d(1)
            self.fc = nn.Linear(6, 5)

        def forward(self, x):
            t = torch.relu(self.conv(x)).flatten(2)  # (N, 6, L)
            return self.fc(self.pool(t).flatten(1))

    torch.manual_seed(32)
    net = Net().eval()
    x = torch.rand(2, 3, 4, 5) * 2 - 1
    export_with_output(net, x, out, "pool1d_net", 14)


def empty_concat_net(out):
    """A placeholder feature of no channels joined with activations, as
    segmentation_models_pytorch's MixVisionTransformer encoder writes one (torch.empty(N, 0, h,
    w), a ConstantOfShape computed from shapes, then torch.cat along the channels); and zeros
    computed from shapes joined as channels (torch.zeros(N, 2, h, w));
    tests/data/onnx/empty_concat_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.fc = nn.Linear(6, 5)

        def forward(self, x):
            f = torch.relu(self.conv(x))
            n, _, h, w = f.shape
            empty = torch.empty(n, 0, h, w)
            zeros = torch.zeros(n, 2, h, w)
            return self.fc(torch.cat([empty, f, zeros], 1).mean((2, 3)))

    torch.manual_seed(33)
    net = Net().eval()
    x = torch.rand(2, 3, 4, 5) * 2 - 1
    export_with_output(net, x, out, "empty_concat_net", 13)


def recurrent_net(out, name, seed):
    """nn.LSTM ("lstm"), nn.GRU ("gru") or nn.RNN ("rnn") as PyTorch exports it (ONNX LSTM, GRU
    with linear_before_reset, or RNN: tanh along the rows, ReLU in the deep one; unrolled by the
    importer): Sequencer's bidirectional layer along each
    row of a feature map (batch_first, a Transpose around it, the state starting at zero), and
    a two-layer sequence-first one without biases whose initial hidden state is computed from
    the image (a Linear, permuted to (layers, N, H)), its last layer's final h (and c) read
    (Gather of Y_h, Y_c); tests/data/onnx/<name>_net.onnx with PyTorch's float32 output, and
    <name>_unfolded_net.onnx exported without constant folding, as training-mode exports are:
    W, R and B assembled in the graph from PyTorch's parameters (Slice of each gate's rows,
    Concat in ONNX's gate order, Unsqueeze and Concat of the directions)."""

    import torch
    from torch import nn

    lstm = name == "lstm"
    cell = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[name]
    relu = {"nonlinearity": "relu"} if name == "rnn" else {}  # the deep RNN's, the rows' tanh

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 4, 3, stride=2, padding=1)
            self.rows = cell(4, 3, batch_first=True, bidirectional=True)
            self.deep = cell(6, 5, num_layers=2, bias=False, **relu)
            self.init = nn.Linear(4, 10)
            self.head = nn.Linear(11, 5)

        def forward(self, x):
            x = self.stem(x)
            b, c, h, w = x.shape
            y, _ = self.rows(x.permute(0, 2, 3, 1).reshape(b * h, w, c))
            seq = y.reshape(b, h, w, 6).mean(2).permute(1, 0, 2)
            h0 = torch.tanh(self.init(x.mean((2, 3)))).view(b, 2, 5).permute(1, 0, 2).contiguous()
            if lstm:
                _, (hn, cn) = self.deep(seq, (h0, torch.zeros_like(h0)))
                last = hn[-1] + cn[-1]
            else:
                _, hn = self.deep(seq, h0)
                last = hn[-1]
            return self.head(torch.cat([last, y.reshape(b, h * w, 6).mean(1)], dim=1))

    torch.manual_seed(seed)
    net = Net().eval()
    x = torch.rand(2, 3, 8, 10) * 4 - 2
    export_with_output(net, x, out, f"{name}_net", 17)
    export_with_output(net, x, out, f"{name}_unfolded_net", 17, fold=False)


def vit_net(out):
    """torchvision's VisionTransformer, tiny (16 x 16 images in 4 x 4 patches, 2 layers of 2
    heads, 16 wide): nn.MultiheadAttention's export moves the batch axis (tokens (L, N, E) to
    (L*N, E), heads to (N*heads, L, E/heads)) and back; tests/data/onnx/vit_net.onnx with
    PyTorch's float32 output."""

    import torch
    from torchvision.models import VisionTransformer

    torch.manual_seed(16)
    net = VisionTransformer(image_size=16, patch_size=4, num_layers=2, num_heads=2,
                            hidden_dim=16, mlp_dim=32, num_classes=5).eval()
    with torch.no_grad():  # torchvision starts the head and the class token at zero
        net.heads.head.weight.normal_(0, 0.3)
        net.class_token.normal_(0, 0.5)
    x = torch.rand(2, 3, 16, 16) * 2 - 1
    export_with_output(net, x, out, "vit_net", 15)


def swin_net(out):
    """torchvision's SwinTransformer, tiny (10 x 10 images in 2 x 2 patches, windows of 3, two
    stages of 2 blocks, 8 and 16 wide): feature maps padded to whole windows, the cyclic shift
    (Slice and Concat), the shifted windows' attention mask computed from shapes (ConstantOfShape,
    ScatterND, Equal, Where: constants frugal evaluates while recording), the relative position
    bias gathered from a learned table, q, k and v taken along an axis a transpose put first;
    tests/data/onnx/swin_net.onnx with PyTorch's float32 output."""

    import torch
    from torchvision.models import SwinTransformer

    torch.manual_seed(17)
    net = SwinTransformer(patch_size=[2, 2], embed_dim=8, depths=[2, 2], num_heads=[2, 2],
                          window_size=[3, 3], stochastic_depth_prob=0.0, num_classes=5).eval()
    with torch.no_grad():  # torchvision starts the bias tables near zero (std 0.02)
        for name, p in net.named_parameters():
            if "relative_position_bias_table" in name:
                p.normal_(0, 0.5)
    x = torch.rand(2, 3, 10, 10) * 2 - 1
    # Unfolded, as a training-mode export: the tables stay weights, gathered in the graph
    # (folded, the export writes each block's bias as a constant it computed).
    export_with_output(net, x, out, "swin_net", 17, fold=False)


def einsum_net(out):
    """torch.einsum's batched products (Einsum, opset 13): q k^T as "bhid,bhjd->bhij" (the
    second operand's last two axes swapped), its softmax times v as "bhij,bhjd->bhid", and
    "bhdi,bhdj->bhij" (the first operand's swapped), over (N, 3, 4, 6) inputs;
    tests/data/onnx/einsum_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(3, 5)

        def forward(self, x):
            k = x * 0.5 + 0.25
            s = torch.einsum("bhid,bhjd->bhij", x, k)
            t = torch.einsum("bhij,bhjd->bhid", s.softmax(-1), x)
            u = torch.einsum("bhdi,bhdj->bhij", x, k)
            return self.head(t.mean((2, 3)) + u.mean((2, 3)))

    torch.manual_seed(19)
    net = Net().eval()
    x = torch.rand(2, 3, 4, 6) * 2 - 1
    export_with_output(net, x, out, "einsum_net", 13)


def instance_norm_net(out):
    """Instance and group normalization as PyTorch exports them: InstanceNorm2d with an affine
    scale and bias (InstanceNormalization reading the weights), GroupNorm (a Reshape to (N,
    groups, -1), InstanceNormalization with a fixed scale of ones and bias of zeros, a Reshape
    back, the weight and bias as Mul and Add), SiLU, and an InstanceNorm2d without affine, into
    a head; tests/data/onnx/instance_norm_net.onnx with PyTorch's float32 output, and
    instance_norm_unfolded_net.onnx exported without folding constants (GroupNorm's weights
    reach its Mul and Add through Unsqueeze, as in a training-mode export)."""

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
            self.inorm = nn.InstanceNorm2d(8, affine=True)
            self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
            self.gnorm = nn.GroupNorm(4, 8)
            self.plain = nn.InstanceNorm2d(8)
            self.fc = nn.Linear(8, 5)
            with torch.no_grad():  # weights away from the ones and zeros they start at
                for m in (self.inorm, self.gnorm):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.5, 0.5)

        def forward(self, x):
            x = F.relu(self.inorm(self.conv1(x)))
            x = F.silu(self.gnorm(self.conv2(x)))
            x = x + 0.5 * self.plain(x)
            return self.fc(x.mean((2, 3)))

    torch.manual_seed(12)
    net = Net().eval()
    x = torch.rand(2, 3, 6, 5) * 2 - 1
    export_with_output(net, x, out, "instance_norm_net", 13)
    export_with_output(net, x, out, "instance_norm_unfolded_net", 13, fold=False)


def group_norm_lookalike_net(out):
    """GroupNorm beside a look-alike: nn.GroupNorm(2, 8) (one group_norm op in frugal), then
    the same five nodes over a reshape that is no grouping of the channels (x viewed as (N, C*H,
    W), each row normalized over W, back to (N, C, H, W), times a per-channel weight plus a
    bias), which frugal must record node by node; tests/data/onnx/group_norm_lookalike_net.onnx
    with PyTorch's float32 output."""

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.gnorm = nn.GroupNorm(2, 8)
            self.w = nn.Parameter(torch.rand(8, 1, 1) + 0.5)
            self.b = nn.Parameter(torch.rand(8, 1, 1) - 0.5)
            self.fc = nn.Linear(8, 5)
            with torch.no_grad():
                self.gnorm.weight.uniform_(0.5, 1.5)
                self.gnorm.bias.uniform_(-0.5, 0.5)

        def forward(self, x):
            x = F.relu(self.gnorm(self.conv(x)))
            rows = F.instance_norm(x.reshape(2, 8 * 6, 5)).reshape(2, 8, 6, 5)
            x = torch.tanh(rows * self.w + self.b)
            return self.fc(x.mean((2, 3)))

    torch.manual_seed(13)
    net = Net().eval()
    x = torch.rand(2, 3, 6, 5) * 2 - 1
    # A fixed batch: PyTorch exports instance_norm only where the rows' count is known.
    export_with_output(net, x, out, "group_norm_lookalike_net", 13, dynamic=False)


def prelu_net(out):
    """PReLU as PyTorch exports it: nn.PReLU(8) after a convolution (a (8, 1, 1) slope),
    nn.PReLU() with one slope for every channel, and nn.PReLU(5) on a linear layer's (N, 5)
    output (a (5,) slope), slopes drawn on both sides of zero; tests/data/onnx/prelu_net.onnx
    with PyTorch's float32 output, and prelu_unfolded_net.onnx exported without folding
    constants (the slopes reach PRelu through Unsqueeze, as in a training-mode export)."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
            self.act1 = nn.PReLU(8)
            self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
            self.act2 = nn.PReLU()
            self.fc = nn.Linear(8, 5)
            self.act3 = nn.PReLU(5)
            with torch.no_grad():
                for m in (self.act1, self.act2, self.act3):
                    m.weight.uniform_(-0.5, 0.5)

        def forward(self, x):
            x = self.act2(self.conv2(self.act1(self.conv1(x))))
            return self.act3(self.fc(x.mean((2, 3))))

    torch.manual_seed(14)
    net = Net().eval()
    x = torch.rand(2, 3, 6, 5) * 2 - 1
    export_with_output(net, x, out, "prelu_net", 13)
    export_with_output(net, x, out, "prelu_unfolded_net", 13, fold=False)


def activation_net(out):
    """The other activations as PyTorch exports them: ELU, SELU, Mish (Softplus, Tanh, Mul),
    softsign (Abs, Add, Div), softplus, and torch.exp, neg, log and reciprocal, into a head;
    tests/data/onnx/activation_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 6, 3, padding=1)
            self.conv2 = nn.Conv2d(6, 6, 3, padding=1)
            self.fc = nn.Linear(6, 5)

        def forward(self, x):
            x = F.selu(self.conv2(F.elu(self.conv1(x))))
            x = F.softsign(F.mish(x)) + F.softplus(x)
            y = torch.log(torch.exp(torch.neg(x)) + 1)
            z = torch.reciprocal(1 + x * x)
            return self.fc((y + z).mean((2, 3)))

    torch.manual_seed(14)
    net = Net().eval()
    x = torch.rand(2, 3, 6, 5) * 4 - 2
    export_with_output(net, x, out, "activation_net", 13)


def elu_net(out):
    """nn.ELU and nn.CELU with alphas of their own (Elu with alphas 0.5 and 1.7, Celu with 2.0
    and with its default 1.0), after convolutions and on a head's features;
    tests/data/onnx/elu_net.onnx with PyTorch's float32 output."""

    from torch import nn

    def make_net():
        net = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.ELU(alpha=0.5),
                            nn.Conv2d(6, 6, 3, padding=1), nn.CELU(alpha=2.0),
                            nn.Conv2d(6, 4, 3, padding=1), nn.CELU(),
                            nn.Flatten(), nn.Linear(4 * 6 * 5, 8), nn.ELU(alpha=1.7),
                            nn.Linear(8, 5))
        for m in net.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.normal_(m.weight, std=0.4)
        return net

    export_seeded(make_net, 15, (2, 3, 6, 5), out, "elu_net")


def var_net(out):
    """torch.std and torch.var (unbiased and not, over a map's pixels, its channels and a
    sample's every element) as PyTorch exports them: the count of reduced elements a ReduceProd
    of sizes; AdaIN-like normalization of each channel by its std, a channel variance, into a
    head; tests/data/onnx/var_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 6, 3, padding=1)
            self.conv2 = nn.Conv2d(6, 6, 3, padding=1)
            self.fc = nn.Linear(6, 5)

        def forward(self, x):
            x = self.conv1(x)
            x = (x - x.mean((2, 3), keepdim=True)) / (x.std((2, 3), keepdim=True) + 1e-3)
            x = self.conv2(torch.relu(x))
            x = x / torch.sqrt(x.var(1, keepdim=True, unbiased=False) + 0.1)
            x = x * x.var((1, 2, 3), keepdim=True)
            return self.fc(x.mean((2, 3)))

    export_seeded(Net, 16, (2, 3, 6, 5), out, "var_net")


def trig_net(out):
    """torch.sin, cos, atan and sign of activations, and nn.LPPool2d (p = 2 and 3: its export's
    Sign, Abs, Relu around an AveragePool of powers) into a head; tests/data/onnx/trig_net.onnx
    with PyTorch's float32 output."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 6, 3, padding=1)
            self.conv2 = nn.Conv2d(6, 6, 3, padding=1)
            self.lp2 = nn.LPPool2d(2, 2)
            self.lp3 = nn.LPPool2d(3, 3, stride=1)
            self.fc = nn.Linear(12, 5)

        def forward(self, x):
            x = self.conv1(x)
            x = torch.sin(x) * torch.cos(2 * x) + torch.atan(x) * torch.sign(x)
            x = torch.relu(self.conv2(x)) + 0.1
            a, b = self.lp2(x), self.lp3(x)
            return self.fc(torch.cat([a.mean((2, 3)), b.mean((2, 3))], 1))

    export_seeded(Net, 17, (2, 3, 6, 8), out, "trig_net")


def nearest_net(out):
    """F.interpolate in nearest mode to sizes that are no whole multiples (up and down) and by
    scales of 1.5 and 0.5 (Resize, asymmetric, floor), each into a head;
    tests/data/onnx/nearest_net.onnx with PyTorch's float32 output. ('nearest-exact' does not
    export from PyTorch 1.13.)"""

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.fc = nn.Linear(4 * 4, 5)

        def forward(self, x):
            x = self.conv(x)
            a = F.interpolate(x, size=(11, 13), mode="nearest")
            b = F.interpolate(x, size=(5, 3), mode="nearest")
            c = F.interpolate(x, scale_factor=1.5, mode="nearest")
            d = F.interpolate(x, scale_factor=0.5, mode="nearest")
            feats = [(t * t).mean((2, 3)) for t in (a, b, c, d)]
            return self.fc(torch.cat(feats, 1))

    export_seeded(Net, 18, (2, 3, 6, 8), out, "nearest_net")


def einsum2_net(out):
    """torch.einsum beyond batched products: a per-channel gate ('nchw,nc->nchw', a broadcast
    product), a 1x1 convolution by a weight ('nchw,kc->nkhw'), channel similarities over pixels
    ('nchw,nkhw->nck'), a sum over an operand's own axis ('nchw,nc->nh'), and one operand
    transposed and summed ('nchw->nwc'), into a head; tests/data/onnx/einsum2_net.onnx with
    PyTorch's float32 output."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.w = nn.Parameter(torch.randn(6, 4) * 0.5)
            self.fc = nn.Linear(4 + 6 * 4 + 6 + 5 * 4, 5)

        def forward(self, x):
            x = self.conv(x)
            g = torch.einsum("nchw,nc->nchw", x, torch.sigmoid(x.mean((2, 3))))
            k = torch.einsum("nchw,kc->nkhw", g, self.w)
            s = torch.einsum("nchw,nkhw->nck", g, k)
            h = torch.einsum("nchw,nc->nh", x, g.mean((2, 3)))
            t = torch.einsum("nchw->nwc", k)
            feats = [g.mean((2, 3)), s.flatten(1), h, t.mean(2)[:, :5].repeat(1, 4)]
            return self.fc(torch.cat(feats, 1))

    export_seeded(Net, 19, (2, 3, 6, 5), out, "einsum2_net")


def gem_net(out):
    """Generalized-mean pooling with a learned exponent (GeM, as image retrieval heads write
    it: x.clamp(min=eps).pow(p).mean().pow(1 / p), p an nn.Parameter: Pow by a weight, and 1 / p
    computed from it) and torch.pow of two activations, into a head;
    tests/data/onnx/gem_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.p = nn.Parameter(torch.ones(1) * 3)
            self.fc = nn.Linear(8, 5)

        def forward(self, x):
            x = self.conv(x)
            gem = x.clamp(min=1e-6).pow(self.p).mean((2, 3), keepdim=True).pow(1.0 / self.p)
            both = torch.pow(torch.sigmoid(x) + 0.5, torch.tanh(x)).mean((2, 3), keepdim=True)
            return self.fc(torch.cat([gem, both], 1).flatten(1))

    export_seeded(Net, 20, (2, 3, 6, 5), out, "gem_net")


def signal_net(out):
    """A 1-D network over (N, C, L) signals labelling each position (output (N, K, L)):
    Conv1d with dilation and stride, BatchNorm1d, MaxPool1d with ceil_mode, nearest and linear
    1-D upsampling (Resize with three scales), ConvTranspose1d with output_padding, an
    AdaptiveAvgPool1d(1) gate; tests/data/onnx/signal_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv1d(3, 8, 5, padding=2)
            self.bn = nn.BatchNorm1d(8)
            self.c2 = nn.Conv1d(8, 8, 3, stride=2, padding=2, dilation=2)
            self.up = nn.ConvTranspose1d(8, 6, 3, stride=2, padding=1, output_padding=1)
            self.head = nn.Conv1d(14, 5, 1)

        def forward(self, x):
            a = F.relu(self.bn(self.c1(x)))
            b = F.max_pool1d(F.relu(self.c2(a)), 3, stride=2, ceil_mode=True)
            u = self.up(F.interpolate(b, scale_factor=2.0, mode="nearest"))
            s = F.interpolate(F.avg_pool1d(a, 2), scale_factor=2.0, mode="linear",
                              align_corners=False)
            g = torch.sigmoid(F.adaptive_avg_pool1d(s, 1))
            return self.head(torch.cat([s * g, u], 1))

    export_seeded(Net, 21, (2, 3, 16), out, "signal_net")


def features_net(out):
    """A network over feature vectors (N, F), as for tabular data: Linear, BatchNorm1d, ReLU,
    Dropout, LayerNorm, GELU and a residual; tests/data/onnx/features_net.onnx with PyTorch's
    float32 output."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Sequential(nn.Linear(12, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.1))
            self.b = nn.Sequential(nn.LayerNorm(16), nn.Linear(16, 16), nn.GELU())
            self.head = nn.Linear(16, 4)

        def forward(self, x):
            h = self.a(x)
            return self.head(h + self.b(h))

    export_seeded(Net, 22, (2, 12), out, "features_net")


def video_net(out):
    """A network over volumes or clips (N, C, D, H, W) labelling each voxel (output
    (N, K, D, H, W)): R(2+1)D's factored Conv3d, (1, 3, 3) then (3, 1, 1), BatchNorm3d, a
    squeeze-and-excitation gate from AdaptiveAvgPool3d(1) (GlobalAveragePool of 5-D values),
    a 1x1x1 head; tests/data/onnx/video_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.spatial = nn.Conv3d(2, 6, (1, 3, 3), padding=(0, 1, 1))
            self.bn = nn.BatchNorm3d(6)
            self.temporal = nn.Conv3d(6, 6, (3, 1, 1), padding=(1, 0, 0))
            self.gate = nn.Conv3d(6, 6, 1)
            self.head = nn.Conv3d(6, 3, 1)

        def forward(self, x):
            x = F.relu(self.bn(self.spatial(x)))
            x = F.relu(self.temporal(x))
            x = x * torch.sigmoid(self.gate(F.adaptive_avg_pool3d(x, 1)))
            return self.head(x)

    export_seeded(Net, 23, (2, 2, 4, 5, 6), out, "video_net")


def conv3d_full_net(out):
    """Conv3d with windows 1 wide along no axis, as torchvision's r3d_18 writes them: 3x3x3
    padded, strided by 2 and grouped, dilated along depth with a bias, and a (1, 1, 1)
    downsampling with stride 2 along every axis; tests/data/onnx/conv3d_full_net.onnx with
    PyTorch's float32 output."""

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Conv3d(2, 4, 3, padding=1, bias=False)
            self.b = nn.Conv3d(4, 6, 3, stride=2, padding=1, groups=2)
            self.c = nn.Conv3d(6, 6, 3, padding=(2, 1, 1), dilation=(2, 1, 1))
            self.down = nn.Conv3d(4, 6, 1, stride=2, bias=False)
            self.fc = nn.Linear(6, 4)

        def forward(self, x):
            a = F.relu(self.a(x))
            y = self.c(F.relu(self.b(a))) + self.down(a)
            return self.fc(F.adaptive_avg_pool3d(F.relu(y), 1).flatten(1))

    export_seeded(Net, 24, (2, 2, 5, 6, 6), out, "conv3d_full_net")


def inputs_net(out):
    """A model of three inputs, as diffusion models and conditioned networks are: images x
    (N, 3, 8, 8), a timestep t (N) (a sinusoidal embedding through an MLP, added per channel)
    and a mask m (N, 1, 8, 8) through a convolution of its own, then GroupNorm, SiLU, a
    down- and up-sampling path and a per-pixel output (N, 4, 8, 8); tests/data/onnx/
    inputs_net.onnx with x, t, m and PyTorch's float32 output (inputs_net.io)."""
    import math
    import os
    import warnings

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv_in = nn.Conv2d(3, 8, 3, padding=1)
            self.cond = nn.Conv2d(1, 8, 3, padding=1)
            self.emb = nn.Sequential(nn.Linear(8, 16), nn.SiLU(), nn.Linear(16, 8))
            self.norm = nn.GroupNorm(4, 8)
            self.down = nn.Conv2d(8, 8, 3, stride=2, padding=1)
            self.up = nn.ConvTranspose2d(8, 8, 2, stride=2)
            self.out = nn.Conv2d(16, 4, 1)

        def forward(self, x, t, m):
            freqs = torch.exp(-math.log(100.0) * torch.arange(4, dtype=torch.float32) / 4)
            a = t[:, None] * freqs[None]
            e = self.emb(torch.cat([torch.sin(a), torch.cos(a)], dim=1))
            h = F.silu(self.norm(self.conv_in(x) + self.cond(m) + e[:, :, None, None]))
            u = self.up(F.silu(self.down(h)))
            return self.out(torch.cat([h, u], 1))

    torch.manual_seed(41)
    net = Net().eval()
    x = torch.rand(2, 3, 8, 8) * 2 - 1
    t = torch.rand(2) * 10
    m = (torch.rand(2, 1, 8, 8) > 0.5).float()
    with torch.no_grad():
        y = net(x, t, m)
    path = f"{out}/inputs_net.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (x, t, m), path + ".tmp", opset_version=17,
                          input_names=["x", "t", "m"], output_names=["y"],
                          dynamic_axes={"x": {0: "N"}, "t": {0: "N"}, "m": {0: "N"},
                                        "y": {0: "N"}})
    os.replace(path + ".tmp", path)
    with open(f"{out}/inputs_net.io", "wb") as f:
        for v in (x, t, m, y):
            f.write(v.numpy().astype("<f4").tobytes())
    print(f"{path}: inputs {tuple(x.shape)}, {tuple(t.shape)}, {tuple(m.shape)}, "
          f"output {tuple(y.shape)}")


def outputs_net(out):
    """A classifier of two outputs, as GoogLeNet and Inception v3 train with an auxiliary head:
    the main head after two convolutions, the auxiliary one (average pool, 1x1 convolution,
    linear) from the first; tests/data/onnx/outputs_net.onnx with x and PyTorch's float32
    outputs y, then aux (outputs_net.io)."""
    import os
    import warnings

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
            self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
            self.fc = nn.Linear(8, 5)
            self.aux_conv = nn.Conv2d(8, 4, 1)
            self.aux_fc = nn.Linear(4 * 2 * 2, 5)

        def forward(self, x):
            a = F.relu(self.conv1(x))
            y = self.fc(F.relu(self.conv2(a)).mean((2, 3)))
            aux = self.aux_fc(torch.flatten(F.relu(self.aux_conv(F.adaptive_avg_pool2d(a, 2))), 1))
            return y, aux

    torch.manual_seed(43)
    net = Net().eval()
    x = torch.rand(2, 3, 8, 8) * 2 - 1
    with torch.no_grad():
        y, aux = net(x)
    path = f"{out}/outputs_net.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, x, path + ".tmp", opset_version=17, input_names=["x"],
                          output_names=["y", "aux"],
                          dynamic_axes={"x": {0: "N"}, "y": {0: "N"}, "aux": {0: "N"}})
    os.replace(path + ".tmp", path)
    with open(f"{out}/outputs_net.io", "wb") as f:
        for v in (x, y, aux):
            f.write(v.numpy().astype("<f4").tobytes())
    print(f"{path}: input {tuple(x.shape)}, outputs {tuple(y.shape)}, {tuple(aux.shape)}")


def int_input_net(out):
    """A model whose second input is an int64 timestep (N), as diffusers' U-Nets take theirs:
    read through a Cast to float, a sinusoidal embedding and a linear layer, added per channel
    to a convolution's output; tests/data/onnx/int_input_net.onnx with x, t (as float32) and
    PyTorch's float32 output (int_input_net.io)."""
    import os
    import warnings

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.emb = nn.Linear(4, 4)
            self.fc = nn.Linear(4, 3)

        def forward(self, x, t):
            a = t.float()[:, None] * torch.tensor([0.003, 0.01, 0.03, 0.1])
            e = self.emb(torch.cat([torch.sin(a[:, :2]), torch.cos(a[:, 2:])], 1))
            return self.fc(F.silu(self.conv(x) + e[:, :, None, None]).mean((2, 3)))

    torch.manual_seed(53)
    net = Net().eval()
    x = torch.rand(2, 3, 6, 6) * 2 - 1
    t = torch.tensor([17, 503])
    with torch.no_grad():
        y = net(x, t)
    path = f"{out}/int_input_net.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (x, t), path + ".tmp", opset_version=17, input_names=["x", "t"],
                          output_names=["y"],
                          dynamic_axes={"x": {0: "N"}, "t": {0: "N"}, "y": {0: "N"}})
    os.replace(path + ".tmp", path)
    with open(f"{out}/int_input_net.io", "wb") as f:
        for v in (x, t.float(), y):
            f.write(v.numpy().astype("<f4").tobytes())
    print(f"{path}: inputs {tuple(x.shape)}, {tuple(t.shape)} int64, output {tuple(y.shape)}")


def embedding_net(out):
    """A class-conditional model: its second input an int64 class label (N), read by an
    nn.Embedding (a Gather of the table at the labels) and added per channel to a
    convolution's output, as class-conditional generators and diffusion models take theirs;
    tests/data/onnx/embedding_net.onnx with x, the labels (as float32) and PyTorch's float32
    output (embedding_net.io)."""
    import os
    import warnings

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.classes = nn.Embedding(7, 4)
            self.fc = nn.Linear(4, 3)

        def forward(self, x, label):
            e = self.classes(label)[:, :, None, None]
            return self.fc(F.silu(self.conv(x) + e).mean((2, 3)))

    torch.manual_seed(59)
    net = Net().eval()
    x = torch.rand(3, 3, 6, 6) * 2 - 1
    label = torch.tensor([6, 0, 6])
    with torch.no_grad():
        y = net(x, label)
    path = f"{out}/embedding_net.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (x, label), path + ".tmp", opset_version=17,
                          input_names=["x", "label"], output_names=["y"],
                          dynamic_axes={"x": {0: "N"}, "label": {0: "N"}, "y": {0: "N"}})
    os.replace(path + ".tmp", path)
    with open(f"{out}/embedding_net.io", "wb") as f:
        for v in (x, label.float(), y):
            f.write(v.numpy().astype("<f4").tobytes())
    print(f"{path}: inputs {tuple(x.shape)}, {tuple(label.shape)} int64, output {tuple(y.shape)}")


def unet3d_net(out):
    """A 3-D U-Net over volumes (N, C, D, H, W) labelling each voxel: Conv3d 3x3x3 with
    BatchNorm3d and SiLU (smooth: no ReLU zeros tied in the max pools for the gradcheck), MaxPool3d(2) and one padded with ceil_mode, ConvTranspose3d by 2 (the
    up-convolution) and a grouped one with padding and output_padding, AvgPool3d, trilinear
    resizing by a scale and to a size with align_corners, nearest resizing by 2;
    tests/data/onnx/unet3d_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.e1 = nn.Sequential(nn.Conv3d(1, 4, 3, padding=1), nn.BatchNorm3d(4), nn.SiLU())
            self.e2 = nn.Sequential(nn.Conv3d(4, 8, 3, padding=1), nn.BatchNorm3d(8), nn.SiLU())
            self.up = nn.ConvTranspose3d(8, 4, 2, stride=2)
            self.up2 = nn.ConvTranspose3d(8, 4, 3, stride=2, padding=1, output_padding=1,
                                          groups=2)
            self.d1 = nn.Sequential(nn.Conv3d(12, 4, 3, padding=1), nn.SiLU())
            self.head = nn.Conv3d(4, 3, 1)

        def forward(self, x):
            a = self.e1(x)
            b = self.e2(F.max_pool3d(a, 2))
            c = F.max_pool3d(b, 3, stride=2, padding=1, ceil_mode=True)
            d = self.d1(torch.cat([a, self.up(b), self.up2(F.interpolate(c, size=b.shape[2:],
                                                                         mode="nearest"))], 1))
            d = d + F.interpolate(F.avg_pool3d(d, 2), scale_factor=2.0, mode="trilinear",
                                  align_corners=False)
            s = F.interpolate(F.max_pool3d(d, 2), size=(3, 5, 7), mode="trilinear",
                              align_corners=True)
            d = d + F.interpolate(s, size=d.shape[2:], mode="nearest")
            return self.head(d)

    export_seeded(Net, 25, (2, 1, 4, 8, 8), out, "unet3d_net")


def pixel_net(out):
    """nn.PixelShuffle (DepthToSpace, CRD mode) and nn.PixelUnshuffle as PyTorch exports them,
    CBAM's channel attention (nn.AdaptiveMaxPool2d(1): GlobalMaxPool, beside the average),
    log_softmax over the channels of a map and over its last axis, and a log_softmax head;
    tests/data/onnx/pixel_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 12, 3, padding=1)
            self.shuffle = nn.PixelShuffle(2)
            self.conv2 = nn.Conv2d(3, 4, 3, padding=1)
            self.unshuffle = nn.PixelUnshuffle(2)
            self.conv3 = nn.Conv2d(16, 8, 1)
            self.gate = nn.Sequential(nn.Conv2d(8, 4, 1), nn.ReLU(), nn.Conv2d(4, 8, 1))
            self.fc = nn.Linear(8, 5)

        def forward(self, x):
            x = self.conv2(self.shuffle(self.conv1(x)))
            x = self.conv3(self.unshuffle(torch.tanh(x)))
            a = F.adaptive_avg_pool2d(x, 1)
            m = F.adaptive_max_pool2d(x, 1)
            x = x * torch.sigmoid(self.gate(a) + self.gate(m))
            x = x * torch.exp(F.log_softmax(x, dim=1)) + F.log_softmax(x, dim=-1)
            return F.log_softmax(self.fc(x.mean((2, 3))), dim=1)

    torch.manual_seed(15)
    net = Net().eval()
    x = torch.rand(2, 3, 6, 4) * 2 - 1
    export_with_output(net, x, out, "pixel_net", 13)


def minmax_net(out):
    """torch.maximum and torch.minimum (Max, Min) of two activations, of an activation and a
    per-channel weight, of a map and its broadcast mean, and torch.clamp between two tensors
    (a Max, then a Min); tests/data/onnx/minmax_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
            self.conv2 = nn.Conv2d(3, 4, 3, padding=1)
            self.floor = nn.Parameter(torch.rand(4, 1, 1) - 0.5)
            self.fc = nn.Linear(4, 5)

        def forward(self, x):
            a, b = self.conv1(x), self.conv2(x)
            y = torch.maximum(a, b) + torch.minimum(a, self.floor)
            y = y + torch.max(a, b.mean((2, 3), keepdim=True))
            y = torch.clamp(y, min=self.floor, max=self.floor + 1)
            return self.fc(y.mean((2, 3)))

    torch.manual_seed(17)
    net = Net().eval()
    x = torch.rand(2, 3, 5, 6) * 2 - 1
    export_with_output(net, x, out, "minmax_net", 13)


def lrn_module(first, second, pool):
    """A convolution, ReLU, nn.LocalResponseNorm `first`, a convolution (then a 2x2 max pool
    where `pool`), `second`, a mean and a linear head: lrn_net's and lrn_torch_net's network,
    built after the caller seeds PyTorch."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
            self.lrn1 = first
            self.conv2 = nn.Conv2d(8, 6, 3, padding=1)
            self.lrn2 = second
            self.fc = nn.Linear(6, 5)

        def forward(self, x):
            x = self.lrn1(torch.relu(self.conv1(x)))
            x = self.conv2(x)
            x = self.lrn2(nn.functional.max_pool2d(x, 2) if pool else x)
            return self.fc(x.mean((2, 3)))

    return Net().eval()


def write_handmade(out, name, nodes, inits, x, y):
    """A graph written with onnx.helper (opset 13, input x (N, ...), output y (N, ...)) saved as
    {out}/{name}.onnx, with x and the reference output y as {out}/{name}.io."""

    import os

    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", *x.shape[1:]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", *y.shape[1:]])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="frugal scripts/onnx_fixtures.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    path = f"{out}/{name}.onnx"
    onnx.save(m, path + ".tmp")
    os.replace(path + ".tmp", path)
    with open(f"{out}/{name}.io", "wb") as f:
        f.write(x.numpy().astype("<f4").tobytes())
        f.write(y.numpy().astype("<f4").tobytes())
    print(f"{path}: torch.float32, input {tuple(x.shape)}, output {tuple(y.shape)}")


def lrn_net(out):
    """LRN nodes as ONNX's model zoo has them (AlexNet, GoogLeNet, CaffeNet converted from
    Caffe: size 5 after a ReLU, and size 3 with a bias of 2 and a larger alpha after a max
    pool), odd sizes, where PyTorch's nn.LocalResponseNorm window and ONNX's agree. PyTorch
    1.13 exports nn.LocalResponseNorm as the ops of F.local_response_norm (a 3-D average pool
    and an If), not as LRN, so the graph is written here with onnx.helper around the weights of
    a PyTorch module, whose eager output is the reference; tests/data/onnx/lrn_net.onnx."""

    import torch
    from onnx import helper, numpy_helper
    from torch import nn

    torch.manual_seed(16)
    net = lrn_module(nn.LocalResponseNorm(5, alpha=0.05, beta=0.75, k=1.0),
                     nn.LocalResponseNorm(3, alpha=0.3, beta=0.5, k=2.0), pool=True)
    x = torch.rand(2, 3, 6, 8) * 4 - 2
    with torch.no_grad():
        y = net(x)
    inits = [numpy_helper.from_array(p.detach().numpy(), name)
             for name, p in net.named_parameters()]
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "conv1.weight", "conv1.bias"], ["c1"], name="conv1",
             kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        node("Relu", ["c1"], ["r1"], name="relu1"),
        node("LRN", ["r1"], ["l1"], name="lrn1", size=5, alpha=0.05, beta=0.75, bias=1.0),
        node("Conv", ["l1", "conv2.weight", "conv2.bias"], ["c2"], name="conv2",
             kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        node("MaxPool", ["c2"], ["p2"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        node("LRN", ["p2"], ["l2"], name="lrn2", size=3, alpha=0.3, beta=0.5, bias=2.0),
        node("ReduceMean", ["l2"], ["m"], name="mean", axes=[2, 3], keepdims=0),
        node("Gemm", ["m", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1),
    ]
    write_handmade(out, "lrn_net", nodes, inits, x, y)


def lrn_torch_net(out):
    """nn.LocalResponseNorm as PyTorch 1.13 exports it (F.local_response_norm's ops: x*x on a
    5-D view, a Pad by computed pads, a (size, 1, 1) AveragePool and an If around a squeeze),
    sizes 3 and 4 (even: PyTorch's window starts one channel earlier than ONNX's LRN);
    tests/data/onnx/lrn_torch_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn

    torch.manual_seed(17)
    net = lrn_module(nn.LocalResponseNorm(3, alpha=0.2, beta=0.75, k=1.0),
                     nn.LocalResponseNorm(4, alpha=0.3, beta=0.5, k=2.0), pool=False)
    x = torch.rand(2, 3, 5, 6) * 4 - 2
    export_with_output(net, x, out, "lrn_torch_net", 13)


def pool_window_net(out):
    """Pools beyond square 2-D windows: MaxPool2d (3, 2) with strides (2, 1) and padding (1, 0),
    AvgPool2d (2, 3) with padding (0, 1) not counted, MaxPool1d and AvgPool1d over (N, C, L), and
    3-D pools over a 5-D view whose window is 1 wide along one axis (each of the three);
    tests/data/onnx/pool_window_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.fc = nn.Linear(3 * 8 + 12, 5)

        def forward(self, x):
            x = torch.tanh(self.conv(x))  # (N, 8, 8, 10)
            a = F.max_pool2d(x, (3, 2), stride=(2, 1), padding=(1, 0))  # (N, 8, 4, 9)
            a = F.avg_pool2d(a, (2, 3), stride=(1, 2), padding=(0, 1), count_include_pad=False)
            t = x.flatten(2)  # (N, 8, 80)
            t = F.avg_pool1d(F.max_pool1d(t, 3, stride=2, padding=1), 4)  # (N, 8, 10)
            v = x.reshape(x.shape[0], 2, 4, 8, 10)
            v = F.avg_pool3d(v, (1, 2, 2))  # the first axis 1 wide
            v = F.max_pool3d(v, (2, 2, 1), stride=(1, 2, 1))  # the last
            v = F.avg_pool3d(v, (3, 1, 2), stride=(1, 1, 2), ceil_mode=True)  # the middle
            feats = [a.mean((2, 3)), t.mean(2), t.amax(2), v.flatten(1)]
            return self.fc(torch.cat(feats, 1))

    torch.manual_seed(18)
    net = Net().eval()
    x = torch.rand(2, 3, 8, 10) * 2 - 1
    export_with_output(net, x, out, "pool_window_net", 13)


def pool_pad_net(out):
    """Pools PyTorch's exports never write: pads that differ at an axis's two ends (TensorFlow's
    SAME, the odd pad at the end, as tf2onnx writes it; other ways round), in MaxPool, in
    AveragePool with the padding counted and not, and in a 1-D MaxPool; a dilated MaxPool
    (MaxPool2d(dilation=2)). The graph is written here with onnx.helper around the weights of
    PyTorch modules; the reference pads explicitly (-inf for the max, zeros for the average,
    whose uncounted padding divides by a pooled map of ones) and pools in PyTorch;
    tests/data/onnx/pool_pad_net.onnx with its float32 output."""

    import torch
    from onnx import helper, numpy_helper
    from torch import nn
    from torch.nn import functional as F

    torch.manual_seed(19)
    conv, fc = nn.Conv2d(3, 6, 3, padding=1), nn.Linear(30, 5)
    x = torch.rand(2, 3, 9, 10) * 2 - 1

    def padded(v, pads, value=0.0):  # ONNX's (top, left, bottom, right)
        return F.pad(v, (pads[1], pads[3], pads[0], pads[2]), value=value)

    def average(v, k, s, pads, counted):
        total = F.avg_pool2d(padded(v, pads), k, s, divisor_override=1)
        if counted:
            return total / (k[0] * k[1])
        return total / F.avg_pool2d(padded(torch.ones_like(v), pads), k, s, divisor_override=1)

    with torch.no_grad():
        t = torch.tanh(conv(x))  # (N, 6, 9, 10)
        p1 = F.max_pool2d(padded(t, [0, 0, 1, 1], -float("inf")), 3, 2)  # (N, 6, 4, 5)
        p2 = F.max_pool2d(padded(t, [1, 1, 1, 1], -float("inf")), 3, 1, dilation=2)  # 7x8
        p3 = average(t, (3, 4), (1, 2), [0, 1, 1, 2], False)  # (N, 6, 8, 5)
        p4 = average(t, (2, 2), (2, 2), [1, 0, 0, 1], True)  # (N, 6, 5, 5)
        flat = t.reshape(2, 6, 90)
        p5 = F.max_pool1d(F.pad(flat, (1, 2), value=-float("inf")), 4, 3)  # (N, 6, 30)
        feats = [p.mean((2, 3)) for p in (p1, p2, p3, p4)] + [p5.mean(2)]
        y = fc(torch.cat(feats, 1))
    inits = [numpy_helper.from_array(conv.weight.detach().numpy(), "conv.weight"),
             numpy_helper.from_array(conv.bias.detach().numpy(), "conv.bias"),
             numpy_helper.from_array(fc.weight.detach().numpy(), "fc.weight"),
             numpy_helper.from_array(fc.bias.detach().numpy(), "fc.bias"),
             numpy_helper.from_array(torch.tensor([0, 6, -1]).numpy(), "flat_shape")]
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "conv.weight", "conv.bias"], ["c"], name="conv", kernel_shape=[3, 3],
             pads=[1, 1, 1, 1]),
        node("Tanh", ["c"], ["t"], name="tanh"),
        node("MaxPool", ["t"], ["p1"], name="same_max", kernel_shape=[3, 3], strides=[2, 2],
             pads=[0, 0, 1, 1]),
        node("MaxPool", ["t"], ["p2"], name="dilated_max", kernel_shape=[3, 3],
             dilations=[2, 2], pads=[1, 1, 1, 1]),
        node("AveragePool", ["t"], ["p3"], name="uncounted_avg", kernel_shape=[3, 4],
             strides=[1, 2], pads=[0, 1, 1, 2], count_include_pad=0),
        node("AveragePool", ["t"], ["p4"], name="counted_avg", kernel_shape=[2, 2],
             strides=[2, 2], pads=[1, 0, 0, 1], count_include_pad=1),
        node("Reshape", ["t", "flat_shape"], ["flat"], name="flatten"),
        node("MaxPool", ["flat"], ["p5"], name="max_1d", kernel_shape=[4], strides=[3],
             pads=[1, 2]),
    ]
    for i in range(1, 5):
        nodes.append(node("ReduceMean", [f"p{i}"], [f"m{i}"], name=f"mean{i}", axes=[2, 3],
                          keepdims=0))
    nodes += [
        node("ReduceMean", ["p5"], ["m5"], name="mean5", axes=[2], keepdims=0),
        node("Concat", [f"m{i}" for i in range(1, 6)], ["f"], name="cat", axis=1),
        node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1),
    ]
    write_handmade(out, "pool_pad_net", nodes, inits, x, y)


def same_pad_net(out):
    """Windows whose pads the file does not write: auto_pad SAME_UPPER and SAME_LOWER on Conv,
    MaxPool and AveragePool (TensorFlow's SAME, as tf2onnx writes it), VALID on a Conv, and
    ConvTranspose with output_shape and with auto_pad SAME_UPPER. The graph is written here with
    onnx.helper around the weights of PyTorch modules; the reference pads explicitly as ONNX's
    definition computes (ceil(in / stride) outputs; a transposed convolution's full output
    cropped), then convolves and pools in PyTorch; tests/data/onnx/same_pad_net.onnx with its
    float32 output."""

    import torch
    from onnx import helper, numpy_helper
    from torch import nn
    from torch.nn import functional as F

    torch.manual_seed(20)
    c1, c2 = nn.Conv2d(3, 4, 3), nn.Conv2d(4, 4, 3)
    t1, t2 = nn.ConvTranspose2d(4, 3, 3), nn.ConvTranspose2d(4, 2, 3)
    fc = nn.Linear(13, 5)
    x = torch.rand(2, 3, 9, 10) * 2 - 1

    def padded(v, top, left, bottom, right, value=0.0):
        return F.pad(v, (left, right, top, bottom), value=value)

    with torch.no_grad():
        r1 = torch.relu(F.conv2d(padded(x, 1, 0, 1, 1), c1.weight, c1.bias, stride=2))  # 5x5
        p1 = F.max_pool2d(padded(r1, 0, 0, 1, 1, -float("inf")), 2, 2)  # SAME_UPPER: 3x3
        ones = torch.ones_like(r1)
        p2 = (F.avg_pool2d(padded(r1, 1, 2, 0, 1), (2, 4), 1, divisor_override=1) /
              F.avg_pool2d(padded(ones, 1, 2, 0, 1), (2, 4), 1, divisor_override=1))  # 5x5
        v = F.conv2d(p2, c2.weight, c2.bias)  # VALID: 3x3
        y1 = F.conv_transpose2d(v, t1.weight, t1.bias, stride=2)[:, :, 1:7, 0:7]  # 6x7
        y2 = F.conv_transpose2d(p1, t2.weight, t2.bias, stride=2)[:, :, 0:6, 0:6]  # 6x6
        y = fc(torch.cat([t.mean((2, 3)) for t in (p1, p2, y1, y2)], 1))
    inits = [numpy_helper.from_array(t.detach().numpy(), name) for name, t in [
        ("c1.weight", c1.weight), ("c1.bias", c1.bias), ("c2.weight", c2.weight),
        ("c2.bias", c2.bias), ("t1.weight", t1.weight), ("t1.bias", t1.bias),
        ("t2.weight", t2.weight), ("t2.bias", t2.bias), ("fc.weight", fc.weight),
        ("fc.bias", fc.bias)]]
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "c1.weight", "c1.bias"], ["c1"], name="same_conv", strides=[2, 2],
             auto_pad="SAME_UPPER"),
        node("Relu", ["c1"], ["r1"], name="relu"),
        node("MaxPool", ["r1"], ["p1"], name="same_max", kernel_shape=[2, 2], strides=[2, 2],
             auto_pad="SAME_UPPER"),
        node("AveragePool", ["r1"], ["p2"], name="same_lower_avg", kernel_shape=[2, 4],
             auto_pad="SAME_LOWER"),
        node("Conv", ["p2", "c2.weight", "c2.bias"], ["v"], name="valid_conv",
             kernel_shape=[3, 3], auto_pad="VALID"),
        node("ConvTranspose", ["v", "t1.weight", "t1.bias"], ["y1"], name="shaped_up",
             strides=[2, 2], output_shape=[6, 7]),
        node("ConvTranspose", ["p1", "t2.weight", "t2.bias"], ["y2"], name="same_up",
             strides=[2, 2], auto_pad="SAME_UPPER"),
    ]
    for i, t in enumerate(["p1", "p2", "y1", "y2"]):
        nodes.append(node("ReduceMean", [t], [f"m{i}"], name=f"mean{i}", axes=[2, 3],
                          keepdims=0))
    nodes += [
        node("Concat", [f"m{i}" for i in range(4)], ["f"], name="cat", axis=1),
        node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], name="fc", transB=1),
    ]
    write_handmade(out, "same_pad_net", nodes, inits, x, y)


def round_net(out):
    """torch.floor, torch.ceil and torch.round of activations (Floor, Ceil, Round; their
    gradients 0, as PyTorch's), a uniform quantizer's grid among them. (A straight-through
    estimator's detach() is not in an ONNX file: exported, h + (q - h).detach() is h + q - h,
    whose gradient is q's, 0.) tests/data/onnx/round_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.fc = nn.Linear(4, 5)

        def forward(self, x):
            h = self.conv(x)
            q = torch.round(h * 4) / 4  # a uniform quantizer's grid (halves to even)
            z = q * torch.floor(h * 2) + torch.ceil(h) * h
            return self.fc(z.mean((2, 3)))

    torch.manual_seed(21)
    net = Net().eval()
    x = torch.rand(2, 3, 6, 7) * 2 - 1
    export_with_output(net, x, out, "round_net", 13)


def grid_sample_net(out):
    """F.grid_sample (GridSample, opset 16) at a grid the network computes, a flow field in
    [-1, 1] scaled 2 to 3.5 times, far past the image's edges: bilinear with zeros, border and reflection padding,
    nearest with border padding, align_corners both ways; tests/data/onnx/grid_sample_net.onnx
    with PyTorch's float32 output."""

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Conv2d(3, 4, 3, padding=1)
            self.flow = nn.Conv2d(3, 2, 3, padding=1)
            self.fc = nn.Linear(20, 5)

        def forward(self, x):
            f = torch.tanh(self.features(x))
            grid = torch.tanh(self.flow(x)).permute(0, 2, 3, 1)  # (N, H, W, 2)
            samples = [
                F.grid_sample(f, grid * 2, mode="bilinear", padding_mode="zeros",
                              align_corners=False),
                F.grid_sample(f, grid * 2.5 + 0.05, mode="nearest", padding_mode="border",
                              align_corners=True),
                F.grid_sample(f, grid * 3, mode="bilinear", padding_mode="reflection",
                              align_corners=True),
                F.grid_sample(f, grid * 3.5, mode="bilinear", padding_mode="reflection",
                              align_corners=False),
                F.grid_sample(f, grid * 2.5, mode="bilinear", padding_mode="border",
                              align_corners=False),
            ]
            return self.fc(torch.cat([t.mean((2, 3)) for t in samples], 1))

    torch.manual_seed(22)
    net = Net().eval()
    x = torch.rand(2, 3, 8, 9) * 2 - 1
    export_with_output(net, x, out, "grid_sample_net", 16)


def norm_net(out):
    """LayerNorm as ConvNeXt uses it, exported at opset 17 (LayerNormalization) as norm_net and
    at opset 13 (nine nodes: ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add, fused
    back into one) as norm13_net: a strided stem, a channels-last LayerNorm, a ConvNeXt block
    (7x7 depthwise convolution, LayerNorm, Linear, GELU, Linear, a layer scale, the residual
    add), a hand-written normalization over the channels (mean, (x - m) ** 2, sqrt: imported
    unfused in both), and a head with a LayerNorm; tests/data/onnx/norm_net.onnx and
    norm13_net.onnx with PyTorch's float32 output."""

    import torch
    from torch import nn
    from torch.nn import functional as F

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
            self.norm = nn.LayerNorm(c, eps=1e-6)
            self.up = nn.Linear(c, 4 * c)
            self.down = nn.Linear(4 * c, c)
            self.scale = nn.Parameter(torch.rand(c) + 0.5)

        def forward(self, x):
            y = self.dw(x).permute(0, 2, 3, 1)
            y = self.scale * self.down(F.gelu(self.up(self.norm(y))))
            return x + y.permute(0, 3, 1, 2)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 8, 2, stride=2)
            self.stem_norm = nn.LayerNorm(8, eps=1e-6)
            self.block = Block(8)
            self.head_norm = nn.LayerNorm(8)
            self.fc = nn.Linear(8, 5)
            with torch.no_grad():  # weights away from LayerNorm's ones and zeros
                for m in (self.stem_norm, self.block.norm, self.head_norm):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.5, 0.5)

        def forward(self, x):
            x = self.stem_norm(self.stem(x).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
            x = self.block(x)
            m = x.mean(1, keepdim=True)
            x = (x - m) / torch.sqrt(((x - m) ** 2).mean(1, keepdim=True) + 1e-5)
            return self.fc(self.head_norm(F.adaptive_avg_pool2d(x, 1).flatten(1)))

    torch.manual_seed(6)
    net = Net().eval()
    x = torch.rand(2, 3, 12, 10) * 2 - 1
    export_with_output(net, x, out, "norm_net", 17)
    export_with_output(net, x, out, "norm13_net", 13)


def torchvision_training(out, only=()):
    """Training-mode exports (BatchNorm on batch statistics, as frugal trains) with PyTorch's
    parameter gradients of one step beside each: <name>.onnx, <name>.pgrad (the f32 input
    (4, 3, S, S), the i32 labels (4), then each parameter's gradient of the mean cross-entropy
    (summed over the outputs where the model has several: an auxiliary head),
    computed in float64 and stored as f32, in the order of <name>.pgrad.txt, one "name count"
    line each). Dropout and stochastic depth are set to 0 so the step is deterministic."""
    import torch
    import torchvision

    cases = [("resnet18", torchvision.models.resnet18, 64),
             ("mobilenet_v2", torchvision.models.mobilenet_v2, 64),
             ("shufflenet_v2_x1_0", torchvision.models.shufflenet_v2_x1_0, 64),
             ("squeezenet1_1", torchvision.models.squeezenet1_1, 96),
             ("efficientnet_b0", torchvision.models.efficientnet_b0, 64),
             ("densenet121", torchvision.models.densenet121, 64),
             ("convnext_tiny", torchvision.models.convnext_tiny, 64),
             # A tiny vision transformer: attention's reshapes move the batch axis and back.
             ("vit_tiny", lambda num_classes: torchvision.models.VisionTransformer(
                 image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
                 mlp_dim=64, num_classes=num_classes), 32),
             # ResNet-18 with GroupNorm (32 groups) for BatchNorm: InstanceNormalization.
             ("resnet18_gn", lambda num_classes: torchvision.models.resnet18(
                 num_classes=num_classes, norm_layer=lambda c: torch.nn.GroupNorm(32, c)), 64),
             # More of torchvision's classifiers, as a user brings them: hardswish and
             # squeeze-and-excitation with hardsigmoid, grouped convolutions, Inception's
             # branches and asymmetric kernels.
             ("mobilenet_v3_small", torchvision.models.mobilenet_v3_small, 64),
             ("mobilenet_v3_large", torchvision.models.mobilenet_v3_large, 64),
             ("regnet_y_400mf", torchvision.models.regnet_y_400mf, 64),
             ("regnet_x_400mf", torchvision.models.regnet_x_400mf, 64),
             ("resnext50_32x4d", torchvision.models.resnext50_32x4d, 64),
             ("mnasnet0_5", torchvision.models.mnasnet0_5, 64),
             ("squeezenet1_0", torchvision.models.squeezenet1_0, 96),
             ("googlenet", plain_googlenet, 64),
             ("inception_v3", plain_inception_v3, 96),
             # With its auxiliary head (299 px, the least it takes): a file of two outputs,
             # each scored against the labels, the losses summed.
             ("inception_v3_aux", lambda num_classes: torchvision.models.inception_v3(
                 num_classes=num_classes, aux_logits=True, init_weights=True), 299),
             ("efficientnet_v2_s", torchvision.models.efficientnet_v2_s, 64),
             ("swin_t", torchvision.models.swin_t, 64),
             ("maxvit_t", torchvision.models.maxvit_t, 224)]
    for name, make, side in cases:
        if only and name not in only:
            continue
        torch.manual_seed(0)
        net = make(num_classes=10)
        if hasattr(net, "class_token"):  # a ViT's head and class token start at zero
            with torch.no_grad():
                net.heads.head.weight.normal_(0, 0.3)
                net.class_token.normal_(0, 0.5)
        export_training_with_grads(net, out, name, side)


def export_training_with_grads(net, out, name, side):
    """Exports `net` in training mode (opset 15, dropout and stochastic depth set to 0) with
    PyTorch's float64 parameter gradients of one step beside it (<name>.pgrad, <name>.pgrad.txt:
    see torchvision_training)."""
    import copy
    import os
    import warnings

    import torch

    for m in net.modules():
        if isinstance(m, torch.nn.Dropout) or type(m).__name__ in ("StochasticDepth",
                                                                    "DropPath"):
            if hasattr(m, "p"):
                m.p = 0.0
            if hasattr(m, "drop_prob"):
                m.drop_prob = 0.0
        if isinstance(getattr(m, "drop_rate", None), float):  # timm's F.dropout in its heads
            m.drop_rate = 0.0
    net.train()
    x = torch.rand(4, 3, side, side) * 2 - 1
    labels = torch.randint(0, 10, (4,))

    def loss_of(y):  # several outputs (auxiliary heads): each one's loss, summed, as frugal does
        outs = [o for o in y if o is not None] if isinstance(y, tuple) else [y]
        return sum(torch.nn.functional.cross_entropy(o, labels) for o in outs), len(outs)

    names = ["y"] + [f"aux{i}" for i in range(1, loss_of(copy.deepcopy(net)(x))[1])]
    path = f"{out}/{name}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(copy.deepcopy(net), x, path + ".tmp", opset_version=15,
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, input_names=["x"], output_names=names,
                          dynamic_axes={"x": {0: "N"}, **{n: {0: "N"} for n in names}})
    os.replace(path + ".tmp", path)
    net64 = copy.deepcopy(net).double()
    loss = loss_of(net64(x.double()))[0]
    loss.backward()
    params = sorted((n, p) for n, p in net64.named_parameters() if p.grad is not None)
    with open(f"{out}/{name}.pgrad", "wb") as f:
        f.write(x.numpy().astype("<f4").tobytes())
        f.write(labels.numpy().astype("<i4").tobytes())
        for _, p in params:
            f.write(p.grad.numpy().astype("<f4").tobytes())
    with open(f"{out}/{name}.pgrad.txt", "w") as f:
        for n, p in params:
            f.write(f"{n} {p.numel()}\n")
    # PyTorch's own float32 step against its float64 one, measured as the test measures
    # frugal's: how far rounding alone moves these gradients.
    net32 = copy.deepcopy(net)
    loss_of(net32(x))[0].backward()
    got32 = dict(net32.named_parameters())
    scale = max(p.grad.abs().max().item() for _, p in params)
    worst, worst_name = max((((got32[n].grad.double() - p.grad).abs().max() /
                              max(p.grad.abs().max().item(), 1e-2 * scale)).item(), n)
                            for n, p in params)
    print(f"{path}: training-mode export, {len(params)} parameter gradients; PyTorch's "
          f"float32 step differs from its float64 one by {worst:.3g} of a tensor's scale "
          f"({worst_name})")


def mbconv_train_net(out):
    """EfficientNet's block in small, exported in training mode with PyTorch's float64
    parameter gradients of one step (export_training_with_grads, 10 classes, 4 x 3 x 8 x 8
    inputs): a stem convolution, BatchNorm and SiLU, an inverted residual (1x1 expansion,
    depthwise 3x3, each with BatchNorm and SiLU, squeeze-and-excitation, a 1x1 projection with
    BatchNorm added to its input), and a head of 1x1 convolution, BatchNorm, hardswish, average
    pool and linear. The batch norms' weights and biases are drawn away from 1 and 0, so that
    a gradient taken from their outputs (--bn-from-output) divides by something;
    tests/data/onnx/mbconv_train_net.onnx, .pgrad and .pgrad.txt."""
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()

            def cbn(cin, cout, k, groups=1):
                return [nn.Conv2d(cin, cout, k, padding=k // 2, groups=groups, bias=False),
                        nn.BatchNorm2d(cout)]

            self.stem = nn.Sequential(*cbn(3, 8, 3), nn.SiLU())
            self.expand = nn.Sequential(*cbn(8, 16, 1), nn.SiLU())
            self.depthwise = nn.Sequential(*cbn(16, 16, 3, groups=16), nn.SiLU())
            self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(16, 4, 1), nn.SiLU(),
                                    nn.Conv2d(4, 16, 1), nn.Sigmoid())
            self.project = nn.Sequential(*cbn(16, 8, 1))
            self.head = nn.Sequential(*cbn(8, 12, 1), nn.Hardswish(), nn.AdaptiveAvgPool2d(1),
                                      nn.Flatten(), nn.Linear(12, 10))

        def forward(self, x):
            h = self.stem(x)
            u = self.depthwise(self.expand(h))
            return self.head(h + self.project(u * self.se(u)))

    torch.manual_seed(23)
    net = Net()
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                sign = torch.where(torch.rand(m.num_features) < 0.25, -1.0, 1.0)
                m.weight.copy_(sign * (0.5 + torch.rand(m.num_features)))
                m.bias.copy_(torch.randn(m.num_features) * 0.5)
    export_training_with_grads(net, out, "mbconv_train_net", 8)


def layer_norm_train_net(out):
    """A vision transformer's blocks and ConvNeXt's in small, exported in training mode with
    PyTorch's float64 parameter gradients of one step (export_training_with_grads, 10 classes,
    4 x 3 x 8 x 8 inputs): a 2x2 patch embedding into 16 tokens of 12 features, a pre-norm
    attention block (LayerNorm, one head, the residual) and MLP block (LayerNorm, Linear, GELU,
    Linear, the residual), then the tokens back into a 4x4 map for a ConvNeXt block (7x7
    depthwise convolution, channels-last LayerNorm, Linear, GELU, Linear, the residual), and a
    head of LayerNorm, mean over the tokens and Linear. The layer norms' weights and biases are
    drawn away from 1 and 0, so that a gradient taken from their outputs (--ln-from-output)
    divides by something; tests/data/onnx/layer_norm_train_net.onnx, .pgrad and .pgrad.txt."""
    import torch
    from torch import nn

    D = 12

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Conv2d(3, D, 2, stride=2)
            self.ln1 = nn.LayerNorm(D)
            self.qkv = nn.Linear(D, 3 * D)
            self.proj = nn.Linear(D, D)
            self.ln2 = nn.LayerNorm(D)
            self.mlp = nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))
            self.dw = nn.Conv2d(D, D, 7, padding=3, groups=D)
            self.ln3 = nn.LayerNorm(D, eps=1e-6)
            self.pw = nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))
            self.head_norm = nn.LayerNorm(D)
            self.head = nn.Linear(D, 10)

        def forward(self, x):
            t = self.embed(x).flatten(2).transpose(1, 2)  # (N, 16, D)
            q, k, v = self.qkv(self.ln1(t)).chunk(3, dim=-1)
            a = torch.softmax(q @ k.transpose(1, 2) / D ** 0.5, dim=-1) @ v
            t = t + self.proj(a)
            t = t + self.mlp(self.ln2(t))
            m = t.transpose(1, 2).reshape(-1, D, 4, 4)
            c = self.dw(m).permute(0, 2, 3, 1)  # channels last
            m = m + self.pw(self.ln3(c)).permute(0, 3, 1, 2)
            return self.head(self.head_norm(m.flatten(2).transpose(1, 2)).mean(1))

    torch.manual_seed(29)
    net = Net()
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, nn.LayerNorm):
                sign = torch.where(torch.rand(D) < 0.25, -1.0, 1.0)
                m.weight.copy_(sign * (0.5 + torch.rand(D)))
                m.bias.copy_(torch.randn(D) * 0.5)
    export_training_with_grads(net, out, "layer_norm_train_net", 8)


def unet_segmentation(out, base=16, side=32, name="unet"):
    """A U-Net as PyTorch users write it (two 3x3 convolutions with BatchNorm and ReLU per
    level, max-pool down, a transposed convolution up, a nearest upsampling and 1x1 convolution
    up, the upsampled map padded to its skip's size with F.pad, skips joined by torch.cat), for
    `frugal segment`'s shapes task: 3 x side x side images, 4 classes per pixel. Exported in
    training mode (BatchNorm on batch statistics) with a dynamic batch, opset 15."""
    import os
    import warnings

    import torch

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench",
                                    "peers"))
    from pytorch_nets import UNet  # the peers' U-Net: one definition

    torch.manual_seed(0)
    net = UNet(base=base).train()
    path = f"{out}/{name}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, torch.rand(2, 3, side, side), path + ".tmp", opset_version=15,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    os.replace(path + ".tmp", path)
    # The eval-mode output (BatchNorm on its running statistics, as frugal's inference runs an
    # export's BatchNorm) of two random images, as the .io files of the other fixtures.
    x = torch.rand(2, 3, side, side) * 2 - 1
    with torch.no_grad():
        y = net.eval()(x)
    with open(f"{out}/{name}.io", "wb") as f:
        f.write(x.numpy().astype("<f4").tobytes())
        f.write(y.numpy().astype("<f4").tobytes())
    params = sum(p.numel() for p in net.parameters())
    print(f"{path}: U-Net, {params} parameters, input (N, 3, {side}, {side}), output (N, 4, "
          f"{side}, {side})")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--pytorch":
        double_net(sys.argv[2])
        bilinear_net(sys.argv[2])
        matmul_net(sys.argv[2])
        focus_net(sys.argv[2])
        pad_net(sys.argv[2])
        extras_net(sys.argv[2])
        norm_net(sys.argv[2])
        bmm_net(sys.argv[2])
        gather_net(sys.argv[2])
        reduce_net(sys.argv[2])
        expand_net(sys.argv[2])
        class_token_net(sys.argv[2])
        vit_net(sys.argv[2])
        timm_net(sys.argv[2])
        tile_net(sys.argv[2])
        conv3d_net(sys.argv[2])
        bicubic_net(sys.argv[2])
        where_net(sys.argv[2])
        anchor_net(sys.argv[2])
        scatter_net(sys.argv[2])
        pool1d_net(sys.argv[2])
        empty_concat_net(sys.argv[2])
        recurrent_net(sys.argv[2], "lstm", 26)
        recurrent_net(sys.argv[2], "gru", 27)
        recurrent_net(sys.argv[2], "rnn", 31)
        swin_net(sys.argv[2])
        einsum_net(sys.argv[2])
        instance_norm_net(sys.argv[2])
        group_norm_lookalike_net(sys.argv[2])
        prelu_net(sys.argv[2])
        activation_net(sys.argv[2])
        elu_net(sys.argv[2])
        var_net(sys.argv[2])
        trig_net(sys.argv[2])
        nearest_net(sys.argv[2])
        einsum2_net(sys.argv[2])
        gem_net(sys.argv[2])
        pixel_net(sys.argv[2])
        lrn_net(sys.argv[2])
        minmax_net(sys.argv[2])
        lrn_torch_net(sys.argv[2])
        pool_window_net(sys.argv[2])
        pool_pad_net(sys.argv[2])
        same_pad_net(sys.argv[2])
        round_net(sys.argv[2])
        grid_sample_net(sys.argv[2])
        signal_net(sys.argv[2])
        features_net(sys.argv[2])
        video_net(sys.argv[2])
        conv3d_full_net(sys.argv[2])
        unet3d_net(sys.argv[2])
        inputs_net(sys.argv[2])
        outputs_net(sys.argv[2])
        int_input_net(sys.argv[2])
        embedding_net(sys.argv[2])
        mbconv_train_net(sys.argv[2])
        layer_norm_train_net(sys.argv[2])
        sys.exit(0)
    if len(sys.argv) > 2 and sys.argv[1] == "--segmentation":
        # The U-Net of docs/TRAINING.md's segmentation run, and a small one for the tests
        # (tests/data/onnx/unet_seg.onnx: 4 base channels, 16 x 16 images).
        if len(sys.argv) > 3 and sys.argv[3] == "--small":
            unet_segmentation(sys.argv[2], base=4, side=16, name="unet_seg")
        else:
            unet_segmentation(sys.argv[2])
        sys.exit(0)
    if len(sys.argv) > 2 and sys.argv[1] == "--torchvision":
        torchvision_models(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) > 2 and sys.argv[1] == "--torchvision-training":
        torchvision_training(sys.argv[2], sys.argv[3:])
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "tests/data/onnx")
