"""Horizon ``hbDNNTensorProperties`` read into a codec layout: ``strided`` with ``stride`` (or
``alignedShape`` where the strides are not given) and ``alignedByteSize``; ``NV12`` / ``Y`` frames
(tensorType) with the row stride read off ``alignedByteSize`` (their reported stride is -1 or 0:
dynamic).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from npu_hil.harness.codec.engine import BlockedLayout
from npu_hil.harness.codec.params import int_tuple, one_int
from npu_hil.harness.codec.registry import get_layout
from npu_hil.harness.codec.reported import require_field as _require
from npu_hil.harness.errors import LayoutError
from npu_hil.targets.horizon import layouts as horizon

_TYPES = ("S4", "U4", "S8", "U8", "F16", "S16", "U16", "F32", "S32", "U32", "F64", "S64", "U64")
"""The tensor types, in the order both headers number them."""
HORIZON_TYPE_CODES = dict(
    enumerate(("Y", "NV12", "NV12_SEPARATE", "YUV444", "RGB", "BGR", *_TYPES))
)
"""``hbDNNDataType`` of the X3/X5 hb_dnn.h (libdnn 1.18.6 / 1.24.5, tests/data/abi)."""
HORIZON_TYPE_CODES_S100 = dict(enumerate((*_TYPES, "BOOL8")))
"""``hbDNNDataType`` of the S100 hb_dnn.h (UCP 3.13.6): tensor types only, S4 = 0."""
HORIZON_LAYOUT_CODES = {0: "NHWC", 2: "NCHW"}


class HorizonReport:
    """The :class:`~npu_hil.harness.codec.registry.ReportReader` of the RDK targets."""

    def dtype(self, target: str, attributes: Mapping[str, Any]) -> np.dtype:
        kind = _horizon_type(attributes, target)
        if kind in horizon.IMAGE_TYPES:
            return np.dtype("uint8")
        if kind not in horizon.DTYPE_OF_TYPE:
            raise LayoutError(
                f"hbDNNTensorProperties: tensorType {kind} has no codec layout "
                f"(tensor types: {', '.join(horizon.DTYPE_OF_TYPE)}; "
                f"images: {', '.join(horizon.IMAGE_TYPES)})"
            )
        return horizon.DTYPE_OF_TYPE[kind]

    def layout(
        self,
        target: str,
        role: str,
        attributes: Mapping[str, Any],
        dtype: np.dtype,
        shape: tuple[int, ...] | None,
        *,
        reported: bool,
        params: Mapping[str, object],
    ) -> BlockedLayout:
        kind = _horizon_type(attributes, target)
        where = f"{target} {kind} ({role})"
        valid = int_tuple(where, "validShape", _require(attributes, "validShape", where))
        tensor_layout = _horizon_layout(attributes)
        size = one_int(where, "alignedByteSize", attributes.get("alignedByteSize", 0))
        extra: dict[str, Any] = {"aligned_byte_size": size} if reported and size > 0 else {}
        by_aligned_shape = target in horizon.ALIGNED_SHAPE_TARGETS
        aligned_raw = attributes.get("alignedShape") if by_aligned_shape else None
        aligned = int_tuple(where, "alignedShape", aligned_raw) if aligned_raw is not None else None
        if kind in horizon.IMAGE_TYPES:
            if len(valid) != 4:
                raise LayoutError(f"{where}: validShape must be 4-D, got {list(valid)}")
            h_axis = 1 if tensor_layout == "NHWC" else 2
            n, h, w = valid[0], valid[h_axis], valid[h_axis + 1]
            rows = h if kind == "Y" else h * 3 // 2
            if shape is None:
                shape = (n, rows, w)
            if reported and aligned is not None and len(aligned) == 4:
                # X3/X5: the row pitch is alignedShape's W (their NV12/Y strides are all 0).
                row_stride = aligned[h_axis + 1]
                if row_stride < w:
                    raise LayoutError(
                        f"{where}: alignedShape {list(aligned)} is narrower than validShape "
                        f"{list(valid)}"
                    )
                extra["stride"] = row_stride
            elif reported and size > 0:
                row_stride, rest = divmod(size, n * rows)
                if not rest and row_stride >= w:
                    extra["stride"] = row_stride
            # NV12_SEPARATE holds the same bytes as NV12, Y and UV in two memories.
            name = "Y" if kind == "Y" else "NV12"
            return get_layout(target, name, shape, dtype, role=role, **extra)
        if shape is None:
            shape = valid
        extra["tensor_layout"] = tensor_layout
        if reported:
            raw = attributes.get("stride")
            stride = None if raw is None else [one_int(where, "stride", s) for s in raw]
            strided = stride is not None and all(s > 0 for s in stride)
            if aligned is not None:
                # X3/X5: the layout is validShape inside alignedShape (the documented rule); strides
                # that say otherwise are a contradiction to report, not a second opinion to pick.
                implied = list(horizon.strides_of_aligned_shape(aligned, dtype.itemsize))
                if strided and stride != implied:
                    raise LayoutError(
                        f"{where}: stride {stride} contradicts alignedShape {list(aligned)} "
                        f"(contiguous strides {implied})"
                    )
                extra["aligned_shape"] = list(aligned)
            elif strided:
                extra["stride"] = stride
            elif attributes.get("alignedShape") is not None:
                extra["aligned_shape"] = list(attributes["alignedShape"])
        return get_layout(target, "strided", shape, dtype, role=role, **extra, **params)


def _horizon_type(attributes: Mapping[str, Any], target: str) -> str:
    raw = _require(attributes, "tensorType", "hbDNNTensorProperties")
    if isinstance(raw, int) and not isinstance(raw, bool):
        # The two headers number the types differently (S100 has no image types).
        x3x5 = target in horizon.ALIGNED_SHAPE_TARGETS
        codes = HORIZON_TYPE_CODES if x3x5 else HORIZON_TYPE_CODES_S100
        if raw not in codes:
            raise LayoutError(f"{target} hbDNNTensorProperties: unknown tensorType code {raw}")
        return codes[raw]
    return str(raw).upper().removeprefix("HB_DNN_TENSOR_TYPE_").removeprefix("HB_DNN_IMG_TYPE_")


def _horizon_layout(attributes: Mapping[str, Any]) -> str:
    raw = attributes.get("tensorLayout", "NCHW")
    if isinstance(raw, int) and not isinstance(raw, bool):
        raw = HORIZON_LAYOUT_CODES.get(raw, raw)
    name = str(raw).upper().removeprefix("HB_DNN_LAYOUT_")
    if name not in ("NCHW", "NHWC"):
        raise LayoutError(f"hbDNNTensorProperties: tensorLayout {raw!r} is not NCHW or NHWC")
    return name
