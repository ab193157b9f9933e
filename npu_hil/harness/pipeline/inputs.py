"""The pipeline's pack step: logical tensors where the board's runtime converts them, buffers
packed by the host codec where the runtime takes only its native layout."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from npu_hil.harness.agent.protocol import InputSpec
from npu_hil.harness.codec import get_layout
from npu_hil.harness.errors import LayoutError
from npu_hil.harness.farm.session import BoardSession
from npu_hil.targets.registry import pass_through_adapters, unit_named

__all__ = ["job_inputs"]


def job_inputs(
    session: BoardSession,
    given: Mapping[str, np.ndarray],
    input_layout: str | Mapping[str, str] | None,
) -> tuple[tuple[InputSpec, ...], dict[str, np.ndarray]]:
    """The job's inputs: logical tensors where the runtime converts them, buffers packed by the
    host codec where the runtime takes only its native layout."""
    # Adapters whose runtime takes only native buffers: the host packs inputs with the codec.
    pass_through = session.adapter in pass_through_adapters()
    specs: list[InputSpec] = []
    arrays: dict[str, np.ndarray] = {}
    for name, value in given.items():
        wanted = input_layout.get(name) if isinstance(input_layout, Mapping) else input_layout
        if pass_through:
            layout_name = wanted or _default_input_layout(session.board.vendor, value.shape)
            layout = get_layout(session.target, layout_name, value.shape, value.dtype, role="input")
            arrays[name] = layout.pack(value)
        else:
            # "NCHW" asks the runtime for its default native layout.
            layout_name = wanted or "NCHW"
            arrays[name] = value
        specs.append(
            InputSpec(name, layout_name, tuple(value.shape), value.dtype.name, pass_through)
        )
    return tuple(specs), arrays


def _default_input_layout(vendor: str, shape: tuple[int, ...]) -> str:
    """The native input layout packed for a pass-through runtime when the caller names none."""
    default = unit_named(vendor).default_input_layout
    if default is None:
        raise LayoutError(f"vendor {vendor}: no default native input layout; name one")
    return default(shape)
