"""Rockchip RKNN2, simulated: zero-copy native I/O as ``rknn_query(NATIVE_*_ATTR)`` describes it,
and the refusals of the device (docs/runtime/agent.md, "The simulated NPU")."""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from npu_hil.harness.codec import BlockedLayout
from npu_hil.harness.errors import LayoutError
from npu_hil.harness.simkit.base import HeldInput, RuntimeOptions, VendorSim, static_shape
from npu_hil.harness.simkit.errors import SimRefusal
from npu_hil.harness.simkit.graph import GraphInfo, TensorInfo
from npu_hil.harness.simkit.tensors import InputLike, SimTensor, input_dtype, logical_input
from npu_hil.targets.conv import ConvSite, check_conv
from npu_hil.targets.quant import Affine, Cast, Quantizer, affine_for_type, choose_affine
from npu_hil.targets.rockchip import observed
from npu_hil.targets.rockchip import tables as rockchip
from npu_hil.targets.rockchip.layouts import INPUT_LAYOUTS, OUTPUT_LAYOUTS
from npu_hil.targets.rockchip.observed import npu_input_types
from npu_hil.targets.rockchip.operators import refusal
from npu_hil.targets.rockchip.quant import AFFINE, NONE, RKNN_TYPES, RknnTensorAttr, model_input
from npu_hil.targets.rockchip.queries import FMT_CODES, NHWC_CHANNELS
from npu_hil.targets.rockchip.reported import RKNN_FMT_CODES

NO_CPU_PREPROCESSING = ("rv1103", "rv1106", "rv1103b")
"""RKNN2 input note 7: RV1106/RV1103/RV1103B do not run mean/scale/quant on the CPU."""

WIDTH_RULE_CHANNELS = (1, 3, 4)


class RockchipSim(VendorSim):
    def __init__(self, options: RuntimeOptions) -> None:
        super().__init__(options)
        self.precision = options.option("precision") or rockchip.default_first_layer(self.target)
        self.output_fmt = options.output_layout or "NC1HWC2"
        if self.output_fmt not in OUTPUT_LAYOUTS:
            raise SimRefusal(
                "LayoutError",
                "init",
                f"{self.target}: output_layout must be one of {', '.join(OUTPUT_LAYOUTS)}, "
                f"got {self.output_fmt!r}",
            )

    @property
    def numerics(self) -> str:
        """int8 through the graph for an int8 model (asymmetric activations, per-channel
        weights: rknn-toolkit2's default), float16 for a float16 one."""
        return "int8" if self.precision == "int8" else "float16"

    @property
    def output_dtype(self) -> np.dtype:
        return np.dtype("int8" if self.precision == "int8" else "float16")

    # ------------------------------------------------------------------------ load

    def check_model(self, graph: GraphInfo) -> None:
        firsts = {row.first_layer for row in rockchip.input_rows(self.target)}
        if self.precision not in firsts:
            raise SimRefusal(
                "LayoutError",
                "load",
                f"{self.target}: no {self.precision} first layer in the input table "
                f"({rockchip.platform_of(self.target)} lists {', '.join(sorted(firsts))})",
            )
        self._check_convolutions(graph)
        self._check_operators(graph)
        for info in graph.outputs:
            self._output_layout(info, graph, "load")

    def _check_operators(self, graph: GraphInfo) -> None:
        """An operator the compiler refuses for this platform (measured one operator a model,
        npu_hil.targets.rockchip.operators) is refused at load, with the compiler's reason."""
        for op_type, attributes in dict.fromkeys(graph.nodes):
            reason = refusal(self.target, op_type, attributes)
            if reason is not None:
                raise SimRefusal(
                    "DeviceError",
                    "load",
                    f"{op_type}: the compiler refuses it for "
                    f"{rockchip.platform_of(self.target)} ({reason})",
                )

    def _check_convolutions(self, graph: GraphInfo) -> None:
        limited = any(len(i.shape) == 4 and i.shape[1] in WIDTH_RULE_CHANNELS for i in graph.inputs)
        if not limited:
            return  # the input table: "no limit" for other channel counts
        for conv in graph.convs:
            if conv.width is None:
                continue
            check = check_conv(
                self.target,
                conv.width,
                conv.kernel_hw,
                conv.dilation_hw,
                conv.kind,
                first_layer=self.precision,
                site=ConvSite(conv.height, conv.in_channels, conv.takes_input),
            )
            if not check.ok:
                raise SimRefusal(
                    "DeviceError",
                    "load",
                    f"{conv.name} ({conv.op_type}, group {conv.group}): {check.message}",
                )

    # ---------------------------------------------------------------------- inputs

    def hold_input(self, index: int, info: TensorInfo, given: InputLike) -> HeldInput:
        dtype = input_dtype(given)
        shape = tuple(int(d) for d in given.shape)
        self.check_shape(info, shape)
        native = self.output_dtype  # the first layer's type, which the outputs keep
        if given.pass_through and dtype != native:
            raise SimRefusal(
                "LayoutError",
                "run",
                f"input {given.name!r}: pass-through data goes to the NPU unconverted, so it "
                f"must be the model's native type {RKNN_TYPES[native.name]}, got {dtype.name}",
            )
        input_type = rockchip.input_type_of(dtype.name)
        if not given.pass_through and self.target in NO_CPU_PREPROCESSING:
            on_npu = npu_input_types(self.target)
            if input_type not in on_npu:
                raise SimRefusal(
                    "DeviceError",
                    "run",
                    f"input {given.name!r}: {self.target} does not run mean/scale/quant on the "
                    f"CPU (RKNN2 input note 7), which declared type {dtype.name} needs; give "
                    f"{' or '.join(sorted(on_npu))} data",
                )
        default = "UNDEFINE"
        if len(shape) == 4:
            default = "NHWC" if shape[1] in NHWC_CHANNELS else "NC1HWC2"
        fmt = self.input_layout_name(given, INPUT_LAYOUTS, default)
        layout = self.layout(
            fmt, shape, dtype, "input", "run", given.name, first_layer=self.precision
        )
        logical = None if given.pass_through else logical_input(given)[0]
        buffer, held = self.place(layout, given, logical)
        quant: Quantizer
        if self.precision != "int8":
            quant = Cast(np.dtype("float16"))
        elif given.pass_through:
            quant = affine_for_type("int8")
        elif dtype.kind in "iu":
            quant = affine_for_type(dtype)
        else:
            quant = choose_affine(held)
        tensor = sim_tensor(index, given.name, buffer, layout, quant, given.pass_through)
        return HeldInput(tensor, model_input(tensor.attributes, held))

    # --------------------------------------------------------------------- outputs

    def _output_layout(self, info: TensorInfo, graph: GraphInfo, stage: str) -> BlockedLayout:
        shape = static_shape(info, stage)
        fmt = self.output_fmt if len(shape) == 4 else "UNDEFINE"
        if fmt == "NCHW":
            # The codec also serves the normal API's NCHW output, which every platform gives;
            # as a zero-copy native output NCHW is offered only where the table lists it.
            precision = rockchip.precision_of(self.output_dtype.name)
            try:
                rockchip.output_row(self.target, precision=precision, rank=4, layout="NCHW")
            except LayoutError as exc:
                raise SimRefusal(
                    "LayoutError", stage, f"output {info.name!r}: {exc.message}"
                ) from None
        producer = graph.producers.get(info.name, "")
        dtype = np.dtype(
            observed.output_type(self.target, self.precision, producer, info.dtype.name)
        )
        params: dict[str, Any] = {}
        if fmt in ("NHWC", "NC1HWC2"):
            # What the compiler makes of the producing op (it fuses some into a conv).
            feeders = graph.feeders.get(info.name, ())
            params["last_op"] = observed.last_op_kind(self.target, producer, feeders)
        elif fmt == "UNDEFINE" and producer == "Softmax":
            params["last_axis_align"] = observed.softmax_last_axis_align(self.target)
        return self.layout(fmt, shape, dtype, "output", stage, info.name, **params)

    def hold_output(
        self, index: int, info: TensorInfo, values: np.ndarray, graph: GraphInfo
    ) -> SimTensor:
        layout = self._output_layout(info, graph, "run")
        quant: Quantizer
        if layout.dtype.kind in "iu" and layout.dtype.itemsize > 1:
            quant = Cast(layout.dtype)  # an index output (int64): no quantization
        elif layout.dtype == np.dtype("int8"):
            quant = choose_affine(values)
        else:
            quant = Cast(np.dtype("float16"))
        held = quant.quantize(values)
        buffer = self.output_buffer(info.name, layout, held)
        return sim_tensor(index, info.name, buffer, layout, quant, False)

    def normal_api_output(self, tensor: SimTensor, path: str) -> SimTensor:
        """What ``rknn_outputs_get`` with ``want_float`` hands back (RKNNLite.inference): the
        output dequantized, ``(q - zp) * scale`` in float32, in NCHW order for a 4-D tensor,
        with what RKNNLite reports of it (dtype, shape; see the rknnlite adapter)."""
        stored = tensor.codec_layout.unpack(tensor.data)
        attrs = tensor.attributes
        values = stored.astype(np.float32)
        if attrs.get("qnt_type") == AFFINE:
            values = (values - np.float32(attrs["zp"])) * np.float32(attrs["scale"])
        values = np.ascontiguousarray(values, dtype=np.float32)
        shape = [int(d) for d in values.shape]
        return SimTensor(
            tensor.name,
            values.reshape(-1).view(np.uint8).copy(),
            "NCHW" if values.ndim == 4 else "UNDEFINED",
            "float32",
            shape,
            {
                "source": f"simulated {path}: rknn_outputs_get(want_float=1)",
                "numeric_only": True,
                "native_bytes": False,
                "inputs_read_back": False,
                "layout_assumed": True,
                "dtype": "float32",
                "shape": shape,
            },
            tensor.codec_layout,
            "output",
        )


# ------------------------------------------------------------- attributes and semantics


def sim_tensor(
    index: int,
    name: str,
    buffer: np.ndarray,
    layout: BlockedLayout,
    quant: Quantizer,
    pass_through: bool,
) -> SimTensor:
    """The tensor held in ``buffer`` as ``layout`` lays it out, with its ``rknn_tensor_attr``."""
    attributes = tensor_attr(index, name, layout, quant, pass_through)
    return SimTensor(
        name,
        buffer,
        layout.name,
        layout.dtype.name,
        list(layout.shape),
        dict(attributes),
        layout,
        layout.role,
    )


def tensor_attr(
    index: int, name: str, layout: BlockedLayout, quant: Quantizer, pass_through: bool
) -> RknnTensorAttr:
    """``rknn_tensor_attr`` for a tensor held in ``layout`` (field names as in rknn_api.h)."""
    attrs = layout.attributes
    fmt = layout.name
    dims = list(attrs["native_dims"] if fmt == "NC1HWC2" else attrs["dims"])
    size = int(attrs["size"]) if fmt == "NHWC" and layout.role == "input" else layout.nbytes
    affine = isinstance(quant, Affine)
    return {
        "index": index,
        "name": name,
        "n_dims": len(dims),
        "dims": dims,
        "n_elems": prod(dims),
        "size": size,
        "fmt": RKNN_FMT_CODES[FMT_CODES[fmt]],
        "type": RKNN_TYPES[layout.dtype.name],
        "qnt_type": AFFINE if affine else NONE,
        "fl": 0,
        "zp": quant.zero_point if isinstance(quant, Affine) else 0,
        "scale": quant.scale if isinstance(quant, Affine) else 1.0,
        "w_stride": int(attrs["w_stride"]) if fmt == "NHWC" and layout.role == "input" else 0,
        "size_with_stride": layout.nbytes,
        "pass_through": int(pass_through),
        "h_stride": 0,
    }
