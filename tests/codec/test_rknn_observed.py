"""The codec held to what Rockchip's own compiler and runtimes reported (tests/data/rknn/).

Every attribute set the runtime answered ``rknn_query()`` with goes through
``layout_from_report``: it is accepted whenever its size can hold the tensor, and every element
lands where the vendor's conversion loops read it; the sets the vendor's software got wrong
(README of the data, last row) are typed LayoutErrors that name the fields. Then the prediction:
the codec's predicted attributes equal the runtime's, or the difference is one of the listed
contradictory reports.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.codec.reported import layout_from_report
from npu_hil.harness.errors import LayoutError
from npu_hil.targets.rockchip.observed import deviation
from npu_hil.targets.rockchip.queries import (
    LAST_OP_OF_COMPILED,
    QUERIES,
    differences,
    predict_attributes,
    vendor_offsets,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "rknn" / "observed.json.gz"
RECORDS: list[dict[str, Any]] = json.loads(gzip.decompress(DATA.read_bytes()))
WITH_RUNTIME = [r for r in RECORDS if "runtime" in r]


def logical_shape(record: dict[str, Any], query: str) -> tuple[int, ...]:
    if "INPUT" in query:
        return (1, record["cin"], record["h"], record["w"])
    return tuple(record["runtime"]["OUTPUT_ATTR"]["dims"])


def dtype_of(record: dict[str, Any]) -> str:
    return "int8" if record["prec"] == "i8" else "float16"


def contradicts_itself(record: dict[str, Any], query: str) -> bool:
    """The data README's last row: answers of the vendor's runtime that contradict themselves."""
    if record["platform"] == "rk2118" and query == "NATIVE_INPUT_ATTR":
        return bool(record["cin"] > 4)  # dims [1, H, W, 4] for more channels, size too small
    if record["platform"] in ("rv1103b", "rv1106b") and query == "NATIVE_OUTPUT_ATTR":
        # Unfused Sigmoid: size H*W*C for dims [1, C1, 1, 52, 8] (consistent only when C is a
        # multiple of 8).
        attrs = record["runtime"][query]
        return bool(
            record["compiled_last_op"] == "Sigmoid" and attrs["size"] < int(np.prod(attrs["dims"]))
        )
    return False


def oversized(record: dict[str, Any], query: str) -> bool:
    """RK2118 MaxPool outputs: a size ten times what the dims reach (readable, but a finding)."""
    return (
        record["platform"] == "rk2118"
        and query == "NATIVE_OUTPUT_ATTR"
        and record["compiled_last_op"] == "MaxPool"
    )


def test_the_facts_file_is_the_grid_the_readme_describes() -> None:
    assert len(RECORDS) == 510
    assert len(WITH_RUNTIME) == 396
    assert {r["platform"] for r in RECORDS} - {r["platform"] for r in WITH_RUNTIME} == {
        "rk3576",
        "rv1126b",
    }


def test_the_vendor_formula_restated_by_hand() -> None:
    # RK3566 int8, 1x3x3x15 conv output: librknnrt reports dims [1, 2, 1, 48, 8].
    attrs = {"fmt": 2, "n_dims": 5, "dims": [1, 2, 1, 48, 8]}
    offsets = vendor_offsets(attrs, (1, 3, 3, 15))
    assert offsets[0, 2, 1, 4] == (0 * 48 + 1 * 15 + 4) * 8 + 2
    nhwc = {"fmt": 1, "n_dims": 4, "dims": [1, 3, 15, 3], "w_stride": 16}
    assert vendor_offsets(nhwc, (1, 3, 3, 15))[0, 1, 2, 5] == (2 * 16 + 5) * 3 + 1


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("platform", sorted({r["platform"] for r in WITH_RUNTIME}))
def test_every_reported_attribute_set_is_accepted_and_placed(platform: str, query: str) -> None:
    records = [r for r in WITH_RUNTIME if r["platform"] == platform]
    role = "input" if "INPUT" in query else "output"
    for record in records:
        attrs = record["runtime"][query]
        shape = logical_shape(record, query)
        if contradicts_itself(record, query):
            with pytest.raises(LayoutError) as info:
                layout_from_report(platform, role, attrs, shape=shape)
            message = str(info.value)
            assert any(k in message for k in ("dims", "size")), (record["id"], message)
            continue
        layout = layout_from_report(platform, role, attrs, shape=shape)
        size = attrs["size_with_stride"] if role == "input" else attrs["size"]
        assert layout.nbytes == size, record["id"]
        item = layout.dtype.itemsize
        values = np.arange(1, int(np.prod(shape)) + 1).reshape(shape) % 127 + 1
        buf = layout.pack(values.astype(layout.dtype))
        elements = buf[: len(buf) // item * item].view(layout.dtype)
        offsets = vendor_offsets(attrs, shape)
        assert np.array_equal(elements[offsets], values.astype(layout.dtype)), record["id"]
        # Every byte the vendor does not read is padding, zero.
        read = np.zeros(len(elements), bool)
        read[offsets.ravel()] = True
        assert not elements[~read].any(), record["id"]


def prediction_misses() -> tuple[int, list[str]]:
    exact = 0
    unlisted = []
    for record in WITH_RUNTIME:
        model_exact = True
        for query in QUERIES:
            reported = record["runtime"][query]
            predicted = predict_attributes(
                record["platform"],
                query,
                logical_shape(record, query),
                dtype_of(record),
                first_layer=dtype_of(record),
                last_op=LAST_OP_OF_COMPILED.get(record["compiled_last_op"], "other"),
            )
            found = differences(predicted, reported, query)
            if found:
                model_exact = False
                if not (contradicts_itself(record, query) or oversized(record, query)):
                    unlisted.append(f"{record['id']} {query}: {found}")
        exact += model_exact
    return exact, unlisted


@pytest.mark.slow
def test_predictions_equal_the_runtime_or_are_a_listed_vendor_quirk() -> None:
    exact, unlisted = prediction_misses()
    assert not unlisted, "\n".join(unlisted[:20])
    share = exact / len(WITH_RUNTIME)
    assert share >= 0.95, f"{exact} of {len(WITH_RUNTIME)} models predicted exactly ({share:.1%})"
    assert deviation("contradictory-reports").contradiction


def test_the_simulated_last_op_matches_the_compiled_graph() -> None:
    # Conv+Add and Conv+Sigmoid are fused (except Sigmoid on RK2118 and RV1103B/RV1106B).
    from npu_hil.targets import last_op_kind

    ops = {"conv": ("Conv", ("Relu",)), "maxpool": ("MaxPool", ("Relu",))}
    seen: Counter[tuple[str, str]] = Counter()
    for record in RECORDS:
        last = record["last"]
        op, feeders = {
            "add": ("Add", ("Conv", "Relu")),
            "sigmoid": ("Sigmoid", ("Conv",)),
            **ops,
        }[last]
        kind = last_op_kind(record["platform"], op, feeders)
        want = LAST_OP_OF_COMPILED.get(record["compiled_last_op"], "other")
        seen[(kind, want)] += 1
        assert kind == want, record["id"]
    assert seen[("conv_sigmoid", "conv_sigmoid")] > 0


def test_a_reported_format_code_of_no_format_is_a_difference_not_a_crash() -> None:
    # rknn_api.h's RKNN_TENSOR_FORMAT_MAX (4) names no format: the fields every query has are
    # still compared, and the code itself is the first difference.
    predicted = {"fmt": 1, "dims": [1, 8, 8, 3], "size": 192, "w_stride": 8}
    reported = {"fmt": 4, "n_dims": 4, "dims": [1, 8, 8, 3], "size": 256, "w_stride": 16}
    assert differences(predicted, reported, "NATIVE_INPUT_ATTR") == [
        ("fmt", 1, 4),
        ("size", 192, 256),
    ]
