"""``rknnlite`` against a fake RKNNLite that keeps the toolkit's return-code conventions."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.agent.adapters import rknnlite
from harness.agent.adapters.base import AdapterError, InputTensor


def model_file(tmp_path: Path) -> str:
    path = tmp_path / "identity.rknn"
    path.write_text("FAKE-RKNN shape=1,3,4,5 zp=-14 scale=0.5")
    return str(path)


def calls(name: str) -> list[dict[str, Any]]:
    import rknnlite.api

    return [args for method, args in rknnlite.api.CALLS if method == name]


def faults() -> set[str]:
    import rknnlite.api

    return rknnlite.api.FAULTS


def float_input(x: np.ndarray) -> InputTensor:
    return InputTensor(
        "images", x.reshape(-1).view(np.uint8), "NCHW", list(x.shape), "float32", False
    )


def error_of(call: Any, *args: Any) -> AdapterError:
    with pytest.raises(AdapterError) as info:
        call(*args)
    return info.value


def test_logical_input_gives_numeric_outputs(fake_modules: Path, tmp_path: Path) -> None:
    a = rknnlite.ADAPTER({})
    model = a.load(model_file(tmp_path))
    x = np.arange(60, dtype=np.float32).reshape(1, 3, 4, 5)
    result = a.run(model, [float_input(x)], None)

    (out,) = result.outputs
    assert (out.name, out.layout, out.dtype, out.shape) == (
        "output0",
        "NCHW",
        "float32",
        [1, 3, 4, 5],
    )
    assert np.array_equal(out.data.view(np.float32).reshape(out.shape), x)
    assert out.attributes["numeric_only"] is True
    assert out.attributes["native_bytes"] is False
    assert result.inputs == []  # RKNNLite cannot read input buffers back
    (call,) = calls("inference")
    # ONNX-order inputs are declared as such; the element type is explicit.
    assert (call["data_format"], call["data_type"], call["inputs_pass_through"]) == (
        "nchw",
        "float32",
        [0],
    )
    assert a.versions()["sdk_version"].startswith("API: 2.3.0")
    a.release(model)
    assert calls("release")


def test_pass_through_input_is_handed_on_unconverted(fake_modules: Path, tmp_path: Path) -> None:
    a = rknnlite.ADAPTER({})
    model = a.load(model_file(tmp_path))
    q = np.random.default_rng(1).integers(-128, 128, size=(1, 4, 5, 3), dtype=np.int8)  # NHWC
    inp = InputTensor("images", q.reshape(-1).view(np.uint8), "NHWC", [1, 4, 5, 3], "int8", True)
    (out,) = a.run(model, [inp], None).outputs
    want = (q.transpose(0, 3, 1, 2).astype(np.float32) + 14) * 0.5
    assert np.array_equal(out.data.view(np.float32).reshape(out.shape), want)
    (call,) = calls("inference")
    assert call["inputs_pass_through"] == [1]
    assert "data_format" not in call or call["data_format"] is None
    assert call["inputs"][0].dtype == np.int8
    a.release(model)


def test_core_mask(fake_modules: Path, tmp_path: Path) -> None:
    a = rknnlite.ADAPTER({"core_mask": "0_1", "soc": "rk3588"})
    a.release(a.load(model_file(tmp_path)))
    assert calls("init_runtime")[-1]["core_mask"] == 3
    err = error_of(rknnlite.ADAPTER({"core_mask": "1", "soc": "rk3568"}).load, model_file(tmp_path))
    assert (err.kind, err.stage) == ("UnsupportedError", "init")
    err = error_of(rknnlite.ADAPTER({"core_mask": "5"}).load, model_file(tmp_path))
    assert (err.kind, err.stage) == ("LayoutError", "init")


@pytest.mark.parametrize(
    ("fault", "stage", "code"),
    [
        ("load", "load", -1),
        ("init", "init", -1),
        ("inference", "run", None),
        ("raise", "run", None),
        ("release", "release", None),
    ],
)
def test_return_codes_become_typed_errors(
    fake_modules: Path, tmp_path: Path, fault: str, stage: str, code: Any
) -> None:
    a = rknnlite.ADAPTER({})
    model = None if stage in ("load", "init") else a.load(model_file(tmp_path))
    faults().add(fault)
    if stage in ("load", "init"):
        err = error_of(a.load, model_file(tmp_path))
        assert calls("release")  # the half-made RKNNLite is released
    elif stage == "run":
        err = error_of(a.run, model, [float_input(np.zeros((1, 3, 4, 5), np.float32))], None)
    else:
        err = error_of(a.release, model)
    assert (err.kind, err.stage, err.code) == ("DeviceError", stage, code)
    if fault == "raise":
        assert "RuntimeError" in err.message


def test_missing_sdk_version_is_not_an_error(fake_modules: Path, tmp_path: Path) -> None:
    faults().add("sdk")
    a = rknnlite.ADAPTER({})
    model = a.load(model_file(tmp_path))
    assert "sdk_version" not in a.versions()
    a.release(model)


def test_missing_toolkit_is_unsupported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "rknnlite.api", None)
    err = error_of(rknnlite.ADAPTER({}).load, model_file(tmp_path))
    assert (err.kind, err.stage) == ("UnsupportedError", "init")


def test_output_names(fake_modules: Path, tmp_path: Path) -> None:
    x = np.zeros((1, 3, 4, 5), np.float32)
    a = rknnlite.ADAPTER({"output_names": ["probs"]})
    model = a.load(model_file(tmp_path))
    assert [t.name for t in a.run(model, [float_input(x)], ["probs"]).outputs] == ["probs"]
    b = rknnlite.ADAPTER({})
    model_b = b.load(model_file(tmp_path))
    # The job naming every output (in model order) names them.
    assert [t.name for t in b.run(model_b, [float_input(x)], ["logits"]).outputs] == ["logits"]
    err = error_of(a.run, model, [float_input(x)], ["other"])
    assert (err.kind, err.stage) == ("LayoutError", "fetch")
    err = error_of(
        rknnlite.ADAPTER({"output_names": ["a", "b"]}).run, model, [float_input(x)], None
    )
    assert (err.kind, err.stage) == ("LayoutError", "fetch")


def test_unsupported_input_type(fake_modules: Path, tmp_path: Path) -> None:
    a = rknnlite.ADAPTER({})
    model = a.load(model_file(tmp_path))
    x = np.zeros((1, 3, 4, 5), np.int32)
    inp = InputTensor("images", x.reshape(-1).view(np.uint8), "NCHW", [1, 3, 4, 5], "int32", False)
    err = error_of(a.run, model, [inp], None)
    assert (err.kind, err.stage) == ("LayoutError", "run")
