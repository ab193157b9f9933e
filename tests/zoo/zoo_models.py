"""The zoo: public architectures, scaled down, written with :mod:`zoo_layers` at test time.

Each keeps what makes its family hard for a compiler or a codec (the head, the output rank, the
operators, odd sizes) and shrinks widths and input sizes so a model compiles in seconds: the
layer pattern of torchvision's mobilenet_v2, resnet18, squeezenet1_1, shufflenet_v2 and resnext;
a YOLO-style detector with three 255-channel heads; an SSD-style head of rank-3 boxes and scores;
a U-Net segmenter; a ViT-style transformer block (rank-3 tokens); classifiers ending in Gemm,
Softmax, ArgMax (rank 1) and TopK; an MLP on a rank-2 input. Random weights, fixed seeds, no
downloads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
from zoo_layers import FLOAT, INT64, Net


@dataclass(frozen=True)
class Architecture:
    name: str
    family: str
    """What it stands for, and the trait the zoo takes it for."""
    build: Callable[[], onnx.ModelProto]


def _stem(net: Net, size: tuple[int, int], width: int = 16) -> str:
    x = net.input("input", (1, 3, *size))
    return net.conv(x, 3, width, k=3, stride=2)


def mobilenet_v2(classes: int = 1000) -> onnx.ModelProto:
    net = Net("mobilenet_v2", seed=101)
    x = net.input("input", (1, 3, 96, 96))
    x = net.conv(x, 3, 16, stride=2, act="relu6")
    cin = 16
    for expand, cout, stride in ((1, 16, 1), (4, 24, 2), (4, 24, 1), (4, 32, 2), (4, 32, 1)):
        hidden = cin * expand
        y = net.conv(x, cin, hidden, k=1, act="relu6") if expand != 1 else x
        y = net.conv(y, hidden, hidden, stride=stride, group=hidden, act="relu6")
        y = net.conv(y, hidden, cout, k=1, act=None)
        x = net.node("Add", [x, y])[0] if stride == 1 and cin == cout else y
        cin = cout
    x = net.conv(x, cin, 128, k=1, act="relu6")
    logits = net.gemm(net.global_pool_flat(x), 128, classes)
    return net.model([(logits, (1, classes), FLOAT)])


def resnet18() -> onnx.ModelProto:
    net = Net("resnet18", seed=102)
    x = net.input("input", (1, 3, 64, 64))
    x = net.maxpool(net.conv(x, 3, 16, k=7, stride=2))
    cin = 16
    for cout, stride in ((16, 1), (32, 2), (64, 2)):
        y = net.conv(x, cin, cout, stride=stride)
        y = net.conv(y, cout, cout, act=None)
        skip = x if stride == 1 else net.conv(x, cin, cout, k=1, stride=stride, act=None)
        x = net.act(net.node("Add", [skip, y])[0], "relu")
        cin = cout
    logits = net.gemm(net.global_pool_flat(x), cin, 1000)
    return net.model([(logits, (1, 1000), FLOAT)])


def squeezenet1_1() -> onnx.ModelProto:
    """Fire modules (squeeze, then two expand branches concatenated) on a 211x211 input."""
    net = Net("squeezenet1_1", seed=103)
    x = net.input("input", (1, 3, 211, 211))
    x = net.maxpool(net.conv(x, 3, 16, stride=2))
    cin = 16
    for squeeze, expand in ((8, 16), (8, 16), (16, 32)):
        s = net.conv(x, cin, squeeze, k=1)
        x = net.node(
            "Concat", [net.conv(s, squeeze, expand, k=1), net.conv(s, squeeze, expand)], axis=1
        )[0]
        x = net.maxpool(x)
        cin = 2 * expand
    x = net.conv(x, cin, 1000, k=1)
    (pooled,) = net.node("GlobalAveragePool", [x])
    return net.model([(net.node("Flatten", [pooled], axis=1)[0], (1, 1000), FLOAT)])


def shufflenet_v2() -> onnx.ModelProto:
    """Grouped 1x1 convs and the channel shuffle (Reshape, Transpose, Reshape)."""
    net = Net("shufflenet_v2", seed=104)
    x = _stem(net, (64, 64), 24)
    h = w = 32
    for groups in (4, 4):
        y = net.conv(x, 24, 24, k=1, group=groups)
        y = net.reshape(y, (1, groups, 24 // groups, h, w))
        y = net.reshape(net.transpose(y, (0, 2, 1, 3, 4)), (1, 24, h, w))
        y = net.conv(y, 24, 24, group=24, act=None)
        y = net.conv(y, 24, 24, k=1, group=groups, act=None)
        x = net.act(net.node("Add", [x, y])[0], "relu")
    logits = net.gemm(net.global_pool_flat(x), 24, 100)
    return net.model([(logits, (1, 100), FLOAT)])


def resnext_odd() -> onnx.ModelProto:
    """Grouped 3x3 convs (32 groups) on an odd, non-square 97x89 input; a 4-D output."""
    net = Net("resnext_odd", seed=105)
    x = net.input("input", (1, 3, 97, 89))
    x = net.conv(x, 3, 64, stride=2)
    y = net.conv(x, 64, 64, k=1)
    y = net.conv(y, 64, 64, group=32)
    y = net.conv(y, 64, 64, k=1, act=None)
    x = net.act(net.node("Add", [x, y])[0], "relu")
    return net.model([(net.conv(x, 64, 40, k=1, act=None), (1, 40, 49, 45), FLOAT)])


def classifier_softmax(classes: int = 10, size: int = 48) -> onnx.ModelProto:
    net = Net("classifier_softmax", seed=106)
    x = net.maxpool(_stem(net, (size, size)))
    x = net.conv(x, 16, 32, stride=2)
    logits = net.gemm(net.global_pool_flat(x), 32, classes)
    return net.model([(net.node("Softmax", [logits], axis=1)[0], (1, classes), FLOAT)])


def classifier_argmax() -> onnx.ModelProto:
    """The class index on the device: ArgMax over 1000 logits, keepdims=0 (a rank-1 output)."""
    net = Net("classifier_argmax", seed=107)
    x = net.conv(_stem(net, (48, 48)), 16, 32, stride=2)
    logits = net.gemm(net.global_pool_flat(x), 32, 1000)
    index = net.node("ArgMax", [logits], axis=1, keepdims=0)[0]
    return net.model([(index, (1,), INT64)])


def classifier_topk(classes: int = 1000, k: int = 5) -> onnx.ModelProto:
    """The five best classes: TopK's values and indices (two rank-2 outputs)."""
    net = Net("classifier_topk", seed=108)
    x = net.conv(_stem(net, (48, 48)), 16, 32, stride=2)
    logits = net.gemm(net.global_pool_flat(x), 32, classes)
    best = net.const(np.array([k], "int64"), "k")
    values, indices = net.node("TopK", [logits, best], outputs=2, axis=1)
    return net.model([(values, (1, k), FLOAT), (indices, (1, k), INT64)])


def vit_block() -> onnx.ModelProto:
    """Patch embedding, then one pre-norm transformer block: 16 tokens of width 64 (rank 3)."""
    net = Net("vit_block", seed=109)
    x = net.input("input", (1, 3, 32, 32))
    x = net.conv(x, 3, 64, k=8, stride=8, act=None, pad=0)
    tokens = net.transpose(net.reshape(x, (1, 64, 16)), (0, 2, 1))
    normed = net.layernorm(tokens, 64)
    q, k, v = (net.matmul(normed, 64, 64) for _ in range(3))
    (scores,) = net.node("MatMul", [q, net.transpose(k, (0, 2, 1))])
    scaled = net.node("Mul", [scores, net.const(np.array(0.125, "float32"))])[0]
    (attention,) = net.node("Softmax", [scaled], axis=-1)
    (mixed,) = net.node("MatMul", [attention, v])
    tokens = net.node("Add", [tokens, net.matmul(mixed, 64, 64)])[0]
    hidden = net.act(net.matmul(net.layernorm(tokens, 64), 64, 128), "relu")
    tokens = net.node("Add", [tokens, net.matmul(hidden, 128, 64)])[0]
    return net.model([(tokens, (1, 16, 64), FLOAT)])


def yolo_heads() -> onnx.ModelProto:
    """A YOLO-style detector: a backbone and three 255-channel heads at strides 8, 16 and 32."""
    net = Net("yolo_heads", seed=110)
    x = net.input("input", (1, 3, 160, 160))
    x = net.conv(x, 3, 16, stride=2)
    x = net.conv(x, 16, 32, stride=2)
    outputs = []
    cin = 32
    for size, cout in ((20, 48), (10, 64), (5, 96)):
        x = net.conv(x, cin, cout, stride=2)
        outputs.append((net.conv(x, cout, 255, k=1, act=None), (1, 255, size, size), FLOAT))
        cin = cout
    return net.model(outputs)


def ssd_boxes(classes: int = 21) -> onnx.ModelProto:
    """An SSD-style head: per-anchor boxes and class scores, reshaped and concatenated (rank 3)."""
    net = Net("ssd_boxes", seed=111)
    x = net.conv(_stem(net, (64, 64)), 16, 32, stride=2)
    boxes, scores = [], []
    for size in (16, 8):
        if size == 8:
            x = net.conv(x, 32, 32, stride=2)
        anchors = size * size * 4
        b = net.conv(x, 32, 16, k=1, act=None)
        boxes.append(net.reshape(net.transpose(b, (0, 2, 3, 1)), (1, anchors, 4)))
        s = net.conv(x, 32, 4 * classes, k=1, act=None)
        scores.append(net.reshape(net.transpose(s, (0, 2, 3, 1)), (1, anchors, classes)))
    total = 16 * 16 * 4 + 8 * 8 * 4
    (box,) = net.node("Concat", boxes, axis=1)
    (score,) = net.node("Concat", scores, axis=1)
    (prob,) = net.node("Softmax", [score], axis=-1)
    return net.model([(box, (1, total, 4), FLOAT), (prob, (1, total, classes), FLOAT)])


def unet_seg() -> onnx.ModelProto:
    """A U-Net segmenter: two downsamplings, nearest upsampling, skip Concats, 21 classes."""
    net = Net("unet_seg", seed=112)
    x = net.input("input", (1, 3, 64, 64))
    e1 = net.conv(x, 3, 16)
    e2 = net.conv(e1, 16, 32, stride=2)
    e3 = net.conv(e2, 32, 64, stride=2)
    d2 = net.node("Concat", [net.upsample2(e3), e2], axis=1)[0]
    d2 = net.conv(d2, 96, 32)
    d1 = net.node("Concat", [net.upsample2(d2), e1], axis=1)[0]
    d1 = net.conv(d1, 48, 16)
    return net.model([(net.conv(d1, 16, 21, k=1, act=None), (1, 21, 64, 64), FLOAT)])


def mlp(features: int = 784, classes: int = 10) -> onnx.ModelProto:
    """An MLP on a rank-2 input (a flattened 28x28 image): MatMul layers only."""
    net = Net("mlp", seed=113)
    x = net.input("input", (1, features))
    x = net.act(net.matmul(x, features, 256), "relu")
    x = net.act(net.matmul(x, 256, 128), "relu")
    return net.model([(net.matmul(x, 128, classes), (1, classes), FLOAT)])


ZOO: tuple[Architecture, ...] = (
    Architecture(
        "mobilenet_v2",
        "torchvision mobilenet_v2: inverted residuals, depthwise, ReLU6, Gemm head (rank 2)",
        mobilenet_v2,
    ),
    Architecture(
        "resnet18",
        "torchvision resnet18: 7x7 stem, MaxPool, residual Adds, Gemm head (rank 2)",
        resnet18,
    ),
    Architecture(
        "squeezenet1_1",
        "torchvision squeezenet1_1: fire modules (Concat), a "
        "211x211 input, a conv head flattened (rank 2)",
        squeezenet1_1,
    ),
    Architecture(
        "shufflenet_v2",
        "torchvision shufflenet_v2: grouped 1x1 convs, channel shuffle (Reshape/Transpose)",
        shufflenet_v2,
    ),
    Architecture(
        "resnext_odd", "resnext: 32-group 3x3 convs, an odd 97x89 input, 4-D output", resnext_odd
    ),
    Architecture("classifier_softmax", "a classifier ending in Softmax", classifier_softmax),
    Architecture(
        "classifier_argmax", "a classifier ending in ArgMax (rank 1, int64)", classifier_argmax
    ),
    Architecture(
        "classifier_topk", "a classifier ending in TopK (values and indices)", classifier_topk
    ),
    Architecture(
        "vit_block",
        "a ViT-style transformer block: LayerNorm, attention, MLP (rank-3 tokens)",
        vit_block,
    ),
    Architecture("yolo_heads", "a YOLO-style detector: three 255-channel heads", yolo_heads),
    Architecture("ssd_boxes", "an SSD-style head: rank-3 boxes and Softmax scores", ssd_boxes),
    Architecture("unet_seg", "a U-Net segmenter: Resize, skip Concats, 21 classes", unet_seg),
    Architecture("mlp", "an MLP on a rank-2 input: MatMul only", mlp),
    Architecture(
        "mlp_odd",
        "an MLP on an odd-sized rank-2 input (300 features, 17 classes)",
        lambda: mlp(features=300, classes=17),
    ),
)

BY_NAME = {arch.name: arch for arch in ZOO}


VARIANTS: dict[str, Callable[[], onnx.ModelProto]] = {
    "mobilenet_v2-37": lambda: mobilenet_v2(classes=37),
    "mobilenet_v2-1001": lambda: mobilenet_v2(classes=1001),
    "classifier_softmax-250": lambda: classifier_softmax(classes=250, size=40),
    "classifier_softmax-3": lambda: classifier_softmax(classes=3, size=40),
    "classifier_topk-50-3": lambda: classifier_topk(classes=50, k=3),
    "ssd_boxes-7": lambda: ssd_boxes(classes=7),
    "ssd_boxes-30": lambda: ssd_boxes(classes=30),
    "mlp-52-7": lambda: mlp(features=52, classes=7),
    "mlp-130-11": lambda: mlp(features=130, classes=11),
}
"""The same families at other sizes, never compiled into the stored data: the ``vendor-rknn``
environment compiles them afresh, a blind check of the rules read off the stored zoo."""

BUILDERS: dict[str, Callable[[], onnx.ModelProto]] = {
    **{arch.name: arch.build for arch in ZOO},
    **VARIANTS,
}
