"""Tensors going into and coming out of a simulated board, and the memory it holds them in."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from npu_hil.harness.codec import BlockedLayout, aligned_empty
from npu_hil.harness.simkit.errors import SimRefusal


class InputLike(Protocol):
    """One input of a job, as the agent hands it to an adapter (``adapters.base.InputTensor``).

    ``data`` is the file's bytes (flat uint8). With ``pass_through`` they are already in the
    device's native layout ``layout``; without it they are the logical tensor (``shape``,
    ``dtype``) in C order, and ``layout`` names the native layout wanted (or anything else, e.g.
    ``NCHW``, for the runtime's default).
    """

    @property
    def name(self) -> str: ...

    @property
    def data(self) -> np.ndarray: ...

    @property
    def layout(self) -> str: ...

    @property
    def shape(self) -> Any: ...

    @property
    def dtype(self) -> str: ...

    @property
    def pass_through(self) -> bool: ...


@dataclass
class SimInput:
    """An input for :meth:`npu_hil.harness.sim.SimNpu.run` (same fields as the agent's
    InputTensor)."""

    name: str
    data: np.ndarray
    layout: str
    shape: list[int]
    dtype: str
    pass_through: bool = False

    @classmethod
    def logical(cls, name: str, array: np.ndarray, layout: str = "") -> SimInput:
        """A logical tensor; ``layout`` names the native layout wanted ("" for the default)."""
        values = np.ascontiguousarray(array)
        return cls(
            name, values.reshape(-1).view(np.uint8), layout, list(values.shape), values.dtype.name
        )


@dataclass
class SimTensor:
    """A tensor as the simulated runtime holds it: the raw device buffer and the runtime's own
    attributes. ``layout`` is the runtime's layout name (as in ``adapters.base.TensorOut``);
    ``codec_layout`` the host codec's layout the buffer was written with."""

    name: str
    data: np.ndarray
    layout: str
    dtype: str
    shape: list[int]
    attributes: dict[str, Any]
    codec_layout: BlockedLayout
    role: str
    prior: np.ndarray | None = field(default=None, repr=False)
    """What the buffer held before the run wrote it: the agent's canary when it filled one, else
    the zeros of fresh memory. A fault that leaves bytes unwritten leaves these."""


@dataclass
class SimRun:
    """Device input buffers (as held after they were set), output buffers, timings in seconds."""

    inputs: list[SimTensor]
    outputs: list[SimTensor]
    timings: dict[str, float] = field(default_factory=dict)


def device_buffer(nbytes: int, offset: int = 0) -> np.ndarray:
    """Runtime memory of ``nbytes``: 32-byte aligned, or ``offset`` bytes past a boundary (to
    simulate a caller handing the runtime a buffer it allocated itself)."""
    raw = aligned_empty(nbytes + offset)
    buffer: np.ndarray = raw[offset : offset + nbytes]
    return buffer


def logical_input(given: InputLike, stage: str = "run") -> tuple[np.ndarray, np.dtype]:
    """The logical tensor of a non-pass-through input, checked against its declared shape/dtype."""
    dtype = input_dtype(given, stage)
    shape = tuple(int(d) for d in given.shape)
    data = np.ascontiguousarray(given.data).reshape(-1).view(np.uint8)
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if data.size != expected:
        raise SimRefusal(
            "LayoutError",
            stage,
            f"input {given.name!r}: {list(shape)} {dtype.name} needs {expected} bytes, "
            f"got {data.size}",
        )
    return data.view(dtype).reshape(shape), dtype


def input_dtype(given: InputLike, stage: str = "run") -> np.dtype:
    try:
        return np.dtype(given.dtype)
    except TypeError:
        raise SimRefusal(
            "LayoutError", stage, f"input {given.name!r}: unknown dtype {given.dtype!r}"
        ) from None
