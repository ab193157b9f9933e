"""``kneron`` against a fake ``kp`` (PLUS Python API subset) and a fake libkplus serving
``kp_generic_inference_retrieve_raw_fixed_node``: raw NPU node bytes with their descriptor, the
one-NEF-at-a-time reload, and every failure typed with its stage."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.board.adapters import kneron
from npu_hil.harness.board.adapters.base import AdapterError, InputTensor


@pytest.fixture
def kplus(fake_libs: dict[str, Path]) -> Any:
    lib = ctypes.CDLL(str(fake_libs["kplus"]))
    lib.path = fake_libs["kplus"]
    return lib


def nef(tmp_path: Path, name: str = "a", model_id: int = 211, channels: int = 3) -> str:
    path = tmp_path / f"{name}.nef"
    path.write_text(
        f"FAKE-NEF channels={channels} height=4 width=5 layout=1W16C8B model_id={model_id}"
    )
    return str(path)


def adapter(kplus: Any, **options: Any) -> kneron.KneronAdapter:
    return kneron.ADAPTER({"kplus_library": str(kplus.path), **options})


def npu_input(nbytes: int = 320, pass_through: bool = True, seed: int = 0) -> InputTensor:
    data = np.random.default_rng(seed).integers(0, 256, size=nbytes, dtype=np.uint8)
    return InputTensor("in", data, "1W16C8B", [1, 3, 4, 5], "int8", pass_through)


def fake_state() -> Any:
    import kp._fake

    return kp._fake


def calls(name: str) -> list[dict[str, Any]]:
    return [args for method, args in fake_state().CALLS if method == name]


def error_of(call: Any, *args: Any) -> AdapterError:
    with pytest.raises(AdapterError) as info:
        call(*args)
    return info.value


def test_raw_node_bytes_with_descriptor(fake_modules: Path, kplus: Any, tmp_path: Path) -> None:
    a = adapter(kplus, scpu_firmware="/fw/kp_firmware.tar", timeout_ms=5000)
    model = a.load(nef(tmp_path))
    inp = npu_input()
    result = a.run(model, [inp], None)

    (out,) = result.outputs
    assert out.data.tobytes() == inp.data.tobytes()  # identity: the NPU bytes, untouched
    assert (out.name, out.layout, out.dtype, out.shape) == (
        "identity_out",
        "1W16C8B",
        "int8",
        [1, 3, 4, 5],
    )
    attrs = out.attributes
    assert attrs["data_layout"] == "1W16C8B" and attrs["data_layout_code"] == 2
    assert attrs["stride_npu"] == [320, 1, 80, 16]
    assert attrs["stride_onnx"] == [60, 20, 5, 1]
    assert (attrs["quantized_axis"], attrs["radix"], attrs["scale"]) == (1, [7], [1.0])
    assert attrs["scale_dtype"] == ["FLOAT32"]
    assert attrs["num_data"] == 320
    assert result.inputs == []
    assert kplus.fake_kplus_live_nodes() == 0  # every raw node output was released

    assert calls("load_firmware_from_file") == [
        {"scpu_fw_path": "/fw/kp_firmware.tar", "ncpu_fw_path": ""}
    ]
    assert calls("set_timeout") == [{"milliseconds": 5000}]
    assert calls("generic_data_inference_send")[0]["model_id"] == 211
    versions = a.versions()
    assert versions["kneron_plus"] == "3.1.2 (fake)"
    assert versions["firmware"] == "2.3.0.1234"

    a.release(model)
    assert fake_state().STATE["connected"] == 0  # the last model released: device let go


def kneron_read_1w16c8b(data: np.ndarray, shape: list[int], stride: list[int]) -> np.ndarray:
    """Kneron's reading of a 1W16C8B node, restated: sum(index * stride_npu) plus
    (c >> 4) * (G - 16), G the largest stride * size of the axes whose stride is not 1."""
    index = np.indices(shape).reshape(len(shape), -1).T
    channel = [a for a, s in enumerate(stride) if s == 1][-1]
    group = max(s * d for s, d in zip(stride, shape, strict=True) if s != 1)
    offset = index @ np.asarray(stride) + (index[:, channel] >> 4) * (group - 16)
    return data.view(np.int8)[offset].reshape(shape)


def test_more_than_16_channels_in_kneron_convention(
    fake_modules: Path, kplus: Any, tmp_path: Path
) -> None:
    """20 channels, two groups: the node reports the strides of one group ([320, 1, 80, 16],
    not 640 for the batch), and the host codec reads the bytes where Kneron's formula does."""
    from npu_hil.harness.codec import get_layout
    from npu_hil.harness.codec.reported import layout_from_report

    a = adapter(kplus)
    model = a.load(nef(tmp_path, channels=20))
    logical = np.random.default_rng(20).integers(-128, 128, (1, 20, 4, 5)).astype(np.int8)
    packed = get_layout("kl730", "1W16C8B", (1, 20, 4, 5), "int8", role="input").pack(logical)
    inp = InputTensor("in", packed, "1W16C8B", [1, 20, 4, 5], "int8", True)
    (out,) = a.run(model, [inp], None).outputs
    assert out.attributes["stride_npu"] == [320, 1, 80, 16]
    assert out.attributes["num_data"] == 640
    assert np.array_equal(kneron_read_1w16c8b(out.data, out.shape, [320, 1, 80, 16]), logical)
    layout = layout_from_report("kl730", "output", out.attributes)
    assert np.array_equal(layout.unpack(out.data), logical)
    a.release(model)


def test_switching_models_uploads_the_nef_again(
    fake_modules: Path, kplus: Any, tmp_path: Path
) -> None:
    a = adapter(kplus)
    first = a.load(nef(tmp_path, "a", model_id=211))
    second = a.load(nef(tmp_path, "b", model_id=212))
    assert fake_state().STATE["connected"] == 1  # one connection for the session
    result = a.run(first, [npu_input()], None)
    assert result.timings["reloads"] == 1.0
    assert len(calls("load_model_from_file")) == 3
    assert a.run(first, [npu_input()], None).timings["reloads"] == 0.0
    a.run(second, [npu_input()], None)
    a.release(first)
    assert fake_state().STATE["connected"] == 1
    a.release(second)
    assert fake_state().STATE["connected"] == 0


@pytest.mark.parametrize(
    ("fault", "stage", "kind", "code"),
    [
        ("connect", "init", "DeviceError", 10),
        ("firmware", "init", "DeviceError", 34),
        ("load_model", "load", "DeviceError", 21),
        ("send", "run", "DeviceError", 101),
        ("timeout", "run", "TimeoutError", -7),
        ("bad_raw", "fetch", "DeviceError", None),
    ],
)
def test_plus_failures_are_typed(
    fake_modules: Path, kplus: Any, tmp_path: Path, fault: str, stage: str, kind: str, code: Any
) -> None:
    a = adapter(kplus, scpu_firmware="/fw/fw.tar")
    model = None if stage in ("init", "load") else a.load(nef(tmp_path))
    fake_state().FAULTS.add(fault)
    if stage in ("init", "load"):
        err = error_of(a.load, nef(tmp_path))
    else:
        err = error_of(a.run, model, [npu_input()], None)
    assert (err.kind, err.stage, err.code) == (kind, stage, code)
    if fault == "firmware":
        assert fake_state().STATE["connected"] == 0  # a half-set-up device is let go
    assert kplus.fake_kplus_live_nodes() == 0


def test_input_must_be_npu_bytes_of_the_right_size(
    fake_modules: Path, kplus: Any, tmp_path: Path
) -> None:
    a = adapter(kplus)
    model = a.load(nef(tmp_path))
    err = error_of(a.run, model, [npu_input(pass_through=False)], None)
    assert (err.kind, err.stage) == ("LayoutError", "run")
    err = error_of(a.run, model, [npu_input(nbytes=300)], None)
    assert (err.kind, err.stage, err.code) == ("DeviceError", "run", 107)
    err = error_of(a.run, model, [npu_input()], ["nope"])
    assert (err.kind, err.stage) == ("LayoutError", "fetch")
    a.release(model)


def test_missing_kp_and_missing_libkplus(
    fake_modules: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = kneron.ADAPTER({"kplus_library": str(tmp_path / "libkplus.so")})
    model = a.load(nef(tmp_path))
    err = error_of(a.run, model, [npu_input()], None)
    assert (err.kind, err.stage) == ("UnsupportedError", "fetch")
    a.release(model)
    monkeypatch.setitem(sys.modules, "kp", None)
    err = error_of(kneron.ADAPTER({}).load, nef(tmp_path))
    assert (err.kind, err.stage) == ("UnsupportedError", "init")


class _Private:
    def __init__(self, data: bytes) -> None:
        self.buffer_size = len(data)
        self.__hidden = np.frombuffer(data, np.uint8).copy()


class _Result:
    def __init__(self, raw: Any) -> None:
        self.raw_result = raw


def test_raw_result_bytes_finds_the_receive_buffer() -> None:
    assert kneron.raw_result_bytes(_Result(b"abc")) == b"abc"
    assert kneron.raw_result_bytes(_Result(np.arange(4, dtype=np.uint8))) == b"\0\1\2\3"
    assert kneron.raw_result_bytes(_Result(_Private(b"wxyz"))) == b"wxyz"
    err = error_of(kneron.raw_result_bytes, _Result(object()))
    assert (err.kind, err.stage) == ("UnsupportedError", "fetch")


def test_layout_names_come_from_the_sdk_enum_first() -> None:
    class Enum:
        def __init__(self, code: int) -> None:
            self.name = "KP_MODEL_TENSOR_DATA_LAYOUT_FROM_SDK"

    class WithEnum:
        ModelTensorDataLayout = Enum

    assert kneron._layout_name(WithEnum(), 2) == "FROM_SDK"
    assert kneron._layout_name(object(), 13) == "HW4C8B_KEEP_A"
    assert kneron._layout_name(object(), 99) == "UNKNOWN(99)"
