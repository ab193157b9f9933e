"""Rockchip RKNN2: the geometry ``rknn_query()`` will answer for a model's tensor under each of its
six queries (``rknn_api.h``), predicted from the codec's layouts, so the simulator answers as a
board does and a report names the field a device contradicts (:data:`COMPARED`)."""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from npu_hil.harness.codec.registry import get_layout
from npu_hil.targets.rockchip import observed

QUERIES = (
    "INPUT_ATTR",
    "NATIVE_INPUT_ATTR",
    "NATIVE_NHWC_INPUT_ATTR",
    "OUTPUT_ATTR",
    "NATIVE_OUTPUT_ATTR",
    "NATIVE_NHWC_OUTPUT_ATTR",
)
FMT_CODES = {"NCHW": 0, "NHWC": 1, "NC1HWC2": 2, "UNDEFINE": 3}
"""``rknn_tensor_format`` values (rknn_api.h)."""
NHWC_CHANNELS = (1, 3, 4)
"""Channel counts whose native input is NHWC, else NC1HWC2 (what the runtimes reported for every
compiled model of the observations but RK2118's)."""

COMPARED: dict[str, tuple[str, ...]] = {
    "NHWC/input": ("fmt", "dims", "size", "w_stride", "size_with_stride"),
    "NC1HWC2/input": ("fmt", "dims", "size", "size_with_stride"),
    "NCHW/output": ("fmt", "dims", "size"),
    "NHWC/output": ("fmt", "dims", "size"),
    "NC1HWC2/output": ("fmt", "dims", "size"),
}
"""The fields that carry the layout per query; the others (``n_elems`` of padded formats, the
normal API output's ``size_with_stride``) the runtime fills in ways no reader of the buffer uses."""


def query_layout_name(target: str, query: str, channels: int) -> str:
    """The codec layout the runtime answers ``query`` with, for a 4-D tensor of ``channels``."""
    native = "NHWC" if channels in NHWC_CHANNELS else "NC1HWC2"
    answers = {
        "INPUT_ATTR": "NHWC",
        "OUTPUT_ATTR": "NCHW",
        "NATIVE_OUTPUT_ATTR": "NC1HWC2",
        "NATIVE_NHWC_OUTPUT_ATTR": "NHWC",
        "NATIVE_INPUT_ATTR": native,
        "NATIVE_NHWC_INPUT_ATTR": (
            native if observed.deviation("nhwc-query-native").applies_to(target) else "NHWC"
        ),
    }
    if query not in answers:
        raise ValueError(f"unknown rknn_query {query!r}; queries: {', '.join(QUERIES)}")
    return answers[query]


def predict_attributes(
    target: str,
    query: str,
    shape: tuple[int, ...],
    dtype: Any,
    *,
    first_layer: str | None = None,
    last_op: str = "conv",
) -> dict[str, Any]:
    """The ``rknn_tensor_attr`` geometry the runtime will report for ``query``."""
    role = "input" if "INPUT" in query else "output"
    name = query_layout_name(target, query, shape[1])
    params: dict[str, Any] = {}
    if role == "input" and first_layer is not None:
        params["first_layer"] = first_layer
    if role == "output" and name != "NCHW":
        params["last_op"] = last_op
    layout = get_layout(target, name, shape, np.dtype(dtype), role=role, **params)
    attrs = layout.attributes
    item = layout.dtype.itemsize
    dims = list(attrs["native_dims"]) if name == "NC1HWC2" else list(attrs["dims"])
    out: dict[str, Any] = {"fmt": FMT_CODES[name], "dims": dims, "size": layout.nbytes}
    if role == "input":
        out["size_with_stride"] = layout.nbytes
        if name == "NHWC":
            out["size"] = prod(shape) * item
            out["w_stride"] = int(attrs["w_stride"])
    return out


def differences(
    predicted: dict[str, Any], reported: dict[str, Any], query: str
) -> list[tuple[str, Any, Any]]:
    """``(field, predicted, reported)`` for every compared field that differs."""
    fmt = int(reported.get("fmt", predicted["fmt"]))
    # a code of no format (RKNN_TENSOR_FORMAT_MAX, say): the fields every query has
    name = next((n for n, code in FMT_CODES.items() if code == fmt), "")
    role = "input" if "INPUT" in query else "output"
    out = []
    for field in COMPARED.get(f"{name}/{role}", ("fmt", "dims", "size")):
        want = predicted.get(field)
        got = reported.get(field)
        if field == "dims" and got is not None:
            got = list(got)[: int(reported.get("n_dims", len(got)))]
        if want != got:
            out.append((field, want, got))
    return out


# ------------------------------------------------------------------ checking against observations

LAST_OP_OF_COMPILED = {"Conv": "conv", "ConvSigmoid": "conv_sigmoid"}
"""The compiled graph's last op (``compiled_last_op`` of an observation) as a ``last_op``."""


def vendor_offsets(attributes: dict[str, Any], shape: tuple[int, ...]) -> np.ndarray:
    """Element offsets (in elements, NCHW order) where the vendor's own conversion loops read a
    4-D tensor out of a buffer the runtime describes with ``attributes``:

    - NC1HWC2: ``((n*C1 + c//C2) * dims[2]*dims[3] + h*W + w) * C2 + c%C2``;
    - NHWC: rows of ``w_stride`` pixels (0: the width) of ``dims[3]`` channel slots;
    - NCHW: plain C order.
    """
    n, c, h, w = np.indices(shape, dtype=np.int64)
    width = shape[3]
    fmt = int(attributes["fmt"])
    dims = [int(d) for d in attributes["dims"]][: int(attributes.get("n_dims", 16))]
    if fmt == FMT_CODES["NC1HWC2"]:
        _, c1, d2, d3, c2 = dims
        offsets = ((n * c1 + c // c2) * d2 * d3 + h * width + w) * c2 + c % c2
    elif fmt == FMT_CODES["NHWC"]:
        row = int(attributes.get("w_stride") or 0) or width
        offsets = ((n * shape[2] + h) * row + w) * dims[3] + c
    else:
        offsets = ((n * shape[1] + c) * shape[2] + h) * width + w
    result: np.ndarray = offsets
    return result


def check_observations(records: list[dict[str, Any]]) -> dict[str, Any]:
    """How the codec fares on a file of observed runtime answers (tests/data/rknn/'s format):
    attribute sets accepted, placed where the vendor reads them, and models whose six answers
    are all predicted exactly; the refusals and misses with their reasons."""
    from npu_hil.harness.codec.reported import layout_from_report
    from npu_hil.harness.errors import LayoutError

    sets = accepted = placed = models = exact = 0
    refused: list[str] = []
    misses: list[str] = []
    for record in records:
        runtime = record.get("runtime")
        if not runtime:
            continue
        models += 1
        model_exact = True
        target = str(record["platform"])
        dtype = "int8" if record["prec"] == "i8" else "float16"
        last_op = LAST_OP_OF_COMPILED.get(str(record.get("compiled_last_op")), "other")
        for query in QUERIES:
            attrs = runtime[query]
            role = "input" if "INPUT" in query else "output"
            shape = (
                (1, int(record["cin"]), int(record["h"]), int(record["w"]))
                if role == "input"
                else tuple(int(d) for d in runtime["OUTPUT_ATTR"]["dims"])
            )
            sets += 1
            try:
                layout = layout_from_report(target, role, attrs, shape=shape)
            except LayoutError as exc:
                refused.append(f"{record['id']} {query}: {exc}")
            else:
                accepted += 1
                values = (np.arange(int(np.prod(shape))).reshape(shape) % 120 + 1).astype(
                    layout.dtype
                )
                buf = layout.pack(values)
                item = layout.dtype.itemsize
                elements = buf[: len(buf) // item * item].view(layout.dtype)
                placed += bool(np.array_equal(elements[vendor_offsets(attrs, shape)], values))
            predicted = predict_attributes(
                target, query, shape, dtype, first_layer=dtype, last_op=last_op
            )
            found = differences(predicted, attrs, query)
            if found:
                model_exact = False
                misses.append(
                    f"{record['id']} {query}: "
                    + "; ".join(
                        f"{field} predicted {want}, reported {got}" for field, want, got in found
                    )
                )
        exact += model_exact
    return {
        "attribute_sets": sets,
        "accepted": accepted,
        "placed": placed,
        "models": models,
        "predicted_exactly": exact,
        "refused": refused,
        "misses": misses,
    }
