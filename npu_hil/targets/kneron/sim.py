"""Kneron KL730, simulated: generic data inference with raw fixed-point NPU nodes; what it holds,
reports and refuses: docs/runtime/agent.md."""

from __future__ import annotations

import numpy as np

from npu_hil.harness.codec import BlockedLayout
from npu_hil.harness.simkit.base import (
    HeldInput,
    RuntimeOptions,
    VendorSim,
    dense_strides,
    static_shape,
)
from npu_hil.harness.simkit.errors import SimRefusal
from npu_hil.harness.simkit.graph import GraphInfo, TensorInfo
from npu_hil.harness.simkit.tensors import InputLike, SimTensor, input_dtype, logical_input
from npu_hil.targets.kneron import kl730
from npu_hil.targets.kneron.quant import CHANNEL_AXIS, NodeDescriptor, model_input
from npu_hil.targets.quant import FixedPoint, choose_fixed_point, fixed_point_for_type


class KneronSim(VendorSim):
    def __init__(self, options: RuntimeOptions) -> None:
        super().__init__(options)
        self.output_format = options.output_layout or "1W16C8B"
        self._require_format(self.output_format, "output_layout", "init")

    def _require_format(self, name: str, what: str, stage: str) -> kl730.Kl730Format:
        fmt = kl730.FORMATS.get(name)
        if fmt is None:
            raise SimRefusal(
                "LayoutError",
                stage,
                f"kl730: {what} {name!r} is not a KL730 format; formats: "
                f"{', '.join(kl730.FORMATS)}",
            )
        return fmt

    @property
    def output_dtype(self) -> np.dtype:
        return kl730.FORMATS[self.output_format].dtype

    def check_model(self, graph: GraphInfo) -> None:
        for info in graph.outputs:
            shape = static_shape(info)
            self.layout(self.output_format, shape, self.output_dtype, "output", "load", info.name)

    # ---------------------------------------------------------------------- inputs

    def hold_input(self, index: int, info: TensorInfo, given: InputLike) -> HeldInput:
        dtype = input_dtype(given)
        shape = tuple(int(d) for d in given.shape)
        self.check_shape(info, shape)
        if dtype.kind == "u":
            raise SimRefusal(
                "LayoutError",
                "run",
                f"input {given.name!r}: KL730 NPU data is signed fixed point (int8 or int16, or "
                f"float data to quantize), got {dtype.name}",
            )
        channels = shape[CHANNEL_AXIS] if len(shape) > 1 else shape[0]
        default = "4W4C8B" if channels <= 4 else "1W16C8B"
        if dtype.itemsize == 2:
            default = "1W16C8BHL"
        name = self.input_layout_name(given, tuple(kl730.FORMATS), default)
        if dtype.kind == "f":
            if given.pass_through:
                raise SimRefusal(
                    "LayoutError",
                    "run",
                    f"input {given.name!r}: pass-through data must be the NPU's fixed point "
                    f"(int8/int16), got {dtype.name}",
                )
            stored = kl730.FORMATS[name].dtype
        else:
            stored = dtype
        layout = self.layout(name, shape, stored, "input", "run", given.name)
        quant, values = fixed_point_for_type(stored), None
        if not given.pass_through:
            values = logical_input(given)[0]
            if dtype.kind == "f":
                bits = int(layout.attributes["value_bits"])
                quant = choose_fixed_point(values, stored, value_bits=bits)
                values = quant.quantize(values)
        buffer, held = self.place(layout, given, values)
        attributes = dict(node_descriptor(index, given.name, layout, quant))
        tensor = SimTensor(
            given.name, buffer, layout.name, stored.name, list(shape), attributes, layout, "input"
        )
        return HeldInput(tensor, model_input(attributes, held))

    # --------------------------------------------------------------------- outputs

    def hold_output(
        self, index: int, info: TensorInfo, values: np.ndarray, graph: GraphInfo
    ) -> SimTensor:
        shape = static_shape(info, "run")
        dtype = self.output_dtype
        layout = self.layout(self.output_format, shape, dtype, "output", "run", info.name)
        quant = choose_fixed_point(values, dtype, value_bits=int(layout.attributes["value_bits"]))
        buffer = self.output_buffer(info.name, layout, quant.quantize(values))
        attributes = dict(node_descriptor(index, info.name, layout, quant))
        return SimTensor(
            info.name, buffer, layout.name, dtype.name, list(shape), attributes, layout, "output"
        )


# ------------------------------------------------------------- attributes and semantics


def node_descriptor(
    index: int, name: str, layout: BlockedLayout, quant: FixedPoint
) -> NodeDescriptor:
    """The node descriptor Kneron PLUS returns with a raw fixed-point node."""
    return {
        "index": index,
        "name": name,
        "data_layout": layout.name,
        "shape": list(layout.shape),
        "stride_npu": list(layout.attributes["stride_npu"]),
        "stride_onnx": dense_strides(layout.shape),
        "quantized_axis": quant.axis if quant.axis is not None else CHANNEL_AXIS,
        "radix": list(quant.radix),
        "scale": list(quant.scale),
    }
