"""The KL730 layout parameters a device gets wrong: what forensics tries to explain a buffer
(``npu_hil.harness.diff.forensics``) and what the simulator's ``wrong-alignment`` fault lays out
instead."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from npu_hil.harness.codec.engine import BlockedLayout
from npu_hil.harness.errors import LayoutError
from npu_hil.targets.kneron import kl730
from npu_hil.targets.kneron.kl730 import Kl730LayoutParams
from npu_hil.targets.unit import ROW_ALIGNMENTS as ALIGNMENTS


def forensic_variants(
    name: str, role: str, shape: tuple[int, ...], dtype: np.dtype
) -> Iterator[tuple[Kl730LayoutParams, str]]:
    fmt = kl730.FORMATS[name]
    if fmt.bits == 16:
        yield {"value_bits": 16 if fmt.quirk_15bit else 15}, ""
    try:
        shape4, inserted = kl730.canonical_shape(shape)
    except LayoutError:
        return
    for cols in ALIGNMENTS:
        if cols == fmt.entry_cols:
            continue
        strides = kl730.predict_stride_npu(dataclasses.replace(fmt, entry_cols=cols), shape4)
        given = [s for a, s in enumerate(strides) if a not in inserted]
        yield {"stride_npu": given}, f"rows padded to {cols} columns"


def fault_variants(layout: BlockedLayout) -> Iterator[Kl730LayoutParams]:
    fmt = kl730.FORMATS[layout.name]
    shape4, inserted = kl730.canonical_shape(layout.shape)
    for cols in (4, 8, 16, 32, 64, shape4[3] + 1):
        if cols == fmt.entry_cols:
            continue
        strides = kl730.predict_stride_npu(dataclasses.replace(fmt, entry_cols=cols), shape4)
        yield {"stride_npu": [s for a, s in enumerate(strides) if a not in inserted]}
