"""A small grid of models compiled by rknn-toolkit2 for every Rockchip target, and the codec's
predictions held against what the compiler stored.

Per target and precision the compiler allows: a 3x3 conv on a 3-channel input (NHWC, width 17
exercises w_stride; a conv as the last layer), a 3x3 conv on 16 channels (NC1HWC2, width 15: H*W
not a multiple of 4) and Add+Relu on two 17-channel inputs (17 exercises the C2 padding, an
"other" last op, width 16). Plus one RK2118 int8 conv, which aborts the compiler. Each model is a
child process that imports the whole toolkit (about 5 s of CPU), hence three per target.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Any

import numpy as np

from npu_hil.harness.codec import get_layout
from npu_hil.harness.errors import LayoutError
from npu_hil.harness.models import build
from npu_hil.harness.models.compile_set import graph_of
from npu_hil.targets import rockchip
from npu_hil.targets.rockchip.artifact import NativeTensor
from npu_hil.targets.rockchip.compiler.build import (
    BuildFailure,
    BuildJob,
    BuildResult,
    build_all,
    precisions,
    write_calibration,
)

H = 3
MODELS: tuple[tuple[str, int, int, str], ...] = (
    # (reference model, C, W, last op as the codec names it)
    ("conv3x3", 3, 17, "conv"),
    ("conv3x3", 16, 15, "conv"),
    ("add_relu", 17, 16, "other"),
)
EXTRA: tuple[tuple[str, str, str, int, int, str], ...] = (
    # fp16 C = 4 inputs, where the compiler and librknnrt 1.6.0 disagree on the row stride
    ("rk3566", "float16", "conv3x3", 4, 17, "conv"),
    ("rk3568", "float16", "conv3x3", 4, 17, "conv"),
)
ABORTING = ("rk2118", "int8", "conv3x3", 3, 17)
"""rknn-toolkit2 2.5.0 aborts (SIGABRT) on an RK2118 int8 conv: "Meet unsupported conv"."""
PARALLEL = 2


@dataclass(frozen=True)
class Model:
    target: str
    precision: str
    model: str
    shape: tuple[int, int, int, int]
    last_op: str

    @property
    def label(self) -> str:
        return f"{self.target}/{self.precision}/{self.model}/{'x'.join(map(str, self.shape))}"


@dataclass(frozen=True)
class Grid:
    built: dict[Model, BuildResult]
    failed: dict[Model, BuildFailure]


def grid_models() -> list[Model]:
    models = [
        Model(target, precision, name, (1, c, H, w), last)
        for target in rockchip.TARGETS
        for precision in precisions(target)
        for name, c, w, last in MODELS
    ]
    models += [Model(t, p, name, (1, c, H, w), last) for t, p, name, c, w, last in EXTRA]
    target, precision, name, c, w = ABORTING
    models.append(Model(target, precision, name, (1, c, H, w), "conv"))
    return models


def compile_grid(out: Path) -> Grid:
    jobs: list[BuildJob] = []
    models = grid_models()
    for model in models:
        key = f"{model.model}-{'x'.join(map(str, model.shape))}"
        proto = build(model.model, model.shape)
        onnx_path = out / "onnx" / f"{key}.onnx"
        if not onnx_path.is_file():
            onnx_path.parent.mkdir(parents=True, exist_ok=True)
            onnx_path.write_bytes(proto.SerializeToString())
        graph, inputs = graph_of(proto)
        calibration = out / "calibration" / key
        samples = write_calibration(calibration, {n: graph[n] for n in inputs}, samples=2)
        jobs.append(
            BuildJob(
                key=key,
                onnx=onnx_path,
                target=model.target,
                precision=model.precision,
                rknn=out / model.target / model.precision / f"{key}.rknn",
                graph=graph,
                inputs=inputs,
                dataset=tuple(samples) if model.precision == "int8" else (),
            )
        )
    outcomes = build_all(jobs, parallel=PARALLEL)
    built = {m: o for m, o in zip(models, outcomes, strict=True) if isinstance(o, BuildResult)}
    failed = {m: o for m, o in zip(models, outcomes, strict=True) if isinstance(o, BuildFailure)}
    return Grid(built, failed)


# --- the codec's predictions against the compiler ------------------------------------------------


@dataclass(frozen=True)
class Mismatch:
    model: Model
    tensor: str
    shape: tuple[int, ...]
    role: str
    layout: str
    field: str
    compiler: Any
    codec: Any

    def __str__(self) -> str:
        return (
            f"{self.model.label} {self.role} {self.tensor} ({self.layout}) {self.field}: "
            f"compiler {self.compiler}, codec {self.codec}"
        )


def input_layout(channels: int) -> str:
    """The compiler's native input: NHWC for C in {1, 3, 4}, else NC1HWC2 (observations)."""
    return "NHWC" if channels in (1, 3, 4) else "NC1HWC2"


def compare(model: Model, result: BuildResult) -> tuple[list[Mismatch], int]:
    """Every field on which the codec and the compiler differ, and how many fields were held."""
    dtype = np.dtype(model.precision)
    mismatches: list[Mismatch] = []
    held = 0
    tensors = [("input", t) for t in result.inputs] + [("output", t) for t in result.outputs]
    for role, tensor in tensors:
        layout = input_layout(tensor.shape[1]) if role == "input" else "NC1HWC2"
        expected = compiler_fields(tensor, layout, dtype)
        try:
            params: dict[str, Any] = (
                {"first_layer": model.precision} if role == "input" else {"last_op": model.last_op}
            )
            attributes = get_layout(
                model.target, layout, tensor.shape, dtype, role=role, **params
            ).attributes
        except LayoutError as exc:
            held += len(expected)
            mismatches.append(
                Mismatch(
                    model,
                    tensor.name,
                    tensor.shape,
                    role,
                    layout,
                    "refused",
                    "compiles",
                    exc.message,
                )
            )
            continue
        for field, value in expected.items():
            held += 1
            predicted = codec_field(attributes, field)
            if predicted != value:
                mismatches.append(
                    Mismatch(
                        model, tensor.name, tensor.shape, role, layout, field, value, predicted
                    )
                )
    return mismatches, held


def compiler_fields(tensor: NativeTensor, layout: str, dtype: np.dtype) -> dict[str, Any]:
    """What the compiler stored, in the codec's attribute names. An NHWC input is stored as
    ``[N, 1, H, W, C]`` with the row stride only in the size."""
    native = list(tensor.native)
    if layout == "NHWC":
        n, c, h, _ = tensor.shape
        stride, rest = divmod(tensor.size, n * h * c * dtype.itemsize)
        return {
            "dims": [native[0], native[2], native[3], native[4]],
            "w_stride": stride if not rest else tensor.size / (n * h * c * dtype.itemsize),
            "size_with_stride": tensor.size,
        }
    size_field = "size_with_stride" if tensor.role == "input" else "size"
    return {"native_dims": native, "c2": native[-1], size_field: tensor.size}


def codec_field(attributes: dict[str, Any], field: str) -> Any:
    value = attributes.get(field)
    return list(value) if isinstance(value, (list, tuple)) else value


# --- the expected skew: where the codec rightly differs from the compiler -------------------------


@dataclass(frozen=True)
class Skew:
    """A difference the codec keeps on purpose, with the observation that justifies it."""

    name: str
    applies: Callable[[Mismatch], bool]
    observation: str


def _plane_padded(m: Mismatch) -> bool:
    return m.shape[2] * m.shape[3] % 4 != 0


def _plane_padded_size(m: Mismatch) -> int:
    """The runtime's size (the codec's) with each H*W plane padded to a multiple of 4."""
    plane = m.shape[2] * m.shape[3]
    return int(m.codec) // plane * (-(-plane // 4) * 4)


def _flattened_plane(m: Mismatch) -> bool:
    """The codec's native dims are the compiler's with the H*W plane flattened and padded to 4:
    ``[N, C1, 1, ceil4(H*W), C2]`` for ``[N, C1, H, W, C2]`` (the same bytes)."""
    if m.field != "native_dims" or not _plane_padded(m):
        return False
    n, c1, h, w, c2 = (int(v) for v in m.compiler)
    return list(m.codec) == [n, c1, 1, -(-(h * w) // 4) * 4, c2]


EXPECTED_SKEW: tuple[Skew, ...] = (
    Skew(
        "flattened-output-plane",
        lambda m: m.role == "output" and m.layout == "NC1HWC2" and _flattened_plane(m),
        "observations (rknn/observed.json.gz): where H*W is not a multiple of 4 every runtime "
        "reports NATIVE_OUTPUT_ATTR dims flattened, [N, C1, 1, ceil4(H*W), C2] (624 of 780 "
        "models); the compiler's tensor table states [N, C1, H, W, C2], the same bytes. The "
        "codec follows the runtime (npu_hil/targets/rockchip/observed.py: flattened-plane).",
    ),
    Skew(
        "nc1hwc2-input-plane-padding",
        lambda m: (
            m.role == "input"
            and m.layout == "NC1HWC2"
            and m.field == "size_with_stride"
            and _plane_padded(m)
            and m.compiler == _plane_padded_size(m)
        ),
        "observations (rknn/observed.json.gz): the compiler reserves an NC1HWC2 input's H*W "
        "plane padded to 4 (C = 16, 3x15: 768 bytes), the runtimes report C1*H*W*C2 (720, "
        "NATIVE_INPUT_ATTR on every runtime platform); RK3576 / RV1126B, which no runtime "
        "knows, follow the runtimes' rule. The codec follows the runtime.",
    ),
    Skew(
        "rk3566-rk3568-fp16-c4-input-rows",
        lambda m: (
            m.model.target in ("rk3566", "rk3568")
            and m.model.precision == "float16"
            and m.role == "input"
            and m.layout == "NHWC"
            and m.model.shape[1] == 4
            and m.field in ("w_stride", "size_with_stride")
        ),
        "observations README: RK3566/RK3568 fp16 input with C = 4 - librknnrt 1.6.0 reports "
        "w_stride == W; the compiler reserves padded rows (a compiler/runtime skew). The codec "
        "follows the runtime.",
    ),
)


def classify(mismatches: list[Mismatch]) -> tuple[dict[str, list[Mismatch]], list[Mismatch]]:
    """(mismatches per expected skew, mismatches no skew explains)."""
    explained: dict[str, list[Mismatch]] = {s.name: [] for s in EXPECTED_SKEW}
    unexplained: list[Mismatch] = []
    for m in mismatches:
        skew = next((s for s in EXPECTED_SKEW if s.applies(m)), None)
        if skew is None:
            unexplained.append(m)
        else:
            explained[skew.name].append(m)
    return explained, unexplained


# --- the compiler's build log, a second reading of the same facts ---------------------------------

_ROW = re.compile(
    r"^\S+ RKNN: \[[^\]]*\]\s+\d+\s+(?P<user>\S+)\s+(?P<tensor>\S+)\s+(?P<dtype>\S+)\s+"
    r"(?P<fmt>\S+)\s+\((?P<orig>[\d,]+)\)\s+\((?P<native>[\d,]+)\)\s*\|\s*\S+\s*\S+\s+"
    r"(?P<size>0x[0-9a-fA-F]+)\s*$"
)


def log_rows(log: Path) -> dict[tuple[str, str], tuple[list[int], int]]:
    """The build log's Feature Tensor Information rows for the model's inputs (first row of
    each tensor) and outputs (the OutputOperator's row): (role, name) → (native, size)."""
    rows: dict[tuple[str, str], tuple[list[int], int]] = {}
    in_table = False
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if "Feature Tensor Information Table" in line:
            in_table = True
            continue
        if in_table and "Const Tensor Information Table" in line:
            break
        match = _ROW.match(line.strip()) if in_table else None
        if match is None:
            continue
        native = [int(v) for v in match["native"].split(",")]
        role = "output" if match["user"] == "OutputOperator" else "input"
        rows.setdefault((role, match["tensor"]), (native, int(match["size"], 16)))
    return rows


def nbytes(tensor: NativeTensor) -> int:
    return prod(tensor.shape) * np.dtype(tensor.dtype).itemsize
