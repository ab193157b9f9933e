"""Horizon BPU (RDK X3, X5, S100), simulated: libdnn's aligned buffers and
``hbDNNTensorProperties``; what it holds, reports and refuses: docs/runtime/agent.md."""

from __future__ import annotations

import numpy as np

from npu_hil.harness.codec import BlockedLayout
from npu_hil.harness.simkit.base import HeldInput, RuntimeOptions, VendorSim, static_shape
from npu_hil.harness.simkit.errors import SimRefusal
from npu_hil.harness.simkit.graph import GraphInfo, TensorInfo
from npu_hil.harness.simkit.tensors import InputLike, SimTensor, input_dtype, logical_input
from npu_hil.targets.horizon import layouts as horizon
from npu_hil.targets.horizon.layouts import ALIGNED_SHAPE_TARGETS, IMAGE_TYPES
from npu_hil.targets.horizon.quant import TensorProperties, image_shape, model_input
from npu_hil.targets.quant import (
    Cast,
    HorizonScale,
    HorizonShift,
    Quantizer,
    choose_horizon_scale,
    choose_horizon_shift,
)

LAYOUTS = ("strided", *IMAGE_TYPES)
CODEC_IMAGE = {"NV12": "NV12", "NV12_SEPARATE": "NV12", "Y": "Y"}
"""The codec layout of each image type: NV12_SEPARATE holds NV12's bytes in two memories."""
CHANNEL_AXIS = 1


class HorizonSim(VendorSim):
    def __init__(self, options: RuntimeOptions) -> None:
        super().__init__(options)
        self.output_quant = options.option("output_quant") or "scale"

    @property
    def output_dtype(self) -> np.dtype:
        return np.dtype("float32" if self.output_quant == "none" else "int8")

    def allocate(self, name: str, role: str, nbytes: int) -> np.ndarray:
        buffer = super().allocate(name, role, nbytes)
        address = int(buffer.ctypes.data)
        misaligned = address % horizon.FIRST_ADDRESS_ALIGN
        if misaligned:
            raise SimRefusal(
                "DeviceError",
                "run",
                f"hbDNNInfer: the {role} buffer of {name!r} starts at {hex(address)}, "
                f"{misaligned} bytes past a 32-byte boundary; the first address of every BPU "
                "input and output buffer must be 32-byte aligned (seeds/003)",
            )
        return buffer

    def check_model(self, graph: GraphInfo) -> None:
        for info in graph.outputs:
            shape = static_shape(info)
            self.layout("strided", shape, self.output_dtype, "output", "load", info.name)

    # ---------------------------------------------------------------------- inputs

    def hold_input(self, index: int, info: TensorInfo, given: InputLike) -> HeldInput:
        dtype = input_dtype(given)
        shape = tuple(int(d) for d in given.shape)
        native = LAYOUTS if self.target in ALIGNED_SHAPE_TARGETS else horizon.LAYOUTS
        name = self.input_layout_name(given, native, "strided")
        model_shape = static_shape(info, "run")
        if name in IMAGE_TYPES:
            codec = CODEC_IMAGE[name]
            frame = image_shape(codec, model_shape) if len(model_shape) == 4 else None
            channels = 3 if codec == "NV12" else 1
            if frame is None or model_shape[1] != channels or shape not in (frame, frame[1:]):
                raise SimRefusal(
                    "LayoutError",
                    "run",
                    f"input {given.name!r}: a {name} frame for a model input {list(model_shape)} "
                    f"must be {list(frame) if frame else '(N, rows, W)'} with "
                    f"{channels} model channel(s), got {list(shape)}",
                )
            if name == "NV12_SEPARATE" and model_shape[0] != 1:
                raise SimRefusal(
                    "LayoutError",
                    "run",
                    f"input {given.name!r}: NV12_SEPARATE takes one image (model input "
                    f"{list(model_shape)}); give a batch as NV12",
                )
        else:
            self.check_shape(info, shape)
        layout = self.layout(CODEC_IMAGE.get(name, name), shape, dtype, "input", "run", given.name)
        logical = None if given.pass_through else logical_input(given)[0]
        buffer, held = self.place(layout, given, logical)
        attributes = properties(
            self.target, index, given.name, layout, Cast(dtype), model_shape=model_shape
        )
        if name == "NV12_SEPARATE":
            attributes["tensorType"] = name
            attributes["memories"] = self.separate_memories(given.name, layout, buffer)
        tensor = SimTensor(
            given.name, buffer, name, dtype.name, list(shape), dict(attributes), layout, "input"
        )
        return HeldInput(tensor, model_input(attributes, held))

    def separate_memories(self, name: str, layout: BlockedLayout, frame: np.ndarray) -> list[int]:
        """NV12_SEPARATE: copy the frame's Y rows and UV rows into two allocations of their own
        (sysMem[0], sysMem[1]), each held to the first-address rule; their sizes."""
        rows = int(layout.shape[-2])
        pitch = int(layout.attributes["row_stride"])
        y_bytes = rows * 2 // 3 * pitch
        flat = frame.reshape(-1)
        planes = (("Y (sysMem[0])", flat[:y_bytes]), ("UV (sysMem[1])", flat[y_bytes:]))
        for label, part in planes:
            memory = self.allocate(f"{name} {label}", "input", part.size)
            memory[:] = part
        return [y_bytes, int(flat.size) - y_bytes]

    # --------------------------------------------------------------------- outputs

    def hold_output(
        self, index: int, info: TensorInfo, values: np.ndarray, graph: GraphInfo
    ) -> SimTensor:
        shape = static_shape(info, "run")
        layout = self.layout("strided", shape, self.output_dtype, "output", "run", info.name)
        # Per channel on a 4-D (NCHW) output; one scale for logits, tokens and other flat
        # outputs (a scale per element of a 1x1000 output would make every figure lossless).
        axis = CHANNEL_AXIS if values.ndim == 4 else None
        quant: Quantizer
        if self.output_quant == "scale":
            quant = choose_horizon_scale(values, axis)
        elif self.output_quant == "shift":
            quant = choose_horizon_shift(values, axis)
        else:
            quant = Cast(np.dtype("float32"))
        buffer = self.output_buffer(info.name, layout, quant.quantize(values))
        attributes = dict(properties(self.target, index, info.name, layout, quant))
        dtype = layout.dtype.name
        return SimTensor(
            info.name, buffer, layout.name, dtype, list(shape), attributes, layout, "output"
        )

    def normal_api_output(self, tensor: SimTensor, path: str) -> SimTensor:
        """What ``pyeasy_dnn`` ``Model.forward`` hands back as the vendor documents it: ``.buffer``
        the valid tensor (padding removed) in ``validShape``, still quantized, in the element
        type of ``tensor_type``; the properties the hobot adapter records."""
        values = np.ascontiguousarray(tensor.codec_layout.unpack(tensor.data))
        props = tensor.attributes
        valid = [int(d) for d in props["validShape"]]
        scale = props.get("scale") or []
        return SimTensor(
            tensor.name,
            values.reshape(-1).view(np.uint8).copy(),
            str(props.get("tensorLayout", "NCHW")),
            values.dtype.name,
            valid,
            {
                "source": f"simulated {path}: pyeasy_dnn Model.forward .buffer",
                "tensor_type": values.dtype.name,
                "dtype": values.dtype.name,
                "layout": str(props.get("tensorLayout", "NCHW")),
                "shape": valid,
                "validShape": valid,
                "alignedShape": props.get("alignedShape"),
                "scale_data": list(scale) if scale else None,
                "numeric_only": True,
                "native_bytes": False,
                "inputs_read_back": False,
                "buffer_faithful": True,
                "caveats": [],
            },
            tensor.codec_layout,
            "output",
        )


# ------------------------------------------------------------- attributes and semantics


def properties(
    target: str,
    index: int,
    name: str,
    layout: BlockedLayout,
    quant: Quantizer,
    *,
    model_shape: tuple[int, ...] | None = None,
) -> TensorProperties:
    """``hbDNNTensorProperties`` of a tensor held in ``layout`` (field names as in hb_dnn.h)."""
    attrs = layout.attributes
    if layout.name in IMAGE_TYPES:
        assert model_shape is not None
        valid = list(model_shape)
        # NV12/Y model inputs report no strides: 0 on X3/X5 (their docs), -1 (dynamic, the
        # caller supplies them) on S100.
        stride = [0 if target in ALIGNED_SHAPE_TARGETS else -1] * len(valid)
        aligned = [*valid[:-1], int(attrs["row_stride"])]
        tensor_type = layout.name
    else:
        valid = list(layout.shape)
        stride = list(attrs["stride"])
        aligned = list(attrs["predicted_alignedShape"])
        tensor_type = horizon.TENSOR_TYPES[layout.dtype.name]
    scaled = quant if isinstance(quant, HorizonScale) else None
    shifted = quant if isinstance(quant, HorizonShift) else None
    per_axis = scaled or shifted
    props: TensorProperties = {
        "index": index,
        "name": name,
        "validShape": valid,
        "alignedShape": aligned,
        "tensorLayout": "NCHW",
        "tensorType": tensor_type,
        "quantiType": "SCALE" if scaled else "SHIFT" if shifted else "NONE",
        "scale": list(scaled.scale) if scaled else [],
        "zeroPoint": list(scaled.zero_point) if scaled else [],
        "shift": list(shifted.shift) if shifted else [],
        "quantizeAxis": (per_axis.axis or 0) if per_axis else 0,
        "alignedByteSize": layout.nbytes,
        "stride": stride,
    }
    if target not in ALIGNED_SHAPE_TARGETS:
        del props["alignedShape"]  # S100's hb_dnn.h has no alignedShape
    return props
