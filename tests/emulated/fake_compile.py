"""A stand-in for the RKNN compiler, for the regression suite on emulated boards: for each
reference model the RKNN layout cases deploy, a model file the fake ``librknnrt`` serves, and the
manifest that lists them per target.

What a compiled model is to the runtime is the attributes ``rknn_query`` reports for it. This
writes them as the runtimes reported them for models compiled by rknn-toolkit2 2.5.0 (the
observations: the native input NHWC when C is 1, 3 or 4, else NC1HWC2; NC1HWC2 outputs with the
H*W plane padded to 4 and flattened when it is not; NHWC outputs with their channels as
reported), through the codec's prediction for the target, which is held to those observations
(``npu-hil targets observed``). Then the fake copies input to output through those attributes
with its own loops (``FAKE-RKNN-DESCRIBED`` in ``tests/adapters/fakes/fake_rknnrt.c``).

Only models that are an identity can be served so: anything that needs real arithmetic (a
convolution) has no artifact here, and the suite's cases for it are skipped with the reason.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import onnx

from npu_hil.harness.codec import get_layout
from npu_hil.harness.models import build
from npu_hil.targets.quant import Affine
from npu_hil.targets.rockchip.sim import tensor_attr

FMT = {"NCHW": 0, "NHWC": 1, "NC1HWC2": 2, "UNDEFINED": 3}
TYPE = {"FLOAT32": 0, "FLOAT16": 1, "INT8": 2, "UINT8": 3}
QNT = {"NONE": 0, "DFP": 1, "AFFINE_ASYMMETRIC": 2}
SERVED = ("identity",)
"""Reference models the fake runtime computes honestly (a copy through the layouts)."""

# An image input (uint8, mean 0, scale 1 into the int8 first layer: zp -128) and an int8 output
# with the same scale: the identity is exact, x - 128.
INPUT_QUANT = Affine(-128, 1.0, np.dtype("int8"))
OUTPUT_QUANT = Affine(-128, 1.0, np.dtype("int8"))


def native_input_layout(shape: tuple[int, ...]) -> str:
    """The runtime's native input layout for a 4-D NCHW model input (observed on every
    platform but RK2118): NHWC when C is 1, 3 or 4, else NC1HWC2."""
    return "NHWC" if shape[1] in (1, 3, 4) else "NC1HWC2"


def _line(query: str, attr: dict[str, object]) -> str:
    dims = ",".join(str(int(d)) for d in attr["dims"])  # type: ignore[attr-defined]
    fields = {
        "name": attr["name"],
        "fmt": FMT[str(attr["fmt"])],
        "type": TYPE[str(attr["type"])],
        "qnt_type": QNT[str(attr["qnt_type"])],
        "zp": attr["zp"],
        "scale": repr(float(attr["scale"])),  # type: ignore[arg-type]
        "dims": dims,
        "n_elems": attr["n_elems"],
        "size": attr["size"],
        "w_stride": attr["w_stride"],
        "size_with_stride": attr["size_with_stride"],
    }
    return query + " " + " ".join(f"{k}={v}" for k, v in fields.items())


def _logical(name: str, shape: tuple[int, ...], dtype: str, quant: Affine) -> dict[str, object]:
    n = int(np.prod(shape))
    return {
        "name": name,
        "fmt": "NCHW",
        "type": dtype,
        "qnt_type": "AFFINE_ASYMMETRIC",
        "zp": quant.zero_point,
        "scale": quant.scale,
        "dims": list(shape),
        "n_elems": n,
        "size": n,
        "w_stride": 0,
        "size_with_stride": n,
    }


def describe_identity(target: str, shape: tuple[int, ...], names: tuple[str, str]) -> str:
    """The model file of an int8 identity compiled for ``target`` at ``shape``."""
    in_name, out_name = names
    fmt = native_input_layout(shape)
    native_in = get_layout(target, fmt, shape, np.uint8, role="input")
    nhwc_in = get_layout(target, "NHWC", shape, np.uint8, role="input")
    native_out = get_layout(target, "NC1HWC2", shape, np.int8, role="output", last_op="other")
    nhwc_out = get_layout(target, "NHWC", shape, np.int8, role="output", last_op="other")
    lines = [
        "FAKE-RKNN-DESCRIBED",
        _line("INPUT_ATTR", _logical(in_name, shape, "UINT8", INPUT_QUANT)),
        _line("OUTPUT_ATTR", _logical(out_name, shape, "INT8", OUTPUT_QUANT)),
        _line("NATIVE_INPUT_ATTR", tensor_attr(0, in_name, native_in, INPUT_QUANT, False)),
        _line("NATIVE_NHWC_INPUT_ATTR", tensor_attr(0, in_name, nhwc_in, INPUT_QUANT, False)),
        _line("NATIVE_OUTPUT_ATTR", tensor_attr(0, out_name, native_out, OUTPUT_QUANT, False)),
        _line("NATIVE_NHWC_OUTPUT_ATTR", tensor_attr(0, out_name, nhwc_out, OUTPUT_QUANT, False)),
    ]
    return "\n".join(lines) + "\n"


def rknn_container(text: str, target: str) -> bytes:
    """``text`` as the model data of a file in the real ``.rknn`` container (the layout
    ``npu_hil.targets.rockchip.artifact`` reads), so the harness's compatibility check reads it as
    any compiled model: built for ``target``, by no toolkit version (a fake compile step is no
    toolkit: the check reports the pairing with the runtime as unknown)."""
    data = text.encode()
    header = b"RKNN" + bytes(4) + struct.pack("<QQ", 6, len(data))
    info = json.dumps({"name": "fake compile step", "target_platform": [target]}).encode()
    return header.ljust(64, b"\0") + data + struct.pack("<Q", len(info)) + info


def compile_manifest(
    folder: Path, targets: tuple[str, ...], shapes: tuple[tuple[int, ...], ...]
) -> Path:
    """The reference ONNX of every served model at every shape, its fake compiled model per
    target, and ``manifest.json`` listing them (one entry per model and shape)."""
    folder.mkdir(parents=True, exist_ok=True)
    models: dict[str, dict[str, object]] = {}
    for name in SERVED:
        for shape in shapes:
            stem = f"{name}-{'x'.join(map(str, shape))}"
            proto = build(name, shape)
            onnx_path = folder / f"{stem}.onnx"
            onnx.save_model(proto, str(onnx_path))
            names = (proto.graph.input[0].name, proto.graph.output[0].name)
            artifacts = {}
            for target in targets:
                path = folder / f"{stem}.{target}.rknn"
                path.write_bytes(rknn_container(describe_identity(target, shape, names), target))
                artifacts[target] = path.name
            models[stem] = {"onnx": onnx_path.name, "artifacts": artifacts}
    manifest = folder / "manifest.json"
    manifest.write_text(json.dumps({"version": 1, "models": models}, indent=2) + "\n")
    return manifest
