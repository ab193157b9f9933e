"""Horizon Robotics BPU (RDK X3, RDK X5, RDK S100): seeds/003 as data, and its predictions: a
tensor is ``validShape`` plus byte ``stride`` (layouts ``strided``, and ``NV12`` / ``Y`` input
frames); each target's stride prediction is data with its source (:data:`SPATIAL_ALIGN`), and the
device's report always wins. The readings: docs/runtime/codec.md."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from math import prod

import numpy as np
from typing_extensions import TypedDict

from npu_hil.harness.codec.encodings import Encoding
from npu_hil.harness.codec.engine import BlockedLayout, Dim
from npu_hil.harness.codec.params import bounded_size, int_tuple, one_int, round_up, take_params
from npu_hil.harness.errors import LayoutError
from npu_hil.targets.unit import ROW_ALIGNMENTS

TARGETS = ("rdk-x3", "rdk-x5", "rdk-s100")
LAYOUTS = ("strided", "NV12", "Y")
IMAGE_TYPES = ("NV12", "NV12_SEPARATE", "Y")
"""Image tensor types; NV12_SEPARATE is NV12 in two memories (Y, then UV), read back as one."""
ALIGNED_SHAPE_TARGETS = ("rdk-x3", "rdk-x5")
"""Targets whose hb_dnn.h has alignedShape and tensorLayout: their documentation describes the
aligned data by alignedShape, and their NV12/Y model inputs report stride 0 (S100's has neither,
and no NV12_SEPARATE: its hbDNNTensor has one memory)."""
FIRST_ADDRESS_ALIGN = 32
IMAGE_WIDTH_ALIGN = 32


@dataclass(frozen=True)
class SpatialAlign:
    """How a target pads H and W of a 4-D tensor, in elements, and where the rule comes from."""

    h: int
    w: int
    source: str


SPATIAL_ALIGN = {
    "rdk-s100": SpatialAlign(
        32,
        32,
        "seeds/003 worked example: validShape [1,3,212,212] U16 -> stride "
        "[301056,100352,448,2] (H and W padded to 224)",
    ),
    "rdk-x5": SpatialAlign(2, 32, "community reports for X3/X5 (H to 2, W to 32); not in the seed"),
    "rdk-x3": SpatialAlign(2, 32, "community reports for X3/X5 (H to 2, W to 32); not in the seed"),
}

# hbDNNTensorProperties.tensorType names for the numpy dtypes the codec handles.
TENSOR_TYPES = {
    "int8": "S8",
    "uint8": "U8",
    "int16": "S16",
    "uint16": "U16",
    "float16": "F16",
    "float32": "F32",
    "int32": "S32",
    "uint32": "U32",
    "int64": "S64",
    "uint64": "U64",
    "float64": "F64",
}
DTYPE_OF_TYPE = {name: np.dtype(dtype) for dtype, name in TENSOR_TYPES.items()}

STRIDED_PARAMS = ("stride", "aligned_shape", "aligned_byte_size", "tensor_layout")
IMAGE_PARAMS = ("stride", "aligned_byte_size")


class HorizonLayoutParams(TypedDict, total=False):
    """The parameters of a Horizon layout (an image's row ``stride`` one number or the
    device's strides), as the forensics and the simulator's faults give them."""

    stride: list[int] | int
    aligned_shape: list[int]
    aligned_byte_size: int
    tensor_layout: str


def needs_padding(valid_shape: tuple[int, ...], stride: tuple[int, ...], element_size: int) -> bool:
    """seeds/003's padding test, ``prod(validShape[1:]) != stride[0]``, read with the element size
    the seed leaves out (strides are in bytes: its worked example, U16 [1,3,212,212] with stride[0]
    = 301056, only balances with it)."""
    return prod(valid_shape[1:]) * element_size != stride[0]


def predict_aligned_shape(
    target: str, shape: tuple[int, ...], tensor_layout: str
) -> tuple[int, ...]:
    """The aligned shape the target's runtime is expected to use for ``shape``."""
    aligned = list(shape)
    if len(shape) == 4:
        rule = SPATIAL_ALIGN[target]
        h_axis, w_axis = (1, 2) if tensor_layout == "NHWC" else (2, 3)
        aligned[h_axis] = round_up(shape[h_axis], rule.h)
        aligned[w_axis] = round_up(shape[w_axis], rule.w)
    return tuple(aligned)


def strides_of_aligned_shape(aligned: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """Contiguous byte strides over ``aligned`` (how X3/X5's alignedShape is laid out)."""
    return tuple(itemsize * prod(aligned[axis + 1 :]) for axis in range(len(aligned)))


def build(
    target: str,
    name: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    role: str,
    params: Mapping[str, object],
) -> BlockedLayout:
    where = f"{target} {name}"
    if name == "strided":
        return _strided(
            target, where, shape, dtype, role, take_params(where, params, STRIDED_PARAMS)
        )
    return _image(target, name, where, shape, dtype, role, take_params(where, params, IMAGE_PARAMS))


def _strided(
    target: str,
    where: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    role: str,
    params: Mapping[str, object],
) -> BlockedLayout:
    if dtype.name not in TENSOR_TYPES:
        raise LayoutError(
            f"{where}: dtype {dtype.name} has no BPU tensor type; expected one of "
            f"{', '.join(TENSOR_TYPES)}"
        )
    tensor_layout = str(params.get("tensor_layout", "NCHW")).upper()
    if tensor_layout not in ("NCHW", "NHWC"):
        raise LayoutError(f"{where}: tensor_layout must be NCHW or NHWC, got {tensor_layout!r}")
    item = dtype.itemsize
    # The byte strides the target's runtime is expected to report.
    predicted_aligned = predict_aligned_shape(target, shape, tensor_layout)
    predicted = strides_of_aligned_shape(predicted_aligned, item)
    provenance: dict[str, str] = {}
    if "stride" in params and "aligned_shape" in params:
        raise LayoutError(f"{where}: give either stride or aligned_shape, not both")
    if "stride" in params:
        stride = int_tuple(where, "stride", params["stride"], len(shape))
        provenance["stride"] = "given (device-reported)"
    elif "aligned_shape" in params:
        aligned = int_tuple(where, "aligned_shape", params["aligned_shape"], len(shape))
        short = [a for a, (v, s) in enumerate(zip(aligned, shape, strict=True)) if v < s]
        if short:
            raise LayoutError(
                f"{where}: aligned_shape {aligned} is smaller than validShape {shape} on axis "
                f"{short[0]}"
            )
        stride = strides_of_aligned_shape(aligned, item)
        provenance["stride"] = "derived from the device's aligned_shape (contiguous)"
    else:
        stride = predicted
        provenance["stride"] = f"predicted: {SPATIAL_ALIGN[target].source}"
    if any(s <= 0 for s in stride):
        raise LayoutError(f"{where}: strides must be positive, got {stride}")
    if stride[-1] != item and shape[-1] > 1:
        raise LayoutError(
            f"{where}: the last stride must be the element size {item} ({dtype.name}), got "
            f"{stride[-1]}"
        )
    default_size = stride[0] * shape[0]
    nbytes, size_source = _size(where, params, default_size)
    provenance["aligned_byte_size"] = size_source
    dims = tuple(
        Dim(a, n, s, 1, f"d{a}") for a, (n, s) in enumerate(zip(shape, stride, strict=True))
    )
    return BlockedLayout(
        target=target,
        name="strided",
        role=role,
        shape=shape,
        dtype=dtype,
        dims=dims,
        nbytes=nbytes,
        encoding=Encoding("raw", dtype),
        axis_names=(
            tuple(tensor_layout.lower())
            if len(shape) == 4
            else tuple(f"d{a}" for a in range(len(shape)))
        ),
        params=dict(params),
        provenance=provenance,
        attributes={
            "validShape": list(shape),
            "stride": list(stride),
            "predicted_stride": list(predicted),
            "predicted_alignedShape": list(predicted_aligned),
            "alignedByteSize": nbytes,
            "tensorType": TENSOR_TYPES[dtype.name],
            "needs_padding": needs_padding(shape, stride, item),
            "first_address_align": FIRST_ADDRESS_ALIGN,
        },
    )


def _image(
    target: str,
    name: str,
    where: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    role: str,
    params: Mapping[str, object],
) -> BlockedLayout:
    if role != "input":
        raise LayoutError(f"{where}: {name} is an input image type; outputs use 'strided'")
    if dtype.name != "uint8":
        raise LayoutError(f"{where}: {name} data is uint8, got {dtype.name}")
    if len(shape) not in (2, 3):
        raise LayoutError(f"{where}: expected shape (N, rows, W) or (rows, W), got {shape}")
    shape3 = shape if len(shape) == 3 else (1, *shape)
    _, rows, width = shape3
    if name == "NV12" and (rows % 3 or (rows // 3 * 2) % 2 or width % 2):
        raise LayoutError(
            f"{where}: NV12 needs even H and W (UV is half of Y): rows = 3H/2 with H even and "
            f"W even; got rows {rows}, W {width}"
        )
    predicted = round_up(width, IMAGE_WIDTH_ALIGN)
    row_stride = predicted
    provenance = {"stride": f"predicted: width rounded up to {IMAGE_WIDTH_ALIGN} bytes (seeds/003)"}
    given = params.get("stride")
    if given is not None:
        value = given if isinstance(given, int) else int_tuple(where, "stride", given)[-2:][0]
        value = one_int(where, "stride", value)
        if value > 0:  # the runtime reports -1 (S100) or 0 (J6): dynamic, the user supplies it
            row_stride = value
            provenance["stride"] = "given"
    if row_stride < width:
        # A given stride that breaks the 32-byte rule is the device's claim to check, not an error.
        raise LayoutError(f"{where}: row stride must be >= W ({width}), got {row_stride}")
    nbytes, size_source = _size(where, params, shape3[0] * rows * row_stride)
    provenance["aligned_byte_size"] = size_source
    dims = (
        Dim(0, shape3[0], rows * row_stride, 1, "n"),
        Dim(1, rows, row_stride, 1, "row"),
        Dim(2, width, 1, 1, "w"),
    )
    inserted = () if len(shape) == 3 else (0,)
    return BlockedLayout(
        target=target,
        name=name,
        role=role,
        shape=shape,
        dtype=dtype,
        dims=dims,
        nbytes=nbytes,
        encoding=Encoding("raw", dtype),
        canonical_shape=shape3,
        inserted_axes=inserted,
        axis_names=("n", "row", "w")[len(inserted) :],
        params=dict(params),
        provenance=provenance,
        attributes={
            "validShape": list(shape),
            "stride": [-1] * 4,
            "row_stride": row_stride,
            "predicted_row_stride": predicted,
            "alignedByteSize": nbytes,
            "tensorType": name,
            "first_address_align": FIRST_ADDRESS_ALIGN,
        },
    )


def _size(where: str, params: Mapping[str, object], default: int) -> tuple[int, str]:
    if "aligned_byte_size" in params:
        size = one_int(where, "aligned_byte_size", params["aligned_byte_size"])
        if size < 0:
            raise LayoutError(
                f"{where}: aligned_byte_size must be >= 0 (0: not reported), got {size}"
            )
        bounded_size(where, "aligned_byte_size", size, default)
        if size > 0:
            if size < default:
                raise LayoutError(
                    f"{where}: aligned_byte_size {size} is smaller than the {default} bytes the "
                    f"strides reach"
                )
            return size, "given (device-reported)"
    return default, "stride[0] * validShape[0]"


def tables_text(target: str) -> str:
    """What the seed fixes for ``target`` and the prediction rule the codec uses."""
    rule = SPATIAL_ALIGN[target]
    return "\n".join(
        [
            f"{target}: Horizon Robotics BPU alignment (seeds/003)",
            "",
            "layouts            strided (validShape + byte stride), NV12, Y (inputs)",
            f"first address      {FIRST_ADDRESS_ALIGN}-byte aligned, every input and output buffer",
            f"NV12 / Y           width aligned to {IMAGE_WIDTH_ALIGN} bytes, stride reported as -1",
            "NV12               H and W even (UV is half of Y)",
            "needs padding      prod(validShape[1:]) * element size != stride[0]",
            f"stride prediction  4-D tensors: H padded to {rule.h}, W to {rule.w} elements",
            f"                   source: {rule.source}",
        ]
    )


# ------------------------------------------- the parameters a device gets wrong
# What forensics tries to explain a buffer (npu_hil.harness.diff.forensics) and what the
# simulator's wrong-alignment fault lays out instead.


def forensic_variants(
    name: str, role: str, shape: tuple[int, ...], dtype: np.dtype
) -> Iterator[tuple[HorizonLayoutParams, str]]:
    if name == "strided" and len(shape) == 4:
        for tensor_layout in ("NCHW", "NHWC"):
            h_axis, w_axis = (1, 2) if tensor_layout == "NHWC" else (2, 3)
            for h_align in ROW_ALIGNMENTS:
                for w_align in ROW_ALIGNMENTS:
                    aligned = list(shape)
                    aligned[h_axis] = round_up(shape[h_axis], h_align)
                    aligned[w_axis] = round_up(shape[w_axis], w_align)
                    stride = strides_of_aligned_shape(tuple(aligned), dtype.itemsize)
                    yield (
                        {"stride": list(stride)},
                        f"H aligned to {h_align}, W to {w_align} ({tensor_layout})",
                    )
    elif name in ("NV12", "Y") and len(shape) in (2, 3):
        for align in ROW_ALIGNMENTS:
            yield {"stride": round_up(shape[-1], align)}, f"rows aligned to {align} bytes"


def fault_variants(layout: BlockedLayout) -> Iterator[HorizonLayoutParams]:
    # Rows padded to 1, 4, 8, 16 and 64 elements, then 32 past the predicted padded row.
    width, item = layout.shape[-1], layout.dtype.itemsize
    if layout.name == "strided":
        aligned = list(layout.attributes["predicted_alignedShape"])
    else:
        aligned = [layout.attributes["predicted_row_stride"]]
    for row in [*(round_up(width, align) for align in (1, 4, 8, 16, 64)), aligned[-1] + 32]:
        if layout.name == "strided":
            yield {"stride": list(strides_of_aligned_shape((*aligned[:-1], row), item))}
        else:
            yield {"stride": row}
