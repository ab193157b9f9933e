"""The Horizon layout parameters a device gets wrong: what forensics tries to explain a buffer
(``npu_hil.harness.diff.forensics``) and what the simulator's ``wrong-alignment`` fault lays out
instead."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from npu_hil.harness.codec.engine import BlockedLayout
from npu_hil.harness.codec.params import round_up
from npu_hil.targets.horizon import layouts as horizon
from npu_hil.targets.horizon.layouts import HorizonLayoutParams
from npu_hil.targets.unit import ROW_ALIGNMENTS as ALIGNMENTS


def forensic_variants(
    name: str, role: str, shape: tuple[int, ...], dtype: np.dtype
) -> Iterator[tuple[HorizonLayoutParams, str]]:
    if name == "strided" and len(shape) == 4:
        for tensor_layout in ("NCHW", "NHWC"):
            h_axis, w_axis = (1, 2) if tensor_layout == "NHWC" else (2, 3)
            for h_align in ALIGNMENTS:
                for w_align in ALIGNMENTS:
                    aligned = list(shape)
                    aligned[h_axis] = -(-shape[h_axis] // h_align) * h_align
                    aligned[w_axis] = -(-shape[w_axis] // w_align) * w_align
                    stride = horizon.strides_of_aligned_shape(tuple(aligned), dtype.itemsize)
                    yield (
                        {"stride": list(stride)},
                        f"H aligned to {h_align}, W to {w_align} ({tensor_layout})",
                    )
    elif name in ("NV12", "Y") and len(shape) in (2, 3):
        for align in ALIGNMENTS:
            yield {"stride": -(-shape[-1] // align) * align}, f"rows aligned to {align} bytes"


def _strided_variants(layout: BlockedLayout) -> Iterator[HorizonLayoutParams]:
    aligned = list(layout.attributes["predicted_alignedShape"])
    item = layout.dtype.itemsize
    last = len(aligned) - 1
    for align in (1, 4, 8, 16, 64):
        other = list(aligned)
        other[last] = round_up(layout.shape[last], align)
        yield {"stride": list(horizon.strides_of_aligned_shape(tuple(other), item))}
    other = list(aligned)
    other[last] += 32
    yield {"stride": list(horizon.strides_of_aligned_shape(tuple(other), item))}


def fault_variants(layout: BlockedLayout) -> Iterator[HorizonLayoutParams]:
    width = layout.shape[-1]
    if layout.name == "strided":
        yield from _strided_variants(layout)
    else:
        for align in (1, 4, 8, 16, 64):
            yield {"stride": round_up(width, align)}
        yield {"stride": round_up(width, 32) + 32}
