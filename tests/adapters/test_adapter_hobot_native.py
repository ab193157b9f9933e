"""``hobot_native`` against the fake libdnn, for both struct ABIs (RDK X3/X5 and RDK S100): raw
aligned buffers, inputs read back, hbDNNTensorProperties under the header's names, the 32-byte
first-address rule, cache flushes, and every failure typed with its stage and nothing leaked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.board.adapters import hobot_native
from npu_hil.harness.board.adapters.base import AdapterError, InputTensor

CLEAN, INVALIDATE = 2, 1


def model_file(tmp_path: Path, extra: str = "") -> str:
    path = tmp_path / "identity.hbm"
    path.write_text("FAKE-HBM " + extra)
    return str(path)


def adapter(dnn: Any, **options: Any) -> hobot_native.HobotNativeAdapter:
    base = {"abi": dnn.abi, "library": str(dnn.path), "ucp_library": str(dnn.path)}
    return hobot_native.ADAPTER({**base, **options})


def aligned(x: np.ndarray, width: int, pad: int = 0) -> np.ndarray:
    """NCHW int8 with W padded to ``width``: the byte layout stride [C*H*w, H*w, w, 1]."""
    n, c, h, w = x.shape
    buf = np.full((n, c, h, width), pad, dtype=np.int8)
    buf[..., :w] = x
    return buf.reshape(-1).view(np.uint8)


def logical(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(-127, 128, size=(1, 3, 4, 5), dtype=np.int8)


def data_input(data: np.ndarray, name: str = "data", pass_through: bool = True) -> InputTensor:
    return InputTensor(name, data, "strided", [1, 3, 4, 5], "int8", pass_through)


def error_of(call: Any, *args: Any) -> AdapterError:
    with pytest.raises(AdapterError) as info:
        call(*args)
    return info.value


def assert_nothing_held(dnn: Any) -> None:
    assert dnn.fake_dnn_live_allocs() == 0
    assert dnn.fake_dnn_live_tasks() == 0


def test_load_reports_tensor_properties(dnn: Any, tmp_path: Path) -> None:
    a = adapter(dnn)
    model = a.load(model_file(tmp_path))
    assert model.model_name == "fake_identity"
    assert [t.name for t in model.inputs] == ["data"]
    assert [t.name for t in model.outputs] == ["identity", "negated"]
    props = model.outputs[0].record
    assert props["validShape"] == [1, 3, 4, 5]
    assert props["tensorType"] == "S8"
    assert props["quantiType"] == "SCALE"
    assert props["scale"] == [0.5, 0.25, 0.125]
    assert props["zeroPoint"] == [0, 1, -1]
    assert props["quantizeAxis"] == 1
    assert props["alignedByteSize"] == 192
    assert props["stride"] == [192, 64, 16, 1]
    if dnn.abi == "x3x5":
        assert props["alignedShape"] == [1, 3, 4, 16]
        assert props["tensorLayout"] == "NCHW"
        assert props["shift"] == []
        assert model.outputs[1].record["quantiType"] == "SHIFT"
        assert model.outputs[1].record["shift"] == [3, 3, 3]
    else:
        # The S100 header has none of these.
        assert not {"alignedShape", "tensorLayout", "shift"} & set(props)
        assert model.outputs[1].record["quantiType"] == "NONE"
    versions = a.versions()
    assert versions["abi"] == dnn.abi
    assert versions["dnn"].endswith("(fake)")
    assert ("ucp" in versions) == (dnn.abi == "s100")
    a.release(model)
    assert dnn.fake_dnn_live_handles() == 0


def test_run_returns_raw_aligned_buffers(dnn: Any, tmp_path: Path) -> None:
    a = adapter(dnn, bpu_core=2)
    model = a.load(model_file(tmp_path))
    x = logical()
    sent = aligned(x, 32, pad=0x55)
    clean0, inval0 = dnn.fake_dnn_flush_count(CLEAN), dnn.fake_dnn_flush_count(INVALIDATE)
    result = a.run(model, [data_input(sent)], None)

    identity, negated = result.outputs
    assert identity.data.tobytes() == aligned(x, 16).tobytes()  # padding zero, W padded to 16
    assert negated.data.tobytes() == aligned(-x, 32).tobytes()
    assert (identity.layout, identity.dtype, identity.shape) == ("strided", "int8", [1, 3, 4, 5])
    assert identity.attributes["first_address_aligned_32"] is True
    assert identity.attributes["allocated"] == 192
    (back,) = result.inputs
    assert back.data.tobytes() == sent.tobytes()  # padding included, as the BPU sees it
    # CLEAN after writing the input, INVALIDATE before reading every buffer back.
    assert dnn.fake_dnn_flush_count(CLEAN) - clean0 == 1
    assert dnn.fake_dnn_flush_count(INVALIDATE) - inval0 == 3
    assert dnn.fake_dnn_last_core() == 2
    assert set(result.timings) == {"run_s", "copy_s"}
    assert_nothing_held(dnn)

    (only,) = a.run(model, [data_input(sent)], ["negated"]).outputs
    assert only.name == "negated"
    a.release(model)
    assert dnn.fake_dnn_live_handles() == 0


@pytest.mark.parametrize(
    ("fault", "stage", "kind"),
    [
        ("init", "load", "DeviceError"),
        ("properties", "load", "DeviceError"),
        ("alloc", "run", "DeviceError"),
        ("misalign", "run", "DeviceError"),
        ("infer", "run", "DeviceError"),
        ("wait", "run", "DeviceError"),
        ("timeout", "run", "TimeoutError"),
        ("slow_fail", "run", "DeviceError"),
        ("flush", "run", "DeviceError"),
        ("free", "release", "DeviceError"),
        ("release", "release", "DeviceError"),
    ],
)
def test_every_runtime_failure_is_typed(
    dnn: Any, tmp_path: Path, fault: str, stage: str, kind: str
) -> None:
    a = adapter(dnn, timeout_ms=60)
    path = model_file(tmp_path)
    model = None if stage == "load" else a.load(path)
    dnn.fake_dnn_set_fault(fault.encode())
    if stage == "load":
        err = error_of(a.load, path)
    elif fault == "release":
        err = error_of(a.release, model)
    else:
        err = error_of(a.run, model, [data_input(aligned(logical(), 32))], None)
    assert (err.kind, err.stage) == (kind, stage), err.message
    assert isinstance(err.code, int) or fault == "misalign"
    if fault == "misalign":
        assert "32-byte aligned" in err.message
    if fault == "timeout":
        # The header's own timeout code, named: not a code that means something else.
        abi = hobot_native.ABIS[dnn.abi]
        assert err.code == abi.timeout_code == {"x3x5": -6000008, "s100": -200002}[dnn.abi]
        assert abi.timeout_name in err.message
    if fault == "slow_fail":
        # A failure that took the whole timeout is the device's failure, typed by its code.
        assert err.code not in (-6000008, -200002)
    dnn.fake_dnn_set_fault(None)
    assert_nothing_held(dnn)
    if model is not None:
        a.release(model)
    assert dnn.fake_dnn_live_handles() == 0


def test_model_selection(dnn: Any, tmp_path: Path) -> None:
    path = model_file(tmp_path, "models=2")
    err = error_of(adapter(dnn).load, path)
    assert (err.kind, err.stage) == ("LayoutError", "load")
    assert "fake_other" in err.message
    err = error_of(adapter(dnn, model_name="nope").load, path)
    assert (err.kind, err.stage) == ("LayoutError", "load")
    a = adapter(dnn, model_name="fake_identity")
    a.release(a.load(path))
    assert dnn.fake_dnn_live_handles() == 0


def test_inputs_must_be_aligned_and_whole(dnn: Any, tmp_path: Path) -> None:
    a = adapter(dnn)
    model = a.load(model_file(tmp_path))
    x = logical()
    err = error_of(
        a.run, model, [data_input(x.reshape(-1).view(np.uint8), pass_through=False)], None
    )
    assert (err.kind, err.stage) == ("LayoutError", "run")
    err = error_of(a.run, model, [data_input(aligned(x, 16))], None)
    assert (err.kind, err.stage) == ("LayoutError", "run")
    assert "alignedByteSize is 384" in err.message
    err = error_of(a.run, model, [data_input(aligned(x, 32))], ["missing"])
    assert (err.kind, err.stage) == ("LayoutError", "fetch")
    assert_nothing_held(dnn)
    a.release(model)


def test_dynamic_strides_come_from_the_options() -> None:
    record = {"stride": [-1, -1, 32, 1], "alignedByteSize": -1, "validShape": [1, 3, 4, 5]}
    tensor = hobot_native.HbTensor("y", None, record)
    a = hobot_native.ADAPTER({"abi": "s100", "input_strides": {"y": [384, 128, 32, 1]}})
    assert a._input_strides(tensor) == [384, 128, 32, 1]
    err = error_of(hobot_native.ADAPTER({"abi": "s100"})._input_strides, tensor)
    assert (err.kind, err.stage) == ("LayoutError", "run")
    err = error_of(hobot_native._buffer_size, tensor, hobot_native.ABIS["s100"])
    assert err.kind == "LayoutError"


def test_unknown_abi_and_missing_library(tmp_path: Path) -> None:
    err = error_of(hobot_native.ADAPTER, {"abi": "x9"})
    assert (err.kind, err.stage) == ("UnsupportedError", "init")
    err = error_of(hobot_native.ADAPTER({"library": str(tmp_path / "libdnn.so")}).load, "m.hbm")
    assert (err.kind, err.stage) == ("UnsupportedError", "init")


def test_every_model_input_must_be_given(dnn: Any, tmp_path: Path) -> None:
    a = adapter(dnn)
    model = a.load(model_file(tmp_path))
    err = error_of(a.run, model, [], None)
    assert (err.kind, err.stage) == ("LayoutError", "run")
    assert "takes 1 inputs" in err.message
    assert_nothing_held(dnn)
    a.release(model)


def nv12_frame(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An NV12_SEPARATE input of the fake's "fake_nv12" (validShape [1,3,4,6], alignedShape W 32):
    the Y plane, the UV plane (rows 32 bytes apart, padding 0xEE) and both as one buffer."""
    rng = np.random.default_rng(seed)
    y = np.full((4, 32), 0xEE, dtype=np.uint8)
    uv = np.full((2, 32), 0xEE, dtype=np.uint8)
    y[:, :6] = rng.integers(0, 256, size=(4, 6))
    uv[:, :6] = rng.integers(0, 256, size=(2, 6))
    return y, uv, np.concatenate([y.reshape(-1), uv.reshape(-1)])


def test_nv12_separate_fills_two_memories(dnn: Any, tmp_path: Path) -> None:
    if dnn.abi != "x3x5":
        pytest.skip("S100's hbDNNTensor has one memory and no image tensor types")
    a = adapter(dnn)
    model = a.load(model_file(tmp_path, "nv12sep"))
    (image,) = model.inputs
    assert image.record["tensorType"] == "NV12_SEPARATE"
    assert image.record["stride"] == [0, 0, 0, 0]  # as the X3/X5 docs say of NV12 inputs
    assert image.record["alignedShape"] == [1, 3, 4, 32]
    y, uv, both = nv12_frame()
    result = a.run(model, [InputTensor("image", both, "NV12_SEPARATE", [192], "uint8", True)], None)
    (planes,) = result.outputs
    # The fake reads Y from sysMem[0] and UV from sysMem[1]: both reached the BPU.
    expected = np.zeros((6, 16), dtype=np.uint8)
    expected[:4, :6] = y[:, :6]
    expected[4:, :6] = uv[:, :6]
    assert planes.data.tobytes() == expected.tobytes()
    assert planes.attributes["layout_from"] == "alignedShape"
    (back,) = result.inputs
    assert back.data.tobytes() == both.tobytes()
    assert back.attributes["memories"] == [128, 64]
    assert back.layout == "NV12_SEPARATE"
    assert dnn.fake_dnn_flush_count(CLEAN) >= 2
    short = InputTensor("image", both[:-32], "NV12_SEPARATE", [160], "uint8", True)
    err = error_of(a.run, model, [short], None)
    assert (err.kind, err.stage) == ("LayoutError", "run")
    assert_nothing_held(dnn)
    a.release(model)


def test_nv12_separate_split_follows_the_aligned_shape() -> None:
    record = {"validShape": [1, 3, 4, 6], "alignedShape": [1, 3, 4, 64], "tensorLayout": "NCHW"}
    assert hobot_native.nv12_separate_y_bytes(record, "x", 4 * 64 * 3 // 2) == 4 * 64
    nhwc = {"validShape": [1, 4, 6, 3], "alignedShape": [1, 4, 32, 3], "tensorLayout": "NHWC"}
    assert hobot_native.nv12_separate_y_bytes(nhwc, "x", 192) == 128
    bad_ones = (
        {**record, "validShape": [1, 3, 5, 6]},  # odd H
        {**record, "alignedShape": []},
        {"validShape": [2, 3, 4, 6], "alignedShape": [2, 3, 4, 64], "tensorLayout": "NCHW"},
    )
    for bad in bad_ones:
        err = error_of(hobot_native.nv12_separate_y_bytes, bad, "x", 4 * 64 * 3 // 2)
        assert err.kind == "LayoutError"
    err = error_of(hobot_native.nv12_separate_y_bytes, record, "x", 4 * 64)
    assert "256 bytes of Y then 128 of UV" in err.message


def test_x3x5_output_size_falls_back_to_the_aligned_shape() -> None:
    record = {
        "alignedByteSize": 0,
        "stride": [0, 0, 0, 0],
        "validShape": [1, 3, 4, 5],
        "alignedShape": [1, 3, 4, 16],
        "tensorType": "F16",
    }
    tensor = hobot_native.HbTensor("out", None, record)
    assert hobot_native._buffer_size(tensor, hobot_native.ABIS["x3x5"]) == 3 * 4 * 16 * 2
    err = error_of(hobot_native._buffer_size, tensor, hobot_native.ABIS["s100"])
    assert err.kind == "LayoutError"
