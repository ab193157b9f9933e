"""``hobot`` against a fake pyeasy_dnn that behaves as the X5 build (hobot-dnn-rdkx5 3.0.6) does:
shapes as pointers to the extension's own hbDNNTensorShape copies, ``.buffer`` 4-D with the
element type the extension picks (float32/int32/int16, else int8 one byte per element) and the
padding left in. Numerical results, each output saying whether its ``.buffer`` can be trusted and
why not, and types whose bytes ``.buffer`` loses refused."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.board.adapters import hobot
from npu_hil.harness.board.adapters.base import AdapterError, InputTensor


def model_file(tmp_path: Path, spec: str = "shape=1,3,4,5 aligned=1,3,4,8 type=int8") -> str:
    path = tmp_path / "model.bin"
    path.write_text(f"FAKE-HBM {spec}")
    return str(path)


def pyeasy() -> Any:
    import hobot_dnn.pyeasy_dnn

    return hobot_dnn.pyeasy_dnn


def logical_input(x: np.ndarray, layout: str = "NCHW") -> InputTensor:
    return InputTensor(
        "data", x.reshape(-1).view(np.uint8), layout, list(x.shape), str(x.dtype), False
    )


def error_of(call: Any, *args: Any) -> AdapterError:
    with pytest.raises(AdapterError) as info:
        call(*args)
    return info.value


def test_unpadded_output_is_faithful(fake_modules: Path, tmp_path: Path) -> None:
    a = hobot.ADAPTER({})
    model = a.load(model_file(tmp_path, "shape=1,3,4,5 aligned=1,3,4,5 type=int8"))
    x = np.arange(60, dtype=np.int8).reshape(1, 3, 4, 5)
    result = a.run(model, [logical_input(x)], None)
    (out,) = result.outputs
    assert (out.name, out.dtype, out.shape, out.layout) == (
        "identity",
        "int8",
        [1, 3, 4, 5],
        "NCHW",
    )
    assert out.data.tobytes() == x.tobytes()
    assert out.attributes["buffer_faithful"] is True
    assert out.attributes["numeric_only"] is True and out.attributes["native_bytes"] is False
    # The real build hands out the shapes as addresses of its own hbDNNTensorShape copies.
    assert out.attributes["validShape"] == [1, 3, 4, 5]
    assert out.attributes["validShape_from"] == "pointer"
    assert isinstance(out.attributes["alignedShape_raw"], int)
    assert out.attributes["scale_data"] == [0.5, 0.5, 0.5]
    assert result.inputs == []
    assert a.versions()["module"] == "hobot_dnn.pyeasy_dnn"
    a.release(model)


def test_padded_and_unsigned_outputs_are_flagged(fake_modules: Path, tmp_path: Path) -> None:
    a = hobot.ADAPTER({})
    model = a.load(model_file(tmp_path, "shape=1,3,4,5 aligned=1,3,4,8 type=uint8"))
    x = np.arange(60, dtype=np.uint8).reshape(1, 3, 4, 5)
    (out,) = a.run(model, [logical_input(x)], None).outputs
    assert out.attributes["buffer_faithful"] is False
    assert out.attributes["alignedShape"] == [1, 3, 4, 8]
    assert len(out.attributes["caveats"]) == 2
    assert "returned as int8, read as uint8" in out.attributes["caveats"][0]
    assert out.dtype == "uint8"  # the extension's int8 bytes, read as what they are
    # What .buffer holds really is the head of the aligned buffer (rows of 8), not the tensor.
    padded = np.zeros((1, 3, 4, 8), np.uint8)
    padded[..., :5] = x
    assert out.data.tobytes() == padded.reshape(-1)[:60].tobytes()
    assert out.data.tobytes() != x.tobytes()


@pytest.mark.parametrize(
    ("ttype", "dtype"), [("float32", "float32"), ("int32", "int32"), ("int16", "int16")]
)
def test_types_the_buffer_keeps(fake_modules: Path, tmp_path: Path, ttype: str, dtype: str) -> None:
    a = hobot.ADAPTER({})
    model = a.load(model_file(tmp_path, f"shape=1,2,3,4 aligned=1,2,3,4 type={ttype}"))
    x = (np.arange(24) - 7).astype(dtype).reshape(1, 2, 3, 4)
    (out,) = a.run(model, [logical_input(x)], None).outputs
    assert (out.dtype, out.shape) == (dtype, [1, 2, 3, 4])
    assert out.data.tobytes() == x.tobytes()
    assert out.attributes["buffer_faithful"] is True and out.attributes["caveats"] == []


@pytest.mark.parametrize("ttype", ["float16", "uint16", "uint32", "float64", "int64", "uint64"])
def test_types_the_buffer_truncates_are_refused(
    fake_modules: Path, tmp_path: Path, ttype: str
) -> None:
    a = hobot.ADAPTER({})
    model = a.load(model_file(tmp_path, f"shape=1,2,3,4 aligned=1,2,3,4 type={ttype}"))
    x = np.ones((1, 2, 3, 4), dtype=ttype)
    err = error_of(a.run, model, [logical_input(x)], None)
    assert (err.kind, err.stage) == ("UnsupportedError", "fetch")
    assert "bytes are lost" in err.message and "hobot_native" in err.message
    assert f"returns {ttype} data as int8" in err.message


def test_four_bit_types_are_refused(fake_modules: Path, tmp_path: Path) -> None:
    a = hobot.ADAPTER({})
    model = a.load(model_file(tmp_path, "shape=1,2,3,4 aligned=1,2,3,4 type=int4"))
    image = InputTensor("data", np.zeros(24, np.uint8), "NV12", [1, 2, 3, 4], "uint8", True)
    err = error_of(a.run, model, [image], None)
    assert (err.kind, err.stage) == ("UnsupportedError", "fetch")
    assert "4-bit" in err.message


def test_unread_pointer_shapes_leave_faithfulness_unknown(
    fake_modules: Path, tmp_path: Path
) -> None:
    a = hobot.ADAPTER({"shape_pointers": False})
    model = a.load(model_file(tmp_path))
    (out,) = a.run(model, [logical_input(np.zeros((1, 3, 4, 5), np.int8))], None).outputs
    assert out.attributes["buffer_faithful"] is None
    assert out.attributes["alignedShape"] is None
    assert out.attributes["alignedShape_from"] == "unread pointer"
    assert isinstance(out.attributes["alignedShape_raw"], int)


def test_a_build_with_tuple_shapes(fake_modules: Path, tmp_path: Path) -> None:
    pyeasy().QUIRKS.add("tuple_shapes")
    a = hobot.ADAPTER({})
    model = a.load(model_file(tmp_path, "shape=1,3,4,5 aligned=1,3,4,8 type=int8"))
    (out,) = a.run(model, [logical_input(np.zeros((1, 3, 4, 5), np.int8))], None).outputs
    assert out.attributes["alignedShape"] == [1, 3, 4, 8]
    assert "alignedShape_raw" not in out.attributes
    assert out.attributes["buffer_faithful"] is False


@pytest.mark.parametrize(("fault", "stage"), [("load", "load"), ("forward", "run")])
def test_extension_errors_are_typed(
    fake_modules: Path, tmp_path: Path, fault: str, stage: str
) -> None:
    a = hobot.ADAPTER({})
    model = None if stage == "load" else a.load(model_file(tmp_path))
    pyeasy().FAULTS.add(fault)
    if stage == "load":
        err = error_of(a.load, model_file(tmp_path))
    else:
        err = error_of(a.run, model, [logical_input(np.zeros((1, 3, 4, 5), np.int8))], None)
    assert (err.kind, err.stage) == ("DeviceError", stage)
    assert "RuntimeError" in err.message


def test_bad_model_and_missing_module(
    fake_modules: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "bad.bin"
    bad.write_text("nope")
    err = error_of(hobot.ADAPTER({}).load, str(bad))
    assert (err.kind, err.stage) == ("DeviceError", "load")
    err = error_of(hobot.ADAPTER({"module": "no_such_dnn.pyeasy_dnn"}).load, str(bad))
    assert (err.kind, err.stage) == ("UnsupportedError", "init")
    monkeypatch.setitem(sys.modules, "hobot_dnn.pyeasy_dnn", None)
    err = error_of(hobot.ADAPTER({}).versions)
    assert (err.kind, err.stage) == ("UnsupportedError", "init")
    assert "hobot_dnn_rdkx5.pyeasy_dnn" in err.message  # both import paths were tried


def test_inputs(fake_modules: Path, tmp_path: Path) -> None:
    a = hobot.ADAPTER({})
    model = a.load(model_file(tmp_path))
    raw = np.zeros(60, np.uint8)
    native = InputTensor("data", raw, "strided", [1, 3, 4, 5], "int8", True)
    err = error_of(a.run, model, [native], None)
    assert (err.kind, err.stage) == ("LayoutError", "run")
    nv12 = InputTensor("data", raw, "NV12", [1, 3, 4, 5], "uint8", True)
    (out,) = a.run(model, [nv12], None).outputs  # image bytes are handed on as they are
    assert out.shape == [1, 3, 4, 5]
    err = error_of(a.run, model, [logical_input(np.zeros((1, 3, 4, 5), np.int8))], ["x"])
    assert (err.kind, err.stage) == ("LayoutError", "fetch")
