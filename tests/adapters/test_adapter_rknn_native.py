"""``rknn_native`` against the fake librknnrt: zero-copy load, raw native buffers, inputs read
back, attributes under the header's names, and every failure typed with its stage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.board.adapters import rknn_native
from npu_hil.harness.board.adapters.base import AdapterError, InputTensor

C2 = 16


def model_file(tmp_path: Path, channels: int = 3, height: int = 4, width: int = 5) -> str:
    path = tmp_path / f"identity_c{channels}.rknn"
    path.write_text(f"FAKE-RKNN channels={channels} height={height} width={width}")
    return str(path)


def adapter(lib_path: Path, **options: Any) -> rknn_native.RknnNativeAdapter:
    return rknn_native.ADAPTER({"library": str(lib_path), **options})


def pack_nhwc(x: np.ndarray, w_stride: int, pad: int = 0x7F) -> np.ndarray:
    """NCHW int8 -> NHWC rows padded to w_stride pixels (pad bytes marked)."""
    n, c, h, w = x.shape
    buf = np.full((n, h, w_stride, c), pad, dtype=np.int8)
    buf[:, :, :w, :] = x.transpose(0, 2, 3, 1)
    return buf.reshape(-1).view(np.uint8)


def pack_nc1hwc2(x: np.ndarray) -> np.ndarray:
    """NCHW int8 -> NC1HWC2 (C2 = 16), padding channels zero: the fake's native output."""
    n, c, h, w = x.shape
    c1 = -(-c // C2)
    buf = np.zeros((n, c1 * C2, h, w), dtype=np.int8)
    buf[:, :c] = x
    return buf.reshape(n, c1, C2, h, w).transpose(0, 1, 3, 4, 2).reshape(-1).view(np.uint8)


def logical(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(-128, 128, size=shape, dtype=np.int8)


def native_input(data: np.ndarray, name: str = "input", pass_through: bool = True) -> InputTensor:
    return InputTensor(name, data, "NHWC", [1, 3, 4, 5], "int8", pass_through)


def error_of(call: Any, *args: Any) -> AdapterError:
    with pytest.raises(AdapterError) as info:
        call(*args)
    return info.value


def test_load_reports_the_native_attributes(rknnrt: Any, fake_libs: dict, tmp_path: Path) -> None:
    a = adapter(fake_libs["rknnrt"])
    model = a.load(model_file(tmp_path))
    attr = model.inputs[0].record
    assert attr == {
        "index": 0,
        "n_dims": 4,
        "dims": [1, 4, 5, 3],
        "name": "input",
        "n_elems": 60,
        "size": 60,
        "fmt": "NHWC",
        "type": "INT8",
        "qnt_type": "AFFINE_ASYMMETRIC",
        "fl": 0,
        "zp": -14,
        "scale": 0.5,
        "w_stride": 16,
        "size_with_stride": 192,
        "pass_through": 0,  # as reported; the adapter sets 1 on its copy
        "h_stride": 0,
    }
    out = model.outputs[0].record
    assert (out["fmt"], out["dims"], out["size_with_stride"]) == ("NC1HWC2", [1, 1, 4, 5, 16], 320)
    assert model.outputs[0].logical["dims"] == [1, 3, 4, 5]
    assert a.versions() == {
        "library": str(fake_libs["rknnrt"]),
        "api_version": "2.3.0 (fake)",
        "drv_version": "0.9.8 (fake)",
    }
    a.release(model)


def test_run_returns_raw_native_buffers_and_reads_inputs_back(
    rknnrt: Any, fake_libs: dict, tmp_path: Path
) -> None:
    a = adapter(fake_libs["rknnrt"])
    model = a.load(model_file(tmp_path))
    x = logical((1, 3, 4, 5))
    sent = pack_nhwc(x, w_stride=16)
    result = a.run(model, [native_input(sent)], None)

    (out,) = result.outputs
    assert (out.name, out.layout, out.dtype, out.shape) == (
        "output",
        "NC1HWC2",
        "int8",
        [1, 1, 4, 5, 16],
    )
    assert out.data.dtype == np.uint8
    assert out.data.tobytes() == pack_nc1hwc2(x).tobytes()
    assert out.attributes["query"] == "RKNN_QUERY_NATIVE_OUTPUT_ATTR"
    assert out.attributes["logical_attr"]["fmt"] == "NCHW"

    (back,) = result.inputs
    # Read back from zero-copy memory: padding bytes included, exactly as the runtime holds them.
    assert back.data.tobytes() == sent.tobytes()
    assert (back.layout, back.shape, back.attributes["w_stride"]) == ("NHWC", [1, 4, 5, 3], 16)
    assert set(result.timings) == {"run_s", "copy_s"}
    assert rknnrt.fake_rknn_sync_calls() > 0  # rknn_mem_sync around the run

    a.release(model)
    assert rknnrt.fake_rknn_live_mems() == 0
    assert rknnrt.fake_rknn_live_contexts() == 0


def test_nc1hwc2_native_input_for_other_channel_counts(
    rknnrt: Any, fake_libs: dict, tmp_path: Path
) -> None:
    a = adapter(fake_libs["rknnrt"])
    model = a.load(model_file(tmp_path, channels=20))
    attr = model.inputs[0].record
    assert (attr["fmt"], attr["dims"], attr["size_with_stride"]) == (
        "NC1HWC2",
        [1, 2, 4, 5, 16],
        640,
    )
    x = logical((1, 20, 4, 5), seed=3)
    inp = InputTensor("input", pack_nc1hwc2(x), "NC1HWC2", [1, 20, 4, 5], "int8", True)
    (out,) = a.run(model, [inp], None).outputs
    assert out.data.tobytes() == pack_nc1hwc2(x).tobytes()
    a.release(model)


def test_output_query_nhwc(rknnrt: Any, fake_libs: dict, tmp_path: Path) -> None:
    a = adapter(fake_libs["rknnrt"], output_query="native_nhwc")
    model = a.load(model_file(tmp_path))
    x = logical((1, 3, 4, 5), seed=5)
    (out,) = a.run(model, [native_input(pack_nhwc(x, 16))], None).outputs
    assert (out.layout, out.shape) == ("NHWC", [1, 4, 5, 3])
    assert out.attributes["query"] == "RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR"
    assert out.data.tobytes() == x.transpose(0, 2, 3, 1).tobytes()
    a.release(model)


def test_core_mask(rknnrt: Any, fake_libs: dict, tmp_path: Path) -> None:
    a = adapter(fake_libs["rknnrt"], soc="rk3588", core_mask="0_1_2")
    a.release(a.load(model_file(tmp_path)))
    assert rknnrt.fake_rknn_last_core_mask() == 7

    err = error_of(
        adapter(fake_libs["rknnrt"], soc="rk3566", core_mask="0").load, model_file(tmp_path)
    )
    assert (err.kind, err.stage) == ("UnsupportedError", "init")
    err = error_of(adapter(fake_libs["rknnrt"], core_mask="0_3").load, model_file(tmp_path))
    assert (err.kind, err.stage) == ("LayoutError", "init")
    assert rknnrt.fake_rknn_live_contexts() == 0


@pytest.mark.parametrize(
    ("option", "given"),
    [("0_1_2", 3), ("2", 1), ("0_1", 3), ("0", 1), ("1", 2), ("all", 0xFFFF), ("auto", 0)],
)
def test_rk3576_core_masks_as_the_runtime_expects(
    rknnrt: Any, fake_libs: dict, tmp_path: Path, option: str, given: int
) -> None:
    # RK3576 has two NPU cores: its runtime refuses masks naming core 2; RKNNLite 2.5.0 replaces
    # 0_1_2 with 0_1 and 2 with 0, and so does the adapter.
    rknnrt.fake_rknn_set_soc(b"rk3576")
    a = adapter(fake_libs["rknnrt"], soc="rk3576", core_mask=option)
    model = a.load(model_file(tmp_path))
    assert rknnrt.fake_rknn_last_core_mask() == given
    out = a.run(model, [native_input(pack_nhwc(logical((1, 3, 4, 5)), 16))], None).outputs[0]
    assert (out.attributes["core_mask"], out.attributes["core_mask_set"]) == (
        rknn_native.CORE_MASKS[option],
        given,
    )
    a.release(model)


def test_the_fake_rk3576_refuses_core_2(rknnrt: Any, fake_libs: dict, tmp_path: Path) -> None:
    # Without `soc` nothing is remapped, and the runtime refuses: what a test of the old adapter
    # would have seen.
    rknnrt.fake_rknn_set_soc(b"rk3576")
    err = error_of(adapter(fake_libs["rknnrt"], core_mask="0_1_2").load, model_file(tmp_path))
    assert (err.kind, err.stage, err.code) == ("DeviceError", "init", -5)
    assert rknnrt.fake_rknn_live_contexts() == 0


@pytest.mark.parametrize(
    ("fault", "stage", "kind", "code"),
    [
        ("init", "load", "DeviceError", -1),
        ("query", "load", "DeviceError", -1),
        ("create_mem", "load", "DeviceError", None),
        ("set_io_mem", "load", "DeviceError", -1),
        ("run", "run", "DeviceError", -1),
        ("timeout", "run", "TimeoutError", -2),
        ("destroy_mem", "release", "DeviceError", -1),
        ("destroy", "release", "DeviceError", -1),
    ],
)
def test_every_runtime_failure_is_typed(
    rknnrt: Any, fake_libs: dict, tmp_path: Path, fault: str, stage: str, kind: str, code: Any
) -> None:
    a = adapter(fake_libs["rknnrt"])
    path = model_file(tmp_path)
    model = None
    if stage != "load":
        model = a.load(path)
    rknnrt.fake_rknn_set_fault(fault.encode())
    if stage == "load":
        err = error_of(a.load, path)
    elif stage == "run":
        err = error_of(a.run, model, [native_input(pack_nhwc(logical((1, 3, 4, 5)), 16))], None)
    else:
        err = error_of(a.release, model)
    assert (err.kind, err.stage, err.code) == (kind, stage, code)
    assert err.record()["type"] == kind
    rknnrt.fake_rknn_set_fault(None)
    if stage == "run":
        a.release(model)
    # Whatever failed, nothing is left allocated.
    assert rknnrt.fake_rknn_live_mems() == 0
    assert rknnrt.fake_rknn_live_contexts() == 0


def test_invalid_model_is_a_load_error(rknnrt: Any, fake_libs: dict, tmp_path: Path) -> None:
    bad = tmp_path / "bad.rknn"
    bad.write_bytes(b"not a model")
    err = error_of(adapter(fake_libs["rknnrt"]).load, str(bad))
    assert (err.kind, err.stage, err.code) == ("DeviceError", "load", -6)
    assert "RKNN_ERR_MODEL_INVALID" in err.message


def test_missing_library_is_unsupported(tmp_path: Path) -> None:
    err = error_of(adapter(tmp_path / "librknnrt.so").load, model_file(tmp_path))
    assert (err.kind, err.stage) == ("UnsupportedError", "init")


def test_default_library_follows_the_soc() -> None:
    assert rknn_native._default_library("rv1106") == "librknnmrt.so"
    assert rknn_native._default_library("rk3588") == "librknnrt.so"
    assert rknn_native._default_library(None) == "librknnrt.so"


def test_inputs_must_be_native_and_whole(rknnrt: Any, fake_libs: dict, tmp_path: Path) -> None:
    a = adapter(fake_libs["rknnrt"])
    model = a.load(model_file(tmp_path))
    x = logical((1, 3, 4, 5))
    err = error_of(
        a.run, model, [native_input(x.reshape(-1).view(np.uint8), pass_through=False)], None
    )
    assert (err.kind, err.stage) == ("LayoutError", "run")
    assert "pass_through" in err.message
    short = pack_nhwc(x, 16)[:-1]
    err = error_of(a.run, model, [native_input(short)], None)
    assert (err.kind, err.stage) == ("LayoutError", "run")
    assert "191 bytes" in err.message and "192" in err.message
    a.release(model)


def test_names_match_by_name_else_by_position(rknnrt: Any, fake_libs: dict, tmp_path: Path) -> None:
    a = adapter(fake_libs["rknnrt"])
    model = a.load(model_file(tmp_path))
    data = pack_nhwc(logical((1, 3, 4, 5)), 16)
    result = a.run(model, [native_input(data, name="images")], ["output"])
    assert result.inputs[0].attributes["matched_by"] == "position"
    assert [t.name for t in result.outputs] == ["output"]
    err = error_of(a.run, model, [native_input(data), native_input(data, "x")], None)
    assert (err.kind, err.stage) == ("LayoutError", "run")
    a.release(model)


def test_release_is_idempotent(rknnrt: Any, fake_libs: dict, tmp_path: Path) -> None:
    a = adapter(fake_libs["rknnrt"])
    model = a.load(model_file(tmp_path))
    a.release(model)
    a.release(model)
    err = error_of(a.run, model, [], None)
    assert (err.kind, err.stage) == ("DeviceError", "run")


def test_versions_before_any_load(rknnrt: Any, fake_libs: dict) -> None:
    # The SDK query needs a context: before a load only the library is known (and loadable).
    assert adapter(fake_libs["rknnrt"]).versions() == {"library": str(fake_libs["rknnrt"])}
