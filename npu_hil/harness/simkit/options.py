"""The options a vendor's simulated runtime reads (checked by ``npu_hil.harness.sim.options``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RuntimeOptions:
    """One simulated board's options as its runtime reads them."""

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
