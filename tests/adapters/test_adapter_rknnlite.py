"""``rknnlite`` against a fake RKNNLite that behaves as rknn-toolkit-lite2 2.5.0 does (rank and size
checks of pass-through inputs, the dtype check, core masks per SoC, the version banner, None on
every error)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.board.adapters import rknnlite
from npu_hil.harness.board.adapters.base import AdapterError, InputTensor
from npu_hil.harness.codec import get_layout


def model_file(tmp_path: Path, text: str = "FAKE-RKNN shape=1,3,4,5 zp=-14 scale=0.5") -> str:
    path = tmp_path / "identity.rknn"
    path.write_text(text)
    return str(path)


def fake() -> Any:
    import rknnlite.api

    return rknnlite.api


def calls(name: str) -> list[dict[str, Any]]:
    return [args for method, args in fake().CALLS if method == name]


def faults() -> set[str]:
    result: set[str] = fake().FAULTS
    return result


def logged(text: str) -> bool:
    return any(text in line for line in fake().LOG)


def float_input(x: np.ndarray) -> InputTensor:
    return InputTensor(
        "images", x.reshape(-1).view(np.uint8), "NCHW", list(x.shape), "float32", False
    )


def packed_input(target: str, layout: str, x: np.ndarray) -> InputTensor:
    """A pass-through input as the harness sends it: the host codec's packed bytes, flat."""
    packed = get_layout(target, layout, x.shape, str(x.dtype), role="input").pack(x)
    return InputTensor("images", packed, layout, list(x.shape), str(x.dtype), True)


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
    a.release(model)
    assert calls("release")


def test_versions_come_from_the_banner(fake_modules: Path, tmp_path: Path) -> None:
    a = rknnlite.ADAPTER({})
    a.release(a.load(model_file(tmp_path)))
    versions = a.versions()
    assert versions["sdk_version"].splitlines()[1] == "RKNN VERSION:"
    assert (versions["api_version"], versions["drv_version"]) == (
        "2.5.0 (fake@2025-09-26)",
        "0.9.8",
    )


@pytest.mark.parametrize(
    ("banner", "want"),
    [
        (
            "=" * 46 + "\nRKNN VERSION:\n  API: 2.3.2 (abc@2025-04-09)\n  DRV: 0.9.8\n" + "=" * 46,
            {"api_version": "2.3.2 (abc@2025-04-09)", "drv_version": "0.9.8"},
        ),
        (
            "RKNN VERSION:\n  API: 1.5.2\n  DRV: rknn_server: 1.5.2\n  DRV: rknnrt: 1.5.3b13\n",
            {"api_version": "1.5.2", "drv_version": "rknn_server: 1.5.2; rknnrt: 1.5.3b13"},
        ),
        ("1.4.0 (a@b)", {"api_version": "1.4.0 (a@b)"}),
        ("", {}),
    ],
)
def test_parse_sdk_banner(banner: str, want: dict[str, str]) -> None:
    assert rknnlite.parse_sdk_banner(banner) == want


def test_nhwc_pass_through_goes_in_at_the_native_rank_and_attr_size(
    fake_modules: Path, tmp_path: Path
) -> None:
    a = rknnlite.ADAPTER({})
    model = a.load(model_file(tmp_path))  # native NHWC [1, 4, 5, 3], w_stride 16
    q = np.random.default_rng(1).integers(-128, 128, size=(1, 3, 4, 5), dtype=np.int8)
    inp = packed_input("rk3588", "NHWC", q)
    assert inp.data.nbytes == 4 * 16 * 3  # the codec pads rows to w_stride
    (out,) = a.run(model, [inp], None).outputs
    want = (q.astype(np.float32) + 14) * 0.5
    assert np.array_equal(out.data.view(np.float32).reshape(out.shape), want)
    (call,) = calls("inference")
    assert call["inputs_pass_through"] == [1]
    assert call["data_format"] is None  # a pass-through buffer must not be transposed
    (sent,) = call["inputs"]
    assert (sent.dtype, sent.shape) == (np.int8, (1, 4, 5, 3))  # attr.size: rows of W
    a.release(model)


def test_strided_rows_on_request(fake_modules: Path, tmp_path: Path) -> None:
    text = "FAKE-RKNN shape=1,3,4,5 zp=-14 scale=0.5 w_stride=5"
    a = rknnlite.ADAPTER({"pass_through_rows": "strided"})
    model = a.load(model_file(tmp_path, text))
    q = np.zeros((1, 3, 4, 5), np.int8)
    packed = get_layout("rk3588", "NHWC", q.shape, "int8", role="input").pack(q)
    inp = InputTensor("images", packed, "NHWC", [1, 3, 4, 5], "int8", True)
    # The model takes rows of 5 (attr.size 60); the strided buffer (rows of 16) is refused.
    err = error_of(a.run, model, [inp], None)
    assert (err.kind, err.stage) == ("DeviceError", "run")
    assert calls("inference")[-1]["inputs"][0].shape == (1, 4, 16, 3)
    assert logged("Set inputs failed")


def test_nc1hwc2_pass_through_goes_in_at_the_model_inputs_rank(
    fake_modules: Path, tmp_path: Path
) -> None:
    a = rknnlite.ADAPTER({})
    model = a.load(model_file(tmp_path, "FAKE-RKNN shape=1,17,2,3 zp=3 scale=0.25"))
    q = np.random.default_rng(2).integers(-128, 128, size=(1, 17, 2, 3), dtype=np.int8)
    (out,) = a.run(model, [packed_input("rk3588", "NC1HWC2", q)], None).outputs
    assert np.array_equal(
        out.data.view(np.float32).reshape(out.shape), (q.astype(np.float32) - 3) * 0.25
    )
    # The native bytes, viewed 4-D [N, C1 * H, W, C2]: RKNNLite 2.5.0 refuses a 5-D array.
    assert calls("inference")[-1]["inputs"][0].shape == (1, 4, 3, 16)


def test_native_dims_option_settles_c2(fake_modules: Path, tmp_path: Path) -> None:
    # C = 16 int8: 16 * H * W bytes are [1,1,H,W,16] or [1,2,H,W,8]; the runtime says which.
    text = "FAKE-RKNN shape=1,16,2,3 zp=0 scale=1 c2=8"
    a = rknnlite.ADAPTER({"native_dims": {"images": [1, 2, 2, 3, 8]}})
    model = a.load(model_file(tmp_path, text))
    q = np.arange(96, dtype=np.int8).reshape(1, 16, 2, 3)
    packed = q.reshape(1, 2, 8, 2, 3).transpose(0, 1, 3, 4, 2).reshape(-1).view(np.uint8)
    inp = InputTensor("images", packed.copy(), "NC1HWC2", [1, 16, 2, 3], "int8", True)
    (out,) = a.run(model, [inp], None).outputs
    assert np.array_equal(out.data.view(np.float32).reshape(out.shape), q.astype(np.float32))
    err = error_of(
        rknnlite.ADAPTER({"native_dims": {"images": [1, 2, 2, 3, 4]}}).run, model, [inp], None
    )
    assert (err.kind, err.stage) == ("LayoutError", "run")


def test_pass_through_that_fits_no_native_shape_is_a_layout_error(
    fake_modules: Path, tmp_path: Path
) -> None:
    a = rknnlite.ADAPTER({})
    model = a.load(model_file(tmp_path))
    inp = InputTensor("images", np.zeros(50, np.uint8), "NHWC", [1, 3, 4, 5], "int8", True)
    err = error_of(a.run, model, [inp], None)
    assert (err.kind, err.stage) == ("LayoutError", "run")
    assert "w_stride" in err.message and "'images'" in err.message
    assert not calls("inference")  # refused before anything reached the toolkit


# -- the fake is held to the real toolkit's behaviour ---------------------------------------------


def ready_fake(tmp_path: Path, text: str = "FAKE-RKNN shape=1,3,4,5 zp=-14 scale=0.5") -> Any:
    rknn = fake().RKNNLite()
    assert rknn.load_rknn(model_file(tmp_path, text)) == 0
    assert rknn.init_runtime() == 0
    return rknn


def test_fake_refuses_a_flat_pass_through_buffer(fake_modules: Path, tmp_path: Path) -> None:
    # The bug this adapter had: a 1-D pass-through buffer. RKNNLite 2.5.0 refuses it in
    # set_inputs and inference returns None.
    rknn = ready_fake(tmp_path)
    flat = np.zeros(60, np.int8)
    assert rknn.inference([flat], data_type="int8", inputs_pass_through=[1]) is None
    assert logged("The input[0] need 4dims input, but 1dims input buffer feed.")
    assert logged("E Catch exception when setting inputs.")


def test_fake_checks_arrays_against_data_type(fake_modules: Path, tmp_path: Path) -> None:
    rknn = ready_fake(tmp_path)
    x = np.zeros((1, 4, 5, 3), np.float32)
    assert rknn.inference([x], data_type="uint8") is None
    assert logged("E inputs[0].dtype: float32 is not same as data_type")
    assert rknn.inference([x], data_type=["float32", "int8"]) is None
    assert logged("E The lengths of data_type and inputs are not equal.")
    assert rknn.inference([x], data_type="float64") is None
    assert logged("E Unsupport data type: float64")
    assert rknn.inference([x], data_type="float32") is not None


def test_fake_never_raises_from_inference(fake_modules: Path, tmp_path: Path) -> None:
    rknn = ready_fake(tmp_path)
    faults().add("raise")
    assert rknn.inference([np.zeros((1, 4, 5, 3), np.float32)]) is None
    faults().clear()
    assert rknn.inference("not a list") is None
    assert fake().RKNNLite().inference([np.zeros(3)]) is None  # not initialised


def test_fake_banner_and_load_signature(fake_modules: Path, tmp_path: Path) -> None:
    rknn = fake().RKNNLite()
    assert rknn.get_sdk_version() is None  # before init_runtime
    assert rknn.load_rknn(model_file(tmp_path), key_path=str(tmp_path / "missing_key.bin")) == -1
    assert rknn.load_rknn(model_file(tmp_path), key_path=None) == 0
    assert rknn.init_runtime() == 0
    lines = rknn.get_sdk_version().splitlines()
    assert lines[0] == lines[-1] == "=" * 46
    assert lines[1] == "RKNN VERSION:" and lines[2].startswith("  API: ")
    assert lines[3].startswith("  DRV: ")


def test_fake_reuse_outputs(fake_modules: Path, tmp_path: Path) -> None:
    rknn = ready_fake(tmp_path)
    x = np.ones((1, 4, 5, 3), np.float32)
    first = rknn.inference([x], reuse_outputs=True)[0]
    second = rknn.inference([x * 2], reuse_outputs=True)[0]
    assert first is second and float(first[0, 0, 0, 0]) == 2.0  # overwritten, as documented
    third = rknn.inference([x * 3])[0]
    assert third is not second


# -- core masks -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("soc", "option", "given", "effective"),
    [
        ("rk3588", "0_1", 3, 3),
        ("rk3588", "all", 0xFFFF, 7),
        ("rk3588", "0_1_2", 7, 7),
        ("rk3576", "0_1_2", 7, 3),
        ("rk3576", "2", 4, 1),
        ("rk3576", "all", 0xFFFF, 3),
        ("rk3568", "auto", 0, 0),
    ],
)
def test_core_mask_as_rknnlite_takes_it(
    fake_modules: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    soc: str,
    option: str,
    given: int,
    effective: int,
) -> None:
    monkeypatch.setattr(fake(), "SOC", soc)
    a = rknnlite.ADAPTER({"core_mask": option, "soc": soc})
    model = a.load(model_file(tmp_path))
    call = calls("init_runtime")[-1]
    assert (call["core_mask"], call["effective_core_mask"]) == (given, effective)
    (out,) = a.run(model, [float_input(np.zeros((1, 3, 4, 5), np.float32))], None).outputs
    assert (out.attributes["core_mask"], out.attributes["core_mask_effective"]) == (
        given,
        effective,
    )
    if soc == "rk3576" and given in (4, 7):
        assert logged("The RK3576 platform has only two NPU cores.")


def test_core_mask_refusals(
    fake_modules: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    err = error_of(rknnlite.ADAPTER({"core_mask": "1", "soc": "rk3568"}).load, model_file(tmp_path))
    assert (err.kind, err.stage) == ("UnsupportedError", "init")
    err = error_of(rknnlite.ADAPTER({"core_mask": "5"}).load, model_file(tmp_path))
    assert (err.kind, err.stage) == ("LayoutError", "init")
    # Without `soc` the toolkit itself refuses a mask on a single-core SoC.
    monkeypatch.setattr(fake(), "SOC", "rk3566")
    err = error_of(rknnlite.ADAPTER({"core_mask": "0"}).load, model_file(tmp_path))
    assert (err.kind, err.stage, err.code) == ("DeviceError", "init", -1)
    assert logged("The core_mask is only supported by")


def test_core_mask_values_are_the_headers() -> None:
    import json

    facts = json.loads(
        (Path(__file__).parents[1] / "data" / "abi" / "rknn_api-2.3.2.json").read_text()
    )["aarch64"]["constants"]
    for key, value in rknnlite.CORE_MASKS.items():
        assert facts[f"RKNN_NPU_CORE_{key.upper()}"] == value, key


# -- errors ---------------------------------------------------------------------------------------


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


def test_an_exception_from_an_older_toolkit_is_wrapped(
    fake_modules: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = rknnlite.ADAPTER({})
    model = a.load(model_file(tmp_path))

    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the toolkit raised")

    monkeypatch.setattr(model.rknn, "inference", boom)
    err = error_of(a.run, model, [float_input(np.zeros((1, 3, 4, 5), np.float32))], None)
    assert (err.kind, err.stage) == ("DeviceError", "run")
    assert "RuntimeError" in err.message


def test_key_path_is_passed_only_when_given(fake_modules: Path, tmp_path: Path) -> None:
    key = tmp_path / "model_key.bin"
    key.write_bytes(b"k")
    a = rknnlite.ADAPTER({"key_path": str(key)})
    a.release(a.load(model_file(tmp_path)))
    assert calls("load_rknn")[-1]["key_path"] == str(key)
    b = rknnlite.ADAPTER({})
    b.release(b.load(model_file(tmp_path)))
    assert calls("load_rknn")[-1]["key_path"] is None


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
