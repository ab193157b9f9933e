"""The RKNN layout parameters a device gets wrong: what forensics tries to explain a buffer
(``npu_hil.harness.diff.forensics``) and what the simulator's ``wrong-alignment`` fault lays out
instead."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from npu_hil.harness.codec.engine import BlockedLayout
from npu_hil.harness.codec.params import round_up
from npu_hil.targets.rockchip.layouts import RknnLayoutParams
from npu_hil.targets.unit import ROW_ALIGNMENTS as ALIGNMENTS

C2_BLOCKS = (4, 8, 16, 32)


def forensic_variants(
    name: str, role: str, shape: tuple[int, ...], dtype: np.dtype
) -> Iterator[tuple[RknnLayoutParams, str]]:
    if len(shape) != 4:
        return
    width = shape[3]
    if role == "input" and name == "NHWC":
        for align in ALIGNMENTS:
            yield {"w_stride": -(-width // align) * align}, f"width aligned to {align}"
        yield {"first_layer": "float16"}, ""
    if name in ("NHWC", "NC1HWC2") and role == "output":
        yield {"last_op": "other"}, ""
    if name == "NC1HWC2":
        for c2 in C2_BLOCKS:
            for last_op in ("conv", "other"):
                for hw_align in (1, 4):
                    params: RknnLayoutParams = {"c2": c2, "hw_align": hw_align}
                    if role == "output":
                        params["last_op"] = last_op
                    elif last_op == "other" or hw_align != 1:
                        continue
                    yield params, ""


def fault_variants(layout: BlockedLayout) -> Iterator[RknnLayoutParams]:
    attrs = layout.attributes
    if layout.name == "NHWC" and layout.role == "input":
        predicted = int(attrs["w_stride"])
        for align in (1, 4, 8, 16, 32):
            yield {"w_stride": round_up(layout.shape[3], align)}
        yield {"w_stride": predicted + int(attrs.get("width_align", 1))}
    elif layout.name == "NC1HWC2":
        c2 = int(attrs["c2"])
        for other in (c2 // 2, c2 * 2):
            if other >= 1:
                yield {"c2": other}
        if layout.role == "output":
            yield {"hw_align": 8 if int(attrs["hw_align"]) != 8 else 1}
    elif layout.name == "NHWC":
        yield {"last_op": "other" if layout.params.get("last_op", "conv") == "conv" else "conv"}
