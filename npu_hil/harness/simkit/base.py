"""What every simulated vendor runtime does the same way: place a tensor in device memory.

A vendor unit's simulated runtime (``npu_hil/targets/<vendor>/sim.py``) subclasses
:class:`VendorSim`; the simulator (``npu_hil.harness.sim``) builds it from the unit and drives
it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from npu_hil.harness.codec import BlockedLayout, get_layout
from npu_hil.harness.codec.buffers import as_bytes
from npu_hil.harness.errors import LayoutError
from npu_hil.harness.simkit.errors import SimConfigError, SimRefusal
from npu_hil.harness.simkit.graph import GraphInfo, TensorInfo
from npu_hil.harness.simkit.tensors import InputLike, SimTensor, device_buffer


@dataclass(frozen=True)
class RuntimeOptions:
    """One simulated board's options as its runtime reads them (checked by
    ``npu_hil.harness.sim.options``)."""

    target: str
    faults: tuple[Any, ...] = ()
    executor: str = "auto"
    numerics: str = "auto"
    """``auto``: the vendor's own numerics through the graph; ``float``: the float graph."""
    buffer_offset: int = 0
    buffer_offsets: dict[str, int] = field(default_factory=dict)
    input_layout: str | None = None
    output_layout: str | None = None
    vendor_options: dict[str, str] = field(default_factory=dict)
    """The vendor unit's own options that were given (name → one of its choices)."""
    api_path: str | None = None
    """The vendor's API path the board is run through (an adapter of ``Vendor.api_paths``);
    None: the first, the native zero-copy path the simulated runtime is."""

    def option(self, name: str) -> str | None:
        """A vendor option's value, None when not given."""
        return self.vendor_options.get(name)

    def offset_for(self, name: str) -> int:
        return self.buffer_offsets.get(name, self.buffer_offset)


LOGICAL_LAYOUTS = ("NCHW", "logical")
"""Layout names an input may carry to mean "the logical tensor, lay it out the default way"."""


@dataclass
class HeldInput:
    """An input as the runtime holds it, and the float tensor the model computes on."""

    tensor: SimTensor
    model_value: np.ndarray


class VendorSim(ABC):
    """A vendor's runtime, simulated for one target."""

    def __init__(self, options: RuntimeOptions) -> None:
        self.options = options
        self.target = options.target

    @abstractmethod
    def check_model(self, graph: GraphInfo) -> None:
        """Load time: refuse what the runtime refuses to load."""

    @abstractmethod
    def hold_input(self, index: int, info: TensorInfo, given: InputLike) -> HeldInput:
        """Set one input: the device buffer, its attributes and what the model sees."""

    @abstractmethod
    def hold_output(
        self, index: int, info: TensorInfo, values: np.ndarray, graph: GraphInfo
    ) -> SimTensor:
        """The model's float output as the runtime holds it: quantized and laid out natively."""

    @property
    def numerics(self) -> str:
        """How the NPU computes the graph (``float``, ``int8`` or ``float16``,
        :mod:`npu_hil.harness.models.numerics`): ``float`` unless the vendor says otherwise."""
        return "float"

    def normal_api_output(self, tensor: SimTensor, path: str) -> SimTensor:
        """An output as the vendor's other API path ``path`` hands it back (converted by the
        runtime after the NPU wrote ``tensor``), with the attributes that path reports. A
        vendor with one API path has none to give."""
        raise SimConfigError(f"{self.target}: the simulated runtime has no API path {path!r}")

    # ----------------------------------------------------------------- shared steps

    def allocate(self, name: str, role: str, nbytes: int) -> np.ndarray:
        """Runtime memory for one tensor (Horizon checks its address)."""
        return device_buffer(nbytes, self.options.offset_for(name))

    def layout(
        self,
        name: str,
        shape: tuple[int, ...],
        dtype: np.dtype,
        role: str,
        stage: str,
        tensor: str,
        **params: Any,
    ) -> BlockedLayout:
        """The codec's layout; a combination the tables do not list is the runtime's refusal."""
        try:
            return get_layout(self.target, name, shape, dtype, role=role, **params)
        except LayoutError as exc:
            raise SimRefusal("LayoutError", stage, f"{role} {tensor!r}: {exc.message}") from None

    def place(
        self, layout: BlockedLayout, given: InputLike, values: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The device buffer of an input and the logical values it holds: pass-through bytes are
        copied as they come (they must fill the layout exactly); a logical tensor is packed."""
        buffer = self.allocate(given.name, "input", layout.nbytes)
        if given.pass_through:
            data = as_bytes(given.data, f"input {given.name!r}")
            if data.size != layout.nbytes:
                raise SimRefusal(
                    "LayoutError",
                    "run",
                    f"input {given.name!r}: pass-through data in {layout.name} must be "
                    f"{layout.nbytes} bytes (the runtime's size_with_stride), got {data.size}",
                )
            buffer[:] = data
        else:
            assert values is not None
            layout.pack(values, out=buffer)
        return buffer, layout.unpack(buffer)

    def output_buffer(self, name: str, layout: BlockedLayout, values: np.ndarray) -> np.ndarray:
        buffer = self.allocate(name, "output", layout.nbytes)
        layout.pack(values, out=buffer)
        return buffer

    def input_layout_name(
        self, given: InputLike, native: tuple[str, ...] | list[str], default: str
    ) -> str:
        """The native layout an input names, else ``input_layout``, else ``default``. A logical
        name (``NCHW``, ``logical`` or none) asks for the runtime's default; anything else must
        be one of the target's native input layouts (a typo is refused, not defaulted)."""
        for name, source in ((given.layout, "input"), (self.options.input_layout, "input_layout")):
            if not name or name in LOGICAL_LAYOUTS:
                continue
            if name not in native:
                raise SimRefusal(
                    "LayoutError",
                    "run",
                    f"input {given.name!r}: {source} {name!r} is not a native input layout of "
                    f"{self.target} ({', '.join(native)}; or {', '.join(LOGICAL_LAYOUTS)} for "
                    "the runtime's default)",
                )
            return name
        return default

    def check_shape(self, info: TensorInfo, shape: tuple[int, ...], what: str = "input") -> None:
        if not info.matches(shape):
            want = ["?" if d is None else d for d in info.shape]
            raise SimRefusal(
                "LayoutError",
                "run",
                f"{what} {info.name!r}: the model's {what} is {want}, got {list(shape)}",
            )


def static_shape(info: TensorInfo, stage: str = "load") -> tuple[int, ...]:
    if not info.static:
        raise SimRefusal(
            "UnsupportedError",
            stage,
            f"{info.name!r} has a symbolic shape {list(info.shape)}; the sim needs static shapes",
        )
    return tuple(int(d) for d in info.shape if d is not None)


def dense_strides(shape: tuple[int, ...]) -> list[int]:
    """C-order strides in elements."""
    strides = [1] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * shape[axis + 1]
    return strides
