"""Horizon Robotics BPU (RDK X3, X5, S100): the alignment rules of seeds/003 with their
provenance, the layouts and predictions (:mod:`.layouts`), the report reader (:mod:`.reported`),
the tensor record and quantization model (:mod:`.quant`) and the vendor unit (:mod:`.unit`). The
layout names are re-exported here (``from npu_hil.targets import horizon``).
"""

from __future__ import annotations

from npu_hil.targets.horizon.layouts import (
    FIRST_ADDRESS_ALIGN,
    IMAGE_PARAMS,
    IMAGE_WIDTH_ALIGN,
    LAYOUTS,
    SPATIAL_ALIGN,
    STRIDED_PARAMS,
    TARGETS,
    TENSOR_TYPES,
    SpatialAlign,
    build,
    layout_names,
    needs_padding,
    predict_aligned_shape,
    predict_stride,
    strides_of_aligned_shape,
    tables_text,
)
from npu_hil.targets.horizon.unit import UNIT

__all__ = [
    "FIRST_ADDRESS_ALIGN",
    "IMAGE_PARAMS",
    "IMAGE_WIDTH_ALIGN",
    "LAYOUTS",
    "SPATIAL_ALIGN",
    "STRIDED_PARAMS",
    "TARGETS",
    "TENSOR_TYPES",
    "UNIT",
    "SpatialAlign",
    "build",
    "layout_names",
    "needs_padding",
    "predict_aligned_shape",
    "predict_stride",
    "strides_of_aligned_shape",
    "tables_text",
]
