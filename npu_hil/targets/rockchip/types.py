"""RKNN's tensor type and quantization enums (``rknn_api.h``), by name and by code."""

from __future__ import annotations

__all__ = ["RKNN_QNT_CODES", "RKNN_TYPES", "RKNN_TYPE_CODES"]

RKNN_TYPES = {
    "int8": "INT8",
    "uint8": "UINT8",
    "float16": "FLOAT16",
    "int16": "INT16",
    "float32": "FLOAT32",
    "int32": "INT32",
    "uint16": "UINT16",
    "uint32": "UINT32",
    "int64": "INT64",
}
RKNN_TYPE_CODES = {
    0: "FLOAT32",
    1: "FLOAT16",
    2: "INT8",
    3: "UINT8",
    4: "INT16",
    5: "UINT16",
    6: "INT32",
    7: "UINT32",
    8: "INT64",
    9: "BOOL",
    10: "INT4",
    11: "BFLOAT16",
}
"""``rknn_tensor_type`` values (rknn_api.h 2.3.2, tests/data/abi/rknn_api-2.3.2.json)."""
RKNN_QNT_CODES = {0: "NONE", 1: "DFP", 2: "AFFINE_ASYMMETRIC"}
"""``rknn_tensor_qnt_type`` values (same header)."""
