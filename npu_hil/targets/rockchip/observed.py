"""Rockchip RKNN2: where Rockchip's own compiler and runtimes (:data:`RUNTIME_OF`) disagree with
the seed's tables, as data; how each was measured and how the predictions use it:
docs/runtime/codec.md, "Readings the seeds leave open"."""

from __future__ import annotations

from dataclasses import dataclass

from npu_hil.targets.rockchip.tables import (
    PLATFORMS,
    RK2118,
    RK3562,
    RK3566_RK3568,
    RK3576_RV1126B,
    RK3588,
    RV1103_RV1106,
    RV1103B_RV1106B,
    input_rows,
    platform_of,
)
from npu_hil.targets.tables import CONV_OPS

COMPILER = "rknn-toolkit2 2.5.0"
LIBRKNNRT = "librknnrt 1.6.0"
LIBRKNNMRT = "librknnmrt 2.3.2"

#: The runtime library that answered rknn_query() per seed platform group (None: not observed).
RUNTIME_OF: dict[str, str | None] = {
    RK3566_RK3568: LIBRKNNRT,
    RK3588: LIBRKNNRT,
    RK3562: LIBRKNNRT,
    RV1103_RV1106: LIBRKNNMRT,
    RV1103B_RV1106B: LIBRKNNMRT,
    RK2118: LIBRKNNMRT,
    RK3576_RV1126B: None,
}


def observed_by(platform: str) -> str:
    """``rknn-toolkit2 2.5.0 / librknnrt 1.6.0 observed`` (or the compiler alone)."""
    runtime = RUNTIME_OF[platform]
    return f"{COMPILER} / {runtime} observed" if runtime else f"{COMPILER} observed (no runtime)"


@dataclass(frozen=True)
class Deviation:
    """One place where the vendor's software does not do what the seed's table says.

    ``seed`` is the table's value (or "silent"), ``observed`` what the compiler and runtime do,
    ``evidence`` a few measured cases. ``skew`` says where compiler and runtime disagree with each
    other; ``contradiction`` marks vendor answers that contradict themselves (the codec refuses
    them with a typed error instead of predicting them).
    """

    key: str
    platforms: tuple[str, ...]
    attribute: str
    seed: str
    observed: str
    evidence: str
    skew: str = ""
    assumed: tuple[str, ...] = ()
    contradiction: bool = False
    compiler_only: bool = False
    """Measured on compiled files alone (the zoo): no runtime was asked."""

    def applies_to(self, target: str) -> bool:
        return platform_of(target) in self.platforms

    def provenance(self, target: str) -> str:
        platform = platform_of(target)
        if self.compiler_only:
            return f"{COMPILER} observed on the zoo's compiled files (no runtime)"
        if platform in self.assumed:
            return f"assumed from the other platforms' runtimes ({COMPILER} observed)"
        return observed_by(platform)

    def text(self, target: str) -> str:
        lines = [
            f"{self.key}: {self.attribute}",
            f"    seed:     {self.seed}",
            f"    observed: {self.observed} ({self.provenance(target)})",
            f"    evidence: {self.evidence}",
        ]
        if self.skew:
            lines.append(f"    skew:     {self.skew}")
        return "\n".join(lines)


DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "flattened-plane",
        PLATFORMS,
        "NC1HWC2 output native dims",
        "silent: native dims [N, C1, H, W, C2], each H*W plane padded to 4",
        "when H*W is not a multiple of 4 the runtime reports [N, C1, 1, ceil4(H*W), C2]; the "
        "bytes are those of [N, C1, H, W, C2] with each plane padded to 4 (element (h, w) at "
        "plane offset h*W + w)",
        "H=3 W=15: [1,2,1,48,8]; H=3 W=17: [1,C1,1,52,C2]; H=3 W=16: [1,C1,3,16,C2] unflattened",
        skew=f"{COMPILER}'s tensor table states the unflattened [N, C1, H, W, C2] (same bytes)",
        assumed=(RK3576_RV1126B,),
    ),
    Deviation(
        "conv-last-channels",
        (RK3562, RV1103_RV1106),
        "NC1HWC2 output channel padding when the last layer is a convolution",
        "int8 x32, float16 x16",
        "padded to C2 only: int8 x16, float16 x8 (the same as other last ops)",
        "cout=40 int8 -> [1,3,H,W,16]; cout=3 int8 -> C1*C2 = 16",
    ),
    Deviation(
        "c2-8",
        (RV1103B_RV1106B,),
        "NC1HWC2 block C2 (int8), outputs and inputs",
        "not given; half the last-layer-conv multiple: 4",
        "C2 = 8",
        "cout=40 -> [1,5,1,48,8]; C=16 input -> [1,2,3,15,8]",
    ),
    Deviation(
        "input-width-16",
        (RV1103B_RV1106B,),
        "NHWC input width alignment for C = 1, 3, 4",
        "x8",
        "x16",
        "W=17 -> w_stride 32; W=33 -> 48",
    ),
    Deviation(
        "rk2118-fp16-width",
        (RK2118,),
        "float16 NHWC input width alignment",
        "x4 for C = 1, 3, 4",
        "x8 for C = 1, 3; none for C = 4",
        "W=17 C=3 -> w_stride 24; W=15 C=4 -> 15",
    ),
    Deviation(
        "fp16-c4-unaligned",
        (RK3566_RK3568,),
        "float16 NHWC input width alignment for C = 4",
        "x4",
        "none (w_stride == W); C = 1, 3 keep x4",
        "W=17 C=4 -> w_stride 17; W=17 C=3 -> 20",
        skew=f"{COMPILER} reserves padded rows for C = 4 ({LIBRKNNRT} reports none): the "
        "runtime is followed",
    ),
    Deviation(
        "conv-sigmoid-fp16",
        (RK3588, RK3576_RV1126B, RK3566_RK3568, RK3562),
        "NC1HWC2 output channels of a fused Conv+Sigmoid (float16)",
        "the last-layer-conv multiple (RK3588 x16, RK3566/RK3568 x8, RK3562 x16)",
        "a whole multiple of the padded channels: RK3588, RK3576/RV1126B 2 x ceil16(C); "
        "RK3566/RK3568 3 x ceil8(C); RK3562 2 x ceil8(C) (last_op=conv_sigmoid)",
        "RK3588 1->32, 17->64, 40->96; RK3566/68 1->24, 17->72, 40->120; RK3562 17->48, 40->80; "
        "int8 ConvSigmoid pads like a convolution",
    ),
    Deviation(
        "nhwc-output-unpadded",
        (RK3588,),
        "NHWC native output channel padding",
        "int8 x16, float16 x8",
        "none: NATIVE_NHWC_OUTPUT_ATTR has the model's own channel count",
        "[1,3,15,1], 45 bytes; RK3566/RK3568 do pad (x8 int8 / x4 float16)",
    ),
    Deviation(
        "int8-default-input",
        (RV1103_RV1106,),
        "declared input type of a quantized model",
        "uint8 only (input table row: first layer int8, input uint8)",
        "int8 (the compiler's default input dtype changes float32 to int8); the uint8 row's "
        "width alignment x16 applies",
        "every int8 model's INPUT_ATTR has type INT8 (2)",
    ),
    Deviation(
        "fused-last-op",
        PLATFORMS,
        "which last op decides the output channel padding",
        "silent: 'the last layer is a convolution'",
        "Conv+Add and Conv+Sigmoid are compiled into one op (Conv, ConvSigmoid) and pad as a "
        "convolution (float16 ConvSigmoid: deviation conv-sigmoid-fp16); RK2118 and "
        "RV1103B/RV1106B keep Sigmoid apart (it pads as another op)",
        "compiled_last_op Conv for every Conv+Add model; ConvSigmoid except on RK2118, "
        "RV1103B, RV1106B",
    ),
    Deviation(
        "nhwc-query-native",
        (RK3566_RK3568, RK3588, RK3562),
        "rknn_query(NATIVE_NHWC_INPUT_ATTR) for C not in 1, 3, 4",
        "silent",
        f"{LIBRKNNRT} answers with the NC1HWC2 attributes (the {LIBRKNNMRT} platforms answer NHWC)",
        "RK3588 C=17 float16 -> fmt NC1HWC2 [1,3,3,31,8]",
    ),
    Deviation(
        "nc1hwc2-input-plane",
        (RK3576_RV1126B,),
        "NC1HWC2 input plane padding",
        "silent",
        "none (size = C1*H*W*C2), as every observed runtime reports",
        "the compiler states a plane padded to 4 for these two targets only",
        skew=f"{COMPILER} reserves plane padding the runtimes elsewhere never report: the "
        "runtimes' rule is followed",
        assumed=(RK3576_RV1126B,),
    ),
    Deviation(
        "contradictory-reports",
        (RK2118, RV1103B_RV1106B),
        "vendor answers that contradict themselves",
        "n/a",
        "RK2118 float16 inputs with C > 4: NATIVE_INPUT_ATTR dims [1,H,W,4] with a size too "
        "small for the tensor; RK2118 MaxPool output: size 10x its dims; RV1103B/RV1106B unfused "
        "Sigmoid: size 52*C for dims [1,1,1,52,8]",
        "refused with a LayoutError naming the fields (size too small), or a size finding (a size "
        "larger than the dims reach)",
        contradiction=True,
    ),
)

ZOO = "tests/data/zoo/rknn_zoo.json.gz"
"""The zoo's compiled tensor tables (13 public architectures, every platform group): where the
deviations about outputs of rank 1 to 3 and Softmax outputs were measured (compiler only)."""

ZOO_DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "non4d-outputs",
        (RV1103_RV1106, RV1103B_RV1106B),
        "outputs of rank 1, 2 and 3 (classifier logits, ArgMax, transformer tokens)",
        "no row: the output table lists only rank-4 int8 rows for these platforms",
        "built and laid out flat (UNDEFINE), as on the other platforms",
        "mobilenet_v2 [1,1000] int8, 1,024 bytes; vit_block [1,16,64]; classifier_argmax [1] "
        f"int64 (zoo: {ZOO})",
        compiler_only=True,
    ),
    Deviation(
        "non4d-inputs",
        (RV1103_RV1106, RV1103B_RV1106B),
        "inputs of rank 1, 2 and 3",
        "no row: the input table lists only rank-4 inputs for these platforms",
        "built, the input flat (UNDEFINE) at its own size",
        "mlp [1,784] int8: 784 bytes",
        compiler_only=True,
    ),
    Deviation(
        "flat-output-size",
        PLATFORMS,
        "the byte size of a flat (rank 1 to 3) output",
        "the tensor's own size (the table gives no alignment for rank not 4)",
        "rounded up to 64 bytes; RK3566/RK3568: to 8 bytes, int64 outputs to 64",
        "[1,1000] int8: 1,024 (RK3588, RK3562, RK3576, RV1106, RV1106B), 1,000 (RK3566); "
        "[1,100] int8: 128 / 104; [1,10] float16: 64 / 24; [1] int64: 64 everywhere",
        compiler_only=True,
    ),
    Deviation(
        "flat-input-size",
        PLATFORMS,
        "the byte size of a flat (rank 1 to 3) input",
        "the tensor's own size",
        "rounded up to 16 bytes (RK3588, RK3576/RV1126B, RV1103/RV1106), 64 (RK3562) or 8 "
        "(RK3566/RK3568, RV1103B/RV1106B, RK2118)",
        "mlp inputs [1,300] int8: 304 / 320 (RK3562); [1,100]: 112 (RK3588), 104 (RK3566), "
        "128 (RK3562); [1,37] float16: 80 everywhere but RK3562 (128)",
        compiler_only=True,
    ),
    Deviation(
        "softmax-output-type",
        (RK3566_RK3568, RK3588, RK3562, RK3576_RV1126B, RV1103_RV1106, RK2118),
        "the type of an int8 model's Softmax output",
        "silent (the output's precision is the last layer's)",
        "float16: the compiler keeps Softmax in float16 (RV1103B/RV1106B: int8)",
        "classifier_softmax [1,10] and ssd_boxes scores [1,1280,21]: float16 in int8 builds",
        compiler_only=True,
    ),
    Deviation(
        "softmax-last-axis",
        (RK3566_RK3568, RV1103_RV1106, RV1103B_RV1106B),
        "the rows of a flat Softmax output",
        "silent",
        "the last axis padded to a multiple of 4 (rows of 24 for 21 classes)",
        "ssd_boxes scores [1,1280,21]: 61,440 bytes float16 (RK3566, RV1106), 30,720 int8 "
        "(RV1106B); 53,760 elsewhere",
        compiler_only=True,
    ),
    Deviation(
        "index-outputs",
        PLATFORMS,
        "ArgMax and TopK index outputs",
        "silent (the table knows int8 and float16 outputs)",
        "int64, laid out flat, the size rounded up to 64 bytes",
        "classifier_argmax [1]: int64, 64 bytes; classifier_topk indices [1,5]: int64, 64 bytes",
        compiler_only=True,
    ),
)
"""Deviations measured on the zoo's compiled files: the compiler's word (no runtime was run on
them; the runtime facts above stay the authority where they speak)."""

DEVIATIONS = DEVIATIONS + ZOO_DEVIATIONS

_BY_KEY = {d.key: d for d in DEVIATIONS}


def deviation(key: str) -> Deviation:
    return _BY_KEY[key]


def deviations_text(target: str) -> str:
    """The deviations from the seed for ``target``, for ``npu-hil targets show``."""
    found = [d for d in DEVIATIONS if d.applies_to(target)]
    lines = [
        "",
        f"Deviations from the seed: what Rockchip's own software does ({len(found)}; the "
        "predictions follow the observed value, the seed's stays beside it)",
    ]
    for item in found:
        lines += ["", item.text(target)]
    return "\n".join(lines) + "\n"


_CONV_SIGMOID_FP16: dict[str, tuple[int, int]] = {
    RK3588: (2, 16),
    RK3576_RV1126B: (2, 16),
    RK3566_RK3568: (3, 8),
    RK3562: (2, 8),
}


def conv_sigmoid_channels(target: str, channels: int) -> int | None:
    """The padded channel count of a float16 fused Conv+Sigmoid output, where observed."""
    rule = _CONV_SIGMOID_FP16.get(platform_of(target))
    if rule is None:
        return None
    factor, multiple = rule
    return factor * (-(-channels // multiple) * multiple)


# (platform, first layer, channels) -> the observed NHWC input width alignment where it differs
# from the seed's input table.
_INPUT_WIDTH_ALIGN: dict[tuple[str, str, int], tuple[int, str]] = {
    **{(RV1103B_RV1106B, "int8", c): (16, "input-width-16") for c in (1, 3, 4)},
    **{(RK2118, "float16", c): (8, "rk2118-fp16-width") for c in (1, 3)},
    (RK2118, "float16", 4): (1, "rk2118-fp16-width"),
    (RK3566_RK3568, "float16", 4): (1, "fp16-c4-unaligned"),
}

# (platform, precision) -> the observed NC1HWC2 block size where the seed's reading differs.
_C2: dict[tuple[str, str], tuple[int, str]] = {(RV1103B_RV1106B, "int8"): (8, "c2-8")}


def input_width_align(target: str, first_layer: str, channels: int) -> tuple[int, str] | None:
    """The observed width alignment and the deviation's key, where it differs from the seed."""
    return _INPUT_WIDTH_ALIGN.get((platform_of(target), first_layer, channels))


def c2_observed(target: str, precision: str) -> tuple[int, str] | None:
    return _C2.get((platform_of(target), precision))


# Ops rknn-toolkit2 2.5.0 fuses into the convolution that feeds them (the compiled graph's last
# op is then Conv or ConvSigmoid: deviation fused-last-op). Relu is fused the same way in the
# grid's first layer.
_FUSED_INTO_CONV = ("Add", "Relu")


def last_op_kind(target: str, op_type: str, feeders: tuple[str, ...]) -> str:
    """``conv``, ``conv_sigmoid`` or ``other``: what the compiled graph's last op is, for an
    output produced by ``op_type`` whose inputs come from ``feeders``."""
    if op_type in CONV_OPS:
        return "conv"
    fed_by_conv = any(f in CONV_OPS for f in feeders)
    if op_type in _FUSED_INTO_CONV and fed_by_conv:
        return "conv"
    sigmoid_fused = platform_of(target) not in (RK2118, RV1103B_RV1106B)  # deviation fused-last-op
    if op_type == "Sigmoid" and fed_by_conv and sigmoid_fused:
        return "conv_sigmoid"
    return "other"


def npu_input_types(target: str) -> frozenset[str]:
    """Declared input types whose mean/scale/quantization runs on the NPU: the input table's
    NPU rows, plus int8 where it is the compiler's default input (deviation int8-default-input)."""
    types = {
        t
        for row in input_rows(target)
        if row.mean_scale_on == "NPU" and row.input_types != "any"
        for t in row.input_types
    }
    if deviation("int8-default-input").applies_to(target) and "uint8" in types:
        types.add("int8")
    return frozenset(types)


def flat_output_align(target: str, dtype_name: str) -> int:
    """The byte multiple a flat (rank 1 to 3) output's size is rounded up to (flat-output-size)."""
    return 8 if platform_of(target) == RK3566_RK3568 and dtype_name != "int64" else 64


_FLAT_INPUT_ALIGN = {
    RK3566_RK3568: 8,
    RK3588: 16,
    RK3562: 64,
    RK3576_RV1126B: 16,
    RV1103_RV1106: 16,
    RV1103B_RV1106B: 8,
    RK2118: 8,
}


def flat_input_align(target: str) -> int:
    """The byte multiple a flat (rank 1 to 3) input's size is rounded up to."""
    return _FLAT_INPUT_ALIGN[platform_of(target)]


def softmax_last_axis_align(target: str) -> int:
    """The multiple a flat Softmax output's last axis is padded to (1: not padded)."""
    return 4 if deviation("softmax-last-axis").applies_to(target) else 1


def output_type(target: str, precision: str, op_type: str, graph_dtype: str) -> str:
    """The type the compiler gives an output produced by ``op_type``: int64 for an index
    output, float16 for an int8 model's Softmax (where observed), else the model's precision."""
    if op_type in ("ArgMax", "ArgMin", "TopK") and graph_dtype == "int64":
        return "int64"
    softmax_fp16 = deviation("softmax-output-type").applies_to(target)
    if precision == "int8" and op_type == "Softmax" and softmax_fp16:
        return "float16"
    return "int8" if precision == "int8" else "float16"
