"""The ``unaligned-width`` fault (:mod:`npu_hil.harness.sim.faults`): what the model reads of an
input whose rows one API path places W elements apart while the layout places them a row stride
apart.

A layout pads its rows when the dims above the width's are further apart than a dense row; the
"dense rows" view of it is the same dims with those strides packed tight, which is how a path
that ignores the row stride lays out or reads the bytes. Layouts without row padding (NC1HWC2
planes, aligned widths) have no such view: the fault does not touch them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import numpy as np

from npu_hil.harness.codec import BlockedLayout
from npu_hil.harness.sim.faults import Fault
from npu_hil.harness.simkit.base import HeldInput
from npu_hil.harness.simkit.errors import SimConfigError
from npu_hil.targets.registry import unit_for

__all__ = ["apply_unaligned_width", "dense_rows"]


def dense_rows(layout: BlockedLayout) -> BlockedLayout | None:
    """``layout`` with its rows W elements apart, None when its rows are not padded."""
    if "w" not in layout.axis_names or layout.inserted_axes:
        return None
    width = [d for d in layout.dims if d.axis == layout.axis_names.index("w")]
    if len(width) != 1:
        return None  # a blocked width: no row of W elements to misplace
    row = width[0]
    running = row.stride * row.size
    dims = list(layout.dims)
    for i in sorted(range(len(dims)), key=lambda i: layout.dims[i].stride):
        if dims[i].stride > row.stride:
            dims[i] = dataclasses.replace(dims[i], stride=running)
            running *= dims[i].size
    if dims == list(layout.dims):
        return None
    return dataclasses.replace(layout, dims=tuple(dims))


def apply_unaligned_width(
    faults: Iterable[Fault], path: str, held: Sequence[HeldInput], target: str
) -> None:
    """Misread every padded input (or the ``tensors`` named) when this run's API path
    (``normal`` or ``zero-copy``) is the fault's: the model computes on what that path makes
    of the rows."""
    chosen = [f for f in faults if f.name == "unaligned-width"]
    if not chosen or chosen[0].params.get("path", "normal") != path:
        return
    names = chosen[0].params.get("tensors")
    quant = unit_for(target).quant
    changed = []
    for item in held:
        tensor = item.tensor
        if names is not None and tensor.name not in names:
            continue
        layout = tensor.codec_layout
        tight = dense_rows(layout)
        if tight is None or quant is None:
            continue
        if path == "normal":
            # The runtime converted the logical input writing rows W apart; the NPU reads the
            # buffer with the row stride.
            values = layout.unpack(tensor.data)
            misread = layout.unpack(np.resize(tight.pack(values), layout.nbytes))
        else:
            misread = tight.unpack(tensor.data)
        item.model_value = quant.model_input(dict(tensor.attributes), misread)
        changed.append(tensor.name)
    if not changed:
        raise SimConfigError(
            f"fault unaligned-width ({path} path) applies to no input of this run: it needs an "
            "input whose layout pads its rows (a width that is not a multiple of the row "
            "alignment)"
        )
