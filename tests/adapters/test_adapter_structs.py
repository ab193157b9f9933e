"""The adapters' ctypes mirrors against a C compile of the same header declarations: every struct's
size and every field's offset, per ABI. (RKNN and Kneron PLUS: both sides are held to the measured
facts instead, in test_abi_rknn.py and test_abi_kplus.py.)"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import pytest

from npu_hil.harness.board.adapters import hobot_native
from tests.adapters import mirrors

CASES = [
    ("dnn_x3x5", mirrors.HB_STRUCTS_X3X5),
    ("dnn_s100", mirrors.HB_STRUCTS_S100),
]


@pytest.mark.parametrize(("lib_name", "structs"), CASES, ids=[c[0] for c in CASES])
def test_sizes_and_offsets_match_the_c_declarations(
    layout_exports: Callable[[str], Any], lib_name: str, structs: dict[str, Any]
) -> None:
    lib = layout_exports(lib_name)
    for c_name, cls in structs.items():
        assert lib.fake_sizeof(c_name.encode()) == ctypes.sizeof(cls), f"sizeof({c_name})"
        if issubclass(cls, ctypes.Union):
            continue  # every member of a union sits at offset 0
        for field_name, *_ in cls._fields_:
            offset = lib.fake_offsetof(c_name.encode(), field_name.encode())
            assert offset != -1, f"the C table lacks {c_name}.{field_name}"
            assert offset == getattr(cls, field_name).offset, f"offsetof({c_name}, {field_name})"


def test_horizon_abis_differ_where_the_headers_do() -> None:
    x3x5, s100 = hobot_native.TensorPropertiesX3X5, hobot_native.TensorPropertiesS100
    assert "alignedShape" in dict(x3x5._fields_)
    assert "alignedShape" not in dict(s100._fields_)
    assert dict(x3x5._fields_)["stride"]._type_ is ctypes.c_int32
    assert dict(s100._fields_)["stride"]._type_ is ctypes.c_int64
    assert dict(s100._fields_)["stride"]._length_ == 10
    assert dict(hobot_native.QuantiScaleS100._fields_)["zeroPointData"]._type_ is ctypes.c_int32
    assert dict(hobot_native.QuantiScaleX3X5._fields_)["zeroPointData"]._type_ is ctypes.c_int8
