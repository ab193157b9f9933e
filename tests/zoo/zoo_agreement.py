"""The zoo's compiled tensor tables (rknn-toolkit2, ``tests/data/zoo/rknn_zoo.json.gz``) against
what a simulated board of the same target lays out for the same model.

A record is one (model, target, precision) the compiler was given. The simulated board loads the
zoo's ONNX model with that precision and runs it once on the model's native input types (int8
for an int8 build, float16 for a float16 one: what the compiler declares); each input and output
it holds is compared field by field with the compiler's entry. Half of the records (by a hash of
their key) are held out: the rules were read off the other half.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from functools import cache
from math import prod
from pathlib import Path
from typing import Any

import numpy as np
from zoo_inputs import SAMPLES, TEST_SAMPLES, samples
from zoo_models import BUILDERS

from npu_hil.harness.diff.accuracy import measure
from npu_hil.harness.models.reference import reference_outputs
from npu_hil.harness.sim import SimInput, SimNpu, SimRefusal, SimTensor

DATA = Path(__file__).resolve().parents[1] / "data" / "zoo" / "rknn_zoo.json.gz"
ALL_TARGETS = {
    # every Rockchip target, by the group member the zoo was compiled for
    "rk3566": ("rk3566", "rk3568"),
    "rk3588": ("rk3588",),
    "rk3562": ("rk3562",),
    "rk3576": ("rk3576", "rv1126b"),
    "rv1106": ("rv1103", "rv1106"),
    "rv1106b": ("rv1103b", "rv1106b"),
    "rk2118": ("rk2118",),
}


@cache
def document() -> dict[str, Any]:
    with gzip.open(DATA, "rt", encoding="utf-8") as stream:
        loaded: dict[str, Any] = json.load(stream)
    return loaded


def records() -> list[dict[str, Any]]:
    return list(document()["records"])


def key(record: dict[str, Any]) -> str:
    return f"{record['model']}/{record['target']}/{record['precision']}"


def held_out(record: dict[str, Any]) -> bool:
    """The half the rules were not read from: an even first byte of the key's sha256."""
    return hashlib.sha256(key(record).encode()).digest()[0] % 2 == 0


@dataclass(frozen=True)
class Difference:
    record: str
    tensor: str
    field: str
    compiler: Any
    simulated: Any

    def __str__(self) -> str:
        return (
            f"{self.record} {self.tensor} {self.field}: compiler {self.compiler}, "
            f"simulated board {self.simulated}"
        )


@cache
def _model(name: str) -> Any:
    return BUILDERS[name]()


def simulated_run(record: dict[str, Any], target: str | None = None) -> Any:
    """One run of the record's model on a simulated board (SimRefusal when it refuses)."""
    proto = _model(record["model"])
    npu = SimNpu(target or record["target"], precision=record["precision"])
    loaded = npu.load(proto)
    native = np.dtype("int8" if record["precision"] == "int8" else "float16")
    shapes = {t.name: tuple(int(d or 1) for d in t.shape) for t in loaded.graph.inputs}
    (arrays,) = samples(shapes, 1, seed=2)
    given = []
    for name, array in arrays.items():
        if native == np.dtype("int8"):
            array = np.clip(np.rint(array * 32), -128, 127)
        given.append(SimInput.logical(name, array.astype(native)))
    return npu.run(loaded, given)


def _fields(tensor: dict[str, Any]) -> dict[str, Any]:
    return {"dtype": tensor["dtype"], "size": tensor["size"], "native": list(tensor["native"])}


def _simulated_fields(tensor: Any) -> dict[str, Any]:
    attrs = tensor.attributes
    dims = list(attrs["dims"])
    if attrs["fmt"] == "NHWC" and tensor.role == "input":
        dims = [dims[0], 1, *dims[1:]]  # the compiler stores NHWC inputs as [N, 1, H, W, C]
    size = attrs["size_with_stride"] if tensor.role == "input" else attrs["size"]
    return {"dtype": tensor.codec_layout.dtype.name, "size": size, "native": dims}


def compare(record: dict[str, Any], target: str | None = None) -> tuple[list[Difference], int]:
    """The fields where the simulated board differs from the compiler, and how many were held."""
    label = key(record) if target is None else f"{key(record)} as {target}"
    wanted = {t["name"]: _fields(t) for t in (*record["inputs"], *record["outputs"])}
    held = sum(len(f) for f in wanted.values())
    try:
        run = simulated_run(record, target)
    except SimRefusal as exc:
        return [Difference(label, "*", "refused", "builds", exc.message)], held
    got = {t.name: _simulated_fields(t) for t in (*run.inputs, *run.outputs)}
    differences = []
    for name, fields in wanted.items():
        for field, value in fields.items():
            seen = got.get(name, {}).get(field)
            if seen != value and not _same_bytes(field, value, seen, fields):
                differences.append(Difference(label, name, field, value, seen))
    return differences, held


def _same_bytes(field: str, compiler: Any, simulated: Any, fields: dict[str, Any]) -> bool:
    """The runtime's flattened NC1HWC2 output dims ``[N, C1, 1, ceil4(H*W), C2]`` for the
    compiler's ``[N, C1, H, W, C2]`` (deviation flattened-plane: the runtime is followed)."""
    if field != "native" or simulated is None or len(compiler) != 5 or len(simulated) != 5:
        return False
    n, c1, h, w, c2 = compiler
    return list(simulated) == [n, c1, 1, -(-(h * w) // 4) * 4, c2] and prod(compiler) > 0


# ------------------------------------------------------------------------------ accuracy

BOARD = {"int8": "rk3588", "float16": "rk3588"}
"""The board the accuracy comparison runs on, per precision (the toolkit's figures are kept for
every group; its simulator gives the same on each)."""


def _values(tensor: SimTensor) -> np.ndarray:
    """What the device's output buffer means: unpacked, dequantized."""
    stored = tensor.codec_layout.unpack(tensor.data).astype(np.float64)
    attrs = tensor.attributes
    if attrs.get("qnt_type") == "AFFINE_ASYMMETRIC":
        stored = (stored - attrs["zp"]) * attrs["scale"]
    return stored


def simulated_snr(
    model: str, precision: str, numerics: str = "auto", tests: int = TEST_SAMPLES
) -> list[float | None]:
    """Per output, a simulated board's SNR against the float model on the zoo's test samples,
    calibrated on its calibration samples (what the toolkit's figures were measured on)."""
    proto = BUILDERS[model]()
    npu = SimNpu(BOARD[precision], precision=precision, numerics=numerics)
    loaded = npu.load(proto)
    shapes = {t.name: tuple(int(d or 1) for d in t.shape) for t in loaded.graph.inputs}
    npu.calibrate(loaded, samples(shapes, SAMPLES, seed=1))
    count = tests
    tests = samples(shapes, TEST_SAMPLES, seed=2)[:count]
    got: dict[str, list[np.ndarray]] = {}
    want: dict[str, list[np.ndarray]] = {}
    for sample in tests:
        run = npu.run(loaded, [SimInput.logical(k, v) for k, v in sample.items()])
        for tensor in run.outputs:
            got.setdefault(tensor.name, []).append(_values(tensor).ravel())
        for name, value in reference_outputs(proto, sample).items():
            want.setdefault(name, []).append(np.asarray(value).ravel())
    figures: list[float | None] = []
    for output in proto.graph.output:
        reference = np.concatenate(want[output.name])
        if not np.issubdtype(reference.dtype, np.floating):
            figures.append(None)
            continue
        device = np.concatenate(got[output.name])
        figures.append(round(measure(device, reference.astype(np.float64)).snr_db, 2))
    return figures
