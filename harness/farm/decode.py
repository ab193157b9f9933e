"""A device buffer of a run as the model's tensor: unpacked with the layout the run used, and
optionally turned into float values with the quantization the runtime reported for it.

The schemes, by what the runtime reports for the tensor:

- RKNN (``qnt_type``): ``AFFINE_ASYMMETRIC`` ``x = (q - zp) * scale``; ``DFP`` ``x = q / 2**fl``;
  ``NONE`` a cast;
- Horizon (``quantiType``): ``SCALE`` ``x = (q - zeroPoint) * scale`` per ``quantizeAxis`` (one
  value per tensor, or one per channel); ``SHIFT`` ``x = q / 2**shift``; ``NONE`` a cast;
- Kneron KL730 (``radix``, ``scale``, ``quantized_axis``): ``x = q / (scale * 2**radix)``, one
  pair per tensor or per channel.

A float tensor (the runtime kept float data) is returned as float32 whatever the scheme says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from npu_hil.harness.errors import DeviceError

RKNN_QNT = {0: "NONE", 1: "DFP", 2: "AFFINE_ASYMMETRIC"}


def _per_axis(values: Sequence[float] | float, axis: int, ndim: int, what: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    if array.size == 1:
        return array.reshape(())
    if not 0 <= axis < ndim:
        raise DeviceError(f"{what}: {array.size} values along axis {axis} of a {ndim}-D tensor")
    shape = [1] * ndim
    shape[axis] = array.size
    return array.reshape(shape)


def dequantize(values: np.ndarray, reported: Mapping[str, Any], what: str) -> np.ndarray:
    """``values`` (the logical tensor as stored) in float, by the reported scheme."""
    stored = np.asarray(values)
    if np.issubdtype(stored.dtype, np.floating):
        return stored.astype(np.float32)
    q = stored.astype(np.float64)
    if "qnt_type" in reported:
        kind = reported["qnt_type"]
        kind = RKNN_QNT.get(kind, str(kind)) if isinstance(kind, int) else str(kind)
        if kind == "AFFINE_ASYMMETRIC":
            out = (q - float(reported["zp"])) * float(reported["scale"])
        elif kind == "DFP":
            out = q / 2.0 ** int(reported["fl"])
        elif kind == "NONE":
            out = q
        else:
            raise DeviceError(f"{what}: unknown RKNN qnt_type {kind!r}")
    elif "quantiType" in reported:
        kind = str(reported["quantiType"])
        axis = int(reported.get("quantizeAxis", 0))
        if kind == "SCALE":
            scale = _per_axis(reported["scale"], axis, q.ndim, what)
            zeros = reported.get("zeroPoint") or [0]
            out = (q - _per_axis(zeros, axis, q.ndim, what)) * scale
        elif kind == "SHIFT":
            out = q / 2.0 ** _per_axis(reported["shift"], axis, q.ndim, what)
        elif kind == "NONE":
            out = q
        else:
            raise DeviceError(f"{what}: unknown Horizon quantiType {kind!r}")
    elif "radix" in reported and "scale" in reported:
        axis = int(reported.get("quantized_axis", 1))
        radix = _per_axis(reported["radix"], axis, q.ndim, what)
        scale = _per_axis(reported["scale"], axis, q.ndim, what)
        out = q / (scale * 2.0**radix)
    else:
        raise DeviceError(
            f"{what}: the runtime reported no quantization parameters (expected qnt_type, "
            f"quantiType, or radix and scale; got {sorted(reported)})"
        )
    return np.asarray(out, dtype=np.float32)
