"""The vendor units' API paths as data: which adapters each vendor offers, and how each path's
output is read as the model's tensor and its attributes under the shared names (the cross-API
check compares those)."""

from __future__ import annotations

import numpy as np
import pytest

from npu_hil.targets.registry import unit_for


def paths(target: str) -> dict[str, object]:
    return {p.adapter: p for p in unit_for(target).api_paths}


def test_each_vendor_names_its_paths_native_first() -> None:
    for target, expected in (
        ("rk3588", ["rknn_native", "rknnlite"]),
        ("rv1106", ["rknn_native", "rknnlite"]),
        ("rdk-x5", ["hobot_native", "hobot"]),
        ("kl730", ["kneron"]),
    ):
        found = unit_for(target).api_paths
        assert [p.adapter for p in found] == expected
        assert found[0].native and all(p.read is not None for p in found[1:])
        # the board's default adapter is the first path
        assert unit_for(target).hardware_adapter == expected[0]


def test_the_normal_api_reads_rknnlite_float_arrays() -> None:
    path = unit_for("rk3588").api_paths[1]
    assert path.read is not None
    values = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    got = path.read(
        "out",
        values.reshape(-1).view(np.uint8),
        {"dtype": "float32", "shape": [1, 2, 3, 4]},
        (1, 2, 3, 4),
    )
    assert got.values is not None and np.array_equal(got.values, values)
    # float32 / NCHW is the conversion rknn_outputs_get documents: only the shape is compared
    assert dict(got.attributes) == {"shape": [1, 2, 3, 4]}
    short = path.read("out", np.zeros(10, np.uint8), {"dtype": "float32", "shape": [1, 2]}, (1, 2))
    assert short.values is None and "10 bytes" in short.note


def test_zero_copy_attributes_under_the_shared_names() -> None:
    native = unit_for("rk3588").api_paths[0]
    assert native.attributes is not None
    attr = {"type": 2, "fmt": 2, "zp": -3, "scale": 0.5, "size": 256, "dims": [1, 1, 2, 4, 16]}
    assert native.attributes(attr) == {
        "dtype": "int8",
        "layout": "NC1HWC2",
        "zero_point": -3,
        "scale": 0.5,
        "size": 256,
    }
    horizon = unit_for("rdk-x5").api_paths[0]
    assert horizon.attributes is not None
    props = {
        "tensorType": "S8",
        "tensorLayout": "NCHW",
        "validShape": [1, 2, 2, 3],
        "alignedShape": [1, 2, 2, 32],
        "scale": [0.1, 0.2],
    }
    assert horizon.attributes(props) == {
        "dtype": "int8",
        "layout": "NCHW",
        "valid_shape": [1, 2, 2, 3],
        "aligned_shape": [1, 2, 2, 32],
        "scale": [0.1, 0.2],
    }


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_hobot_buffers_are_read_as_nchw_tensors(layout: str) -> None:
    read = unit_for("rdk-x5").api_paths[1].read
    assert read is not None
    logical = np.arange(12, dtype=np.int8).reshape(1, 2, 2, 3)
    held = logical if layout == "NCHW" else logical.transpose(0, 2, 3, 1)
    valid = list(held.shape)
    got = read(
        "out",
        held.reshape(-1).view(np.uint8),
        {
            "tensor_type": "int8",
            "layout": layout,
            "validShape": valid,
            "alignedShape": valid,
            "scale_data": [0.1, 0.2],
            "buffer_faithful": True,
        },
        (1, 2, 2, 3),
    )
    assert got.values is not None and np.array_equal(got.values, logical)
    assert got.attributes["dtype"] == "int8" and got.attributes["scale"] == [0.1, 0.2]


def test_a_hobot_buffer_known_to_keep_the_padding_is_not_compared() -> None:
    read = unit_for("rdk-x5").api_paths[1].read
    assert read is not None
    got = read(
        "out",
        np.zeros(12, np.uint8),
        {
            "tensor_type": "int8",
            "layout": "NCHW",
            "validShape": [1, 2, 2, 3],
            "alignedShape": [1, 2, 2, 32],
            "buffer_faithful": False,
            "caveats": [".buffer holds the first prod(validShape)"],
        },
        (1, 2, 2, 3),
    )
    assert got.values is None and "not the tensor" in got.note and "prod(validShape)" in got.note
    # its attributes are still compared
    assert got.attributes["aligned_shape"] == [1, 2, 2, 32]
