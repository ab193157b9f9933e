"""The KL730 node descriptor read into a codec layout: ``data_layout`` and ``stride_npu``,
logical ``shape``."""

from __future__ import annotations

from collections.abc import Mapping
from math import prod
from typing import Any

import numpy as np

from npu_hil.harness.codec.engine import BlockedLayout
from npu_hil.harness.codec.params import int_tuple
from npu_hil.harness.codec.registry import get_layout
from npu_hil.harness.codec.reported import require_field as _require
from npu_hil.harness.errors import LayoutError
from npu_hil.targets.kneron import kl730

KL730_PREFIX = "KP_MODEL_TENSOR_DATA_LAYOUT_"


class KneronReport:
    """The :class:`~npu_hil.harness.codec.registry.ReportReader` of the KL730."""

    def dtype(self, target: str, attributes: Mapping[str, Any]) -> np.dtype:
        return _kl730_format(attributes).dtype

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
        fmt = _kl730_format(attributes)
        where = f"kl730 {fmt.name} ({role})"
        if shape is None:
            shape = int_tuple(where, "shape", _require(attributes, "shape", where))
        extra: dict[str, Any] = {}
        if reported and "stride_npu" in attributes:
            extra["stride_npu"] = list(attributes["stride_npu"])
        if prod(shape) < 1:
            raise LayoutError(f"{where}: shape {list(shape)} holds no element")
        return get_layout(target, fmt.name, shape, dtype, role=role, **extra, **params)


def _kl730_format(attributes: Mapping[str, Any]) -> kl730.Kl730Format:
    raw = _require(attributes, "data_layout", "kl730 node descriptor")
    if not isinstance(raw, str):
        raise LayoutError(
            f"kl730 node descriptor: data_layout {raw!r} must be a format name (the numbering "
            "drifted between SDK versions: map names, never numbers)"
        )
    name = raw.upper().removeprefix(KL730_PREFIX)
    if name not in kl730.FORMATS:
        raise LayoutError(
            f"kl730 node descriptor: unknown data_layout {raw!r}; formats: "
            f"{', '.join(kl730.FORMATS)}"
        )
    return kl730.FORMATS[name]
