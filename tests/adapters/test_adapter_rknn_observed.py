"""Both RKNN adapters driven by attribute sets real runtimes reported
(``data/rknn_observed_records.json``, records of the shared observations: librknnrt 1.6.0 and
librknnmrt 2.3.2 on models compiled by rknn-toolkit2 2.5.0): flattened NC1HWC2 output dims, NHWC
inputs with ``w_stride`` > W, NC1HWC2 inputs with C2 16 and 8, float16. The fakes report exactly
these attributes; the adapters must hand back the device's bytes and the attributes unchanged."""

from __future__ import annotations

import ctypes
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.board.adapters import rknn_native, rknnlite
from npu_hil.harness.board.adapters.base import InputTensor

RECORDS = json.loads((Path(__file__).parent / "data" / "rknn_observed_records.json").read_text())
IDS = [r["id"] for r in RECORDS]
QUERIES = {
    "INPUT_ATTR": rknn_native.RKNN_QUERY_INPUT_ATTR,
    "OUTPUT_ATTR": rknn_native.RKNN_QUERY_OUTPUT_ATTR,
    "NATIVE_INPUT_ATTR": rknn_native.RKNN_QUERY_NATIVE_INPUT_ATTR,
    "NATIVE_OUTPUT_ATTR": rknn_native.RKNN_QUERY_NATIVE_OUTPUT_ATTR,
    "NATIVE_NHWC_INPUT_ATTR": rknn_native.RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR,
    "NATIVE_NHWC_OUTPUT_ATTR": rknn_native.RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR,
}
NUMPY = {0: "float32", 1: "float16", 2: "int8", 3: "uint8", 4: "int16"}


def c_attr(fields: dict[str, Any]) -> rknn_native.RknnTensorAttr:
    """The observed answer as the runtime's struct (the layout is held to the ABI facts)."""
    attr = rknn_native.RknnTensorAttr()
    attr.index = 0
    attr.n_dims = fields["n_dims"]
    for i, d in enumerate(fields["dims"]):
        attr.dims[i] = d
    attr.name = fields["name"].encode()
    for key in ("n_elems", "size", "fmt", "type", "qnt_type", "zp", "scale", "w_stride"):
        setattr(attr, key, fields[key])
    for key in ("size_with_stride", "pass_through", "h_stride"):
        setattr(attr, key, fields[key])
    return attr


def pattern(inp: bytes, n: int) -> bytes:
    """What the fakes' "device" writes: byte i is (in[i % len] + 7 i + 1) & 0xff."""
    src = np.frombuffer(inp, dtype=np.uint8).astype(np.int64)
    i = np.arange(n, dtype=np.int64)
    return ((src[i % src.size] + 7 * i + 1) & 0xFF).astype(np.uint8).tobytes()


def as_reported(fields: dict[str, Any]) -> dict[str, Any]:
    """The adapter's record of an attribute: the header's names, enums by name."""
    return {
        "index": 0,
        "n_dims": fields["n_dims"],
        "dims": fields["dims"],
        "name": fields["name"],
        "n_elems": fields["n_elems"],
        "size": fields["size"],
        "fmt": rknn_native.TENSOR_FORMATS[fields["fmt"]],
        "type": rknn_native.TENSOR_TYPES[fields["type"]],
        "qnt_type": rknn_native.QNT_TYPES[fields["qnt_type"]],
        "fl": 0,
        "zp": fields["zp"],
        "scale": float(np.float32(fields["scale"])),
        "w_stride": fields["w_stride"],
        "size_with_stride": fields["size_with_stride"],
        "pass_through": fields["pass_through"],
        "h_stride": fields["h_stride"],
    }


def alloc(fields: dict[str, Any]) -> int:
    return int(fields["size_with_stride"] or fields["size"])


def test_the_records_show_what_they_are_chosen_for() -> None:
    native_out = [r["runtime"]["NATIVE_OUTPUT_ATTR"] for r in RECORDS]
    assert all(a["dims"][2] == 1 and a["dims"][3] % 4 == 0 for a in native_out)  # flattened
    native_in = [r["runtime"]["NATIVE_INPUT_ATTR"] for r in RECORDS]
    assert any(a["fmt"] == 1 and a["w_stride"] > a["dims"][2] for a in native_in)
    assert {a["dims"][4] for a in native_in if a["fmt"] == 2} == {8, 16}
    assert {r["platform"] for r in RECORDS} >= {"rk3588", "rk3566", "rv1106"}
    assert any(r["prec"] == "fp" for r in RECORDS)


@pytest.mark.parametrize("output_query", ["native", "native_nhwc"])
@pytest.mark.parametrize("record", RECORDS, ids=IDS)
def test_rknn_native_hands_back_the_device_bytes_and_attributes(
    rknnrt: Any,
    fake_libs: dict[str, Path],
    tmp_path: Path,
    record: dict[str, Any],
    output_query: str,
) -> None:
    rt = record["runtime"]
    for key, cmd in QUERIES.items():
        assert rknnrt.fake_rknn_set_attr(cmd, ctypes.byref(c_attr(rt[key]))) == 0
    model_path = tmp_path / "observed.rknn"
    model_path.write_text("FAKE-RKNN")
    a = rknn_native.ADAPTER({"library": str(fake_libs["rknnrt"]), "output_query": output_query})
    model = a.load(str(model_path))
    n_in = alloc(rt["NATIVE_INPUT_ATTR"])
    sent = np.random.default_rng(len(record["id"])).integers(0, 256, n_in, dtype=np.uint8)
    inp = InputTensor(
        "input",
        sent,
        rknn_native.TENSOR_FORMATS[rt["NATIVE_INPUT_ATTR"]["fmt"]],
        [1, record["cin"], record["h"], record["w"]],
        NUMPY[rt["NATIVE_INPUT_ATTR"]["type"]],
        True,
    )
    result = a.run(model, [inp], None)

    (back,) = result.inputs
    assert back.data.tobytes() == sent.tobytes()
    assert {k: back.attributes[k] for k in as_reported(rt["NATIVE_INPUT_ATTR"])} == as_reported(
        rt["NATIVE_INPUT_ATTR"]
    )
    out_key = "NATIVE_OUTPUT_ATTR" if output_query == "native" else "NATIVE_NHWC_OUTPUT_ATTR"
    (out,) = result.outputs
    want = as_reported(rt[out_key])
    assert {k: out.attributes[k] for k in want} == want
    assert out.attributes["logical_attr"] == as_reported(rt["OUTPUT_ATTR"])
    assert (out.layout, out.shape) == (want["fmt"], want["dims"])
    assert out.data.tobytes() == pattern(sent.tobytes(), alloc(rt[out_key]))
    a.release(model)
    assert rknnrt.fake_rknn_live_mems() == 0


def dense_rows(raw: np.ndarray, dims: list[int], w_stride: int, itemsize: int) -> bytes:
    """Rows of w_stride pixels -> rows of W (what the normal API checks against attr.size)."""
    n, h, w, c = dims
    return raw.reshape(n, h, w_stride, c * itemsize)[:, :, :w, :].tobytes()


@pytest.mark.parametrize("record", RECORDS, ids=IDS)
def test_rknnlite_feeds_pass_through_as_the_runtime_reports_it(
    fake_modules: Path, tmp_path: Path, record: dict[str, Any]
) -> None:
    import rknnlite.api as fake

    rt = record["runtime"]
    native = rt["NATIVE_INPUT_ATTR"]
    dtype = NUMPY[native["type"]]
    itemsize = np.dtype(dtype).itemsize
    model_path = tmp_path / "observed.rknn"
    model_path.write_text("FAKE-RKNN-ATTRS " + json.dumps(rt))
    layout = rknn_native.TENSOR_FORMATS[native["fmt"]]
    options: dict[str, Any] = {}
    if layout == "NHWC":
        # What the host codec packs: rows of w_stride (size_with_stride bytes).
        packed = np.random.default_rng(3).integers(
            0, 256, native["size_with_stride"], dtype=np.uint8
        )
        device_sees = dense_rows(packed, native["dims"], native["w_stride"], itemsize)
    else:
        packed = np.random.default_rng(4).integers(0, 256, native["size"], dtype=np.uint8)
        device_sees = packed.tobytes()
        options["native_dims"] = {"input": native["dims"]}
    a = rknnlite.ADAPTER(options)
    model = a.load(str(model_path))
    inp = InputTensor(
        "input", packed, layout, [1, record["cin"], record["h"], record["w"]], dtype, True
    )
    (out,) = a.run(model, [inp], None).outputs

    (call,) = [args for method, args in fake.CALLS if method == "inference"]
    (fed,) = call["inputs"]
    # The model input's rank (RKNNLite 2.5.0 refuses any other, the native 5-D dims too).
    assert fed.ndim == rt["INPUT_ATTR"]["n_dims"] and fed.nbytes == native["size"]
    assert fed.tobytes() == device_sees
    want = fake.pattern_output(device_sees, rt["OUTPUT_ATTR"])
    assert (out.dtype, out.shape) == ("float32", rt["OUTPUT_ATTR"]["dims"])
    assert out.data.tobytes() == want.tobytes()
    a.release(model)
