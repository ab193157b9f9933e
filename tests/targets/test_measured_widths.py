"""The compiler's measured width limits (rknn-toolkit2 2.5.0,
``tests/data/zoo/rknn_widths.json.gz``) decide a first-layer convolution's width check, the
seed's verdict kept beside; preflight and the simulated board say the same, and where no
measurement covers a convolution the seed's rule stands."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from onnx import TensorProto

from npu_hil.harness.models import conv3x3
from npu_hil.harness.preflight import preflight
from npu_hil.harness.sim import SimNpu, SimRefusal
from npu_hil.targets import ConvSite, check_conv
from npu_hil.targets.rockchip.measuredwidths import DATA, measurements
from npu_hil.targets.rockchip.tables import PLATFORM_OF
from tests.vendor_rknn.measured import widths_document_of

RECORDS = Path(__file__).resolve().parents[1] / "data" / "zoo" / "rknn_widths.json.gz"


def _records() -> dict[str, Any]:
    with gzip.open(RECORDS, "rt", encoding="utf-8") as stream:
        document: dict[str, Any] = json.load(stream)
    return document


def _members(target: str) -> list[str]:
    """Every target of the measured target's platform group (the compiler builds them alike)."""
    return [t for t, platform in PLATFORM_OF.items() if platform == PLATFORM_OF[target]]


def test_the_shipped_limits_are_derived_from_the_compilers_records() -> None:
    stored = _records()
    shipped = json.loads(DATA.read_text(encoding="utf-8"))
    derived = widths_document_of(stored["records"], shipped["provenance"])
    assert shipped == derived
    assert shipped["provenance"]["compiler"] == stored["provenance"]["compiler"]
    assert shipped["provenance"]["records"] == "tests/data/zoo/rknn_widths.json.gz"


@pytest.mark.parametrize(
    "record",
    _records()["records"],
    ids=lambda r: f"{r['target']}-h{r['height']}-w{r['width']}",
)
def test_the_check_says_what_the_compiler_did(record: dict[str, Any]) -> None:
    site = ConvSite(height=record["height"], in_channels=3, takes_input=True)
    for target in _members(record["target"]):
        result = check_conv(
            target, record["width"], (3, 3), first_layer=record["precision"], site=site
        )
        assert result.ok is record["built"], (target, result.message)
        assert result.seed is not None and result.failed == (() if result.ok else ("measured",))


def test_the_seeds_verdict_is_kept_beside_the_measured_one() -> None:
    site = ConvSite(height=1, in_channels=3, takes_input=True)
    wide = check_conv("rk3588", 8192, (3, 3), site=site)
    assert wide.ok and wide.seed is not None and not wide.seed.ok
    assert "the compiler builds it" in wide.message
    assert "rknn-toolkit2 2.5.0 on rk3588" in wide.message
    assert "the seed's rule A says unsupported" in wide.message
    refused = check_conv("rv1106b", 4096, (3, 3), site=site)
    assert not refused.ok and refused.seed is not None and refused.seed.ok
    assert "failed to tile argb mode layer" in refused.message


def test_no_measurement_no_change() -> None:
    """A later layer, another kernel, a dilated kernel, more channels, a width past the widest
    tried: the seed's rule, as before."""
    for site, kernel, dilation, width in (
        (ConvSite(1, 3, takes_input=False), (3, 3), (1, 1), 8192),
        (ConvSite(1, 3, takes_input=True), (5, 5), (1, 1), 8192),
        (ConvSite(1, 3, takes_input=True), (3, 3), (2, 2), 8192),
        (ConvSite(1, 16, takes_input=True), (3, 3), (1, 1), 8192),
        (ConvSite(1, 3, takes_input=True), (3, 3), (1, 1), 20000),
        (None, (3, 3), (1, 1), 8192),
    ):
        result = check_conv("rk3588", width, kernel, dilation, site=site)
        assert result.seed is None and "measured" not in result.failed, (site, kernel)


def test_a_feature_size_limit_takes_the_next_measured_height() -> None:
    """RK3566 refuses from 9,553 on 8 rows and builds every width tried on 1 row: a height
    between takes 8 rows' limit, an unknown or larger height says what it assumed."""
    heights = measurements()["platforms"]["RK3566/RK3568"]["heights"]
    assert heights["1"]["refused"] == [] and heights["8"]["refused"][0][0] == 9553
    between = check_conv("rk3566", 9600, (3, 3), site=ConvSite(4, 3, True))
    assert not between.ok and "height 4 not measured: height 8's limit taken" in between.message
    unknown = check_conv("rk3566", 9000, (3, 3), site=ConvSite(None, 3, True))
    assert unknown.ok and "height unknown" in unknown.message
    taller = check_conv("rk3566", 9000, (3, 3), site=ConvSite(64, 3, True))
    assert taller.ok and "a larger feature may be refused earlier" in taller.message


@pytest.mark.parametrize(("target", "allowed"), [("rk3588", True), ("rk3562", False)])
def test_preflight_and_the_simulated_board_agree_with_the_compiler(
    target: str, allowed: bool
) -> None:
    model = conv3x3((1, 3, 1, 8192))
    # as the board's application feeds it: uint8 images (the input table's uint8 rows)
    model.graph.input[0].type.tensor_type.elem_type = TensorProto.UINT8
    report = preflight(model, target, output_precision="int8")
    assert report.ok is allowed, report.summary()
    (finding,) = [f for f in report.findings if f.node == "conv_0"]
    assert finding.rule == "measured width limit"
    assert ("the compiler builds it" if allowed else "failed to tile argb mode layer") in (
        finding.message
    )
    npu = SimNpu(target)
    if allowed:
        npu.load(model)
        return
    with pytest.raises(SimRefusal) as refused:
        npu.load(model)
    assert "failed to tile argb mode layer" in str(refused.value)
