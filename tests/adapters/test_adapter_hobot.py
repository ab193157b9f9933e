"""``hobot`` against a fake pyeasy_dnn with the X5 build's surface and its documented defects:
numerical results, each output saying whether its ``.buffer`` can be trusted and why not."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.agent.adapters import hobot
from harness.agent.adapters.base import AdapterError, InputTensor


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
    assert out.attributes["validShape"] == [1, 3, 4, 5]
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
    assert len(out.attributes["caveats"]) == 2
    assert out.dtype == "int8"  # as the extension hands it out
    # What .buffer holds really is the head of the aligned buffer, not the tensor.
    assert out.data.tobytes() != x.tobytes()


def test_pointer_shapes_leave_faithfulness_unknown(fake_modules: Path, tmp_path: Path) -> None:
    pyeasy().QUIRKS.add("pointer_shapes")
    a = hobot.ADAPTER({})
    model = a.load(model_file(tmp_path))
    (out,) = a.run(model, [logical_input(np.zeros((1, 3, 4, 5), np.int8))], None).outputs
    assert out.attributes["buffer_faithful"] is None
    assert out.attributes["alignedShape"] is None
    assert isinstance(out.attributes["alignedShape_raw"], int)


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
