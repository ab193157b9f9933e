"""The simulated RKNN boards answer as Rockchip's runtimes did (tests/data/rknn/observed.json.gz):
a model of the observed grid run on the simulator reports the native input and output
attributes the vendor's runtime reported for it (flattened NC1HWC2 dims, int8 default inputs on
RV1103/RV1106, every deviation from the seed), so a desk run goes through the path a board takes.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sim_helpers import random_tensor, run_sim

from npu_hil.harness.models import build

DATA = Path(__file__).resolve().parents[1] / "data" / "rknn" / "observed.json.gz"
RECORDS: list[dict[str, Any]] = json.loads(gzip.decompress(DATA.read_bytes()))
FMT_NAMES = {0: "NCHW", 1: "NHWC", 2: "NC1HWC2", 3: "UNDEFINED"}
TYPE_NAMES = {1: "FLOAT16", 2: "INT8", 3: "UINT8"}
# Conv-last models: a 3x3 conv to `cout` channels has the same I/O attributes as the grid's
# conv + 1x1 conv (the attributes depend on the input, the output's shape and its last op).
CASES = [
    r
    for r in RECORDS
    if "runtime" in r
    and r["compiled_last_op"] == "Conv"
    and r["last"] == "conv"
    # RK2118's float16 inputs with C > 4 are reported as [1, H, W, 4] with a size too small for
    # the tensor (deviation contradictory-reports): the simulator answers with the NC1HWC2
    # input that can hold it rather than copy a vendor bug.
    and not (r["platform"] == "rk2118" and r["cin"] > 4)
]


def geometry(attrs: dict[str, Any], role: str) -> dict[str, Any]:
    fmt = attrs["fmt"]
    out = {
        "fmt": FMT_NAMES.get(fmt, fmt) if isinstance(fmt, int) else fmt,
        "type": TYPE_NAMES.get(attrs["type"], attrs["type"]),
        "dims": list(attrs["dims"])[: attrs["n_dims"]],
        "n_elems": attrs["n_elems"],
        "size_with_stride" if role == "input" else "size": attrs[
            "size_with_stride" if role == "input" else "size"
        ],
    }
    if role == "input" and out["fmt"] == "NHWC":
        out["w_stride"] = attrs["w_stride"]
        out["size"] = attrs["size"]
    return out


@pytest.mark.parametrize("record", CASES, ids=[r["id"] for r in CASES])
def test_the_simulator_reports_what_the_runtime_reported(record: dict[str, Any]) -> None:
    target = record["platform"]
    precision = "int8" if record["prec"] == "i8" else "float16"
    shape = (1, record["cin"], record["h"], record["w"])
    model = build("conv3x3", shape, out_channels=record["cout"])
    given = {"input": random_tensor(shape, precision, seed=3)}
    run = run_sim(target, model, given, precision=precision)
    runtime = record["runtime"]
    (device_in,) = run.inputs
    (device_out,) = run.outputs
    assert geometry(device_in.attributes, "input") == geometry(
        runtime["NATIVE_INPUT_ATTR"], "input"
    ), record["id"]
    assert geometry(device_out.attributes, "output") == geometry(
        runtime["NATIVE_OUTPUT_ATTR"], "output"
    ), record["id"]
    assert device_out.data.size == runtime["NATIVE_OUTPUT_ATTR"]["size"]


def test_the_grid_covers_flattened_planes_and_int8_inputs_on_rv1106() -> None:
    flattened = [r for r in CASES if r["runtime"]["NATIVE_OUTPUT_ATTR"]["dims"][2] == 1]
    assert len(flattened) > len(CASES) // 2
    rv1106 = [r for r in CASES if r["platform"] == "rv1106"]
    assert rv1106 and all(r["runtime"]["INPUT_ATTR"]["type"] == 2 for r in rv1106)
    assert np.dtype("int8").itemsize == 1
