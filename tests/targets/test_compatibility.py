"""The compatibility tables (loaded and validated, errors naming the row) and the check's matrix:
same target ok, another target refused, a sibling with the same program warned, an older runtime
refused, a format a runtime is reported to refuse refused, unknown versions reported as unknown,
a simulated board checked for its target only."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from npu_hil.harness.errors import CompatibilityError
from npu_hil.targets.artifact import ArtifactInfo
from npu_hil.targets.compatibility import check_compatibility, load_table, refusal, table_for
from npu_hil.targets.registry import unit_named, units
from npu_hil.targets.rockchip.artifact import read_rockchip_model

DATA = Path(__file__).resolve().parents[1] / "data" / "artifacts" / "rockchip"
RK3588 = read_rockchip_model(DATA / "probe-rk3588-i8.rknn")
RT = {"api_version": "1.6.0 (9a7b5d24c@2023-12-13T17:31:11)", "drv_version": "0.9.8"}
NEW = {"api_version": "2.5.0 (74ea630ce@2026-09-29)", "drv_version": "0.9.8"}


def statuses(findings: list[Any]) -> dict[str, str]:
    return {f.check: f.status for f in findings}


def test_every_unit_has_a_valid_table_with_a_row_per_target() -> None:
    for unit in units():
        table = table_for(unit.name)
        assert table is not None and table.vendor == unit.name
        assert sorted(table.targets) == sorted(unit.targets)
        for row in table.targets.values():
            assert row.source and row.platforms
        for rule in table.rules:
            assert rule.source and rule.reason
    rockchip = table_for("rockchip")
    assert rockchip is not None
    assert rockchip.row("rk3566") is not None and rockchip.row("rk3566").same_program == ("rk3568",)  # type: ignore[union-attr]
    assert [r.id for r in rockchip.rules] == [
        "format-6-old-runtimes",
        "runtime-not-older-than-toolkit",
        "runtime-major-differs",
    ]
    assert table_for("kneron").row("kl730").extras["chip_id"] == 4  # type: ignore[union-attr]


def table_file(tmp_path: Path, change: Any) -> Path:
    source = unit_named("rockchip").compatibility
    assert source is not None
    document = json.loads(source.read_text())
    change(document)
    path = tmp_path / "compatibility.json"
    path.write_text(json.dumps(document))
    return path


def _set(path: str, value: Any) -> Any:
    def change(document: Any) -> None:
        *keys, last = path.split(".")
        node = document
        for key in keys:
            node = node[int(key)] if key.isdigit() else node[key]
        if value is KeyError:
            del node[int(last) if last.isdigit() else last]
        else:
            node[int(last) if last.isdigit() else last] = value

    return change


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (_set("schema", 2), r"schema: expected 1, got 2"),
        (_set("vendor", "horizon"), r"vendor: expected 'rockchip', got 'horizon'"),
        (
            _set("targets.0.target", "rk9999"),
            r"targets\[0\] \(rk9999\): 'rk9999' is not a target of rockchip",
        ),
        (
            _set("targets.1.target", "rk3566"),
            r"targets\[1\] \(rk3566\): a second row for the same target",
        ),
        (
            _set("targets.2.platforms", []),
            r"targets\[2\] \(rk3588\).platforms: expected at least one name",
        ),
        (
            _set("targets.2.source", ""),
            r"targets\[2\] \(rk3588\).source: expected a non-empty string",
        ),
        (_set("targets.2.colour", "red"), r"targets\[2\]: unknown key\(s\) colour"),
        (
            _set("rules.0.status", "maybe"),
            r"rules\[0\] \(format-6-old-runtimes\).status: expected one of refuse, warn",
        ),
        (
            _set("rules.0.runtimes", ["one"]),
            r"rules\[0\] \(format-6-old-runtimes\).runtimes\[0\]: expected a version",
        ),
        (_set("rules.0.format_version", "6"), r"format_version: expected an integer"),
        (
            _set("rules.1.kind", "vibes"),
            r"rules\[1\] \(runtime-not-older-than-toolkit\).kind: expected one of",
        ),
        (
            _set("rules.1.id", "format-6-old-runtimes"),
            r"rules\[1\] \(format-6-old-runtimes\): a second rule",
        ),
        (
            _set("rules.2.runtimes", ["1.0.0"]),
            r"rules\[2\] \(runtime-major-differs\): format_version and runtimes",
        ),
        (
            _set("rules.1.reason", KeyError),
            r"rules\[1\] \(runtime-not-older-than-toolkit\).reason: expected a non-empty",
        ),
        (
            _set("runtime", None),
            r"rules\[0\] \(format-6-old-runtimes\): a runtime rule, and the table names no runtime",
        ),
    ],
)
def test_the_loader_names_the_row(tmp_path: Path, change: Any, match: str) -> None:
    path = table_file(tmp_path, change)
    unit = unit_named("rockchip")
    with pytest.raises(CompatibilityError, match=match) as caught:
        load_table(path, vendor="rockchip", targets=unit.targets)
    assert str(path) in caught.value.message


def test_the_loader_refuses_what_is_not_a_table(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text("{")
    with pytest.raises(CompatibilityError, match=r"a\.json: not JSON"):
        load_table(tmp_path / "a.json")
    (tmp_path / "b.json").write_text("[]")
    with pytest.raises(CompatibilityError, match="the table: expected an object, got list"):
        load_table(tmp_path / "b.json")
    with pytest.raises(CompatibilityError, match="cannot read"):
        load_table(tmp_path / "missing.json")


def test_same_target_and_a_new_enough_runtime_pass() -> None:
    found = check_compatibility(RK3588, "rk3588", NEW)
    assert statuses(found) == {"target-platform": "ok", "runtime": "ok", "driver": "unknown"}
    assert refusal(RK3588, "rk3588", "rk3588-01", NEW, found) is None


def test_another_target_is_refused_and_an_older_runtime_named_beside_it() -> None:
    found = check_compatibility(RK3588, "rk3566", RT)
    assert statuses(found) == {
        "target-platform": "refuse",
        "runtime-not-older-than-toolkit": "warn",
        "driver": "unknown",
    }
    error = refusal(RK3588, "rk3566", "rk3566-01", RT, found)
    assert isinstance(error, CompatibilityError)
    assert error.message.startswith(
        "model probe-rk3588-i8.rknn built by toolkit 2.5.0 for rk3588; board rk3566-01 (rk3566) "
        "runtime 1.6.0: the target platform differs ("
    )
    assert {f["check"] for f in error.findings} == {
        "target-platform",
        "runtime-not-older-than-toolkit",
        "driver",
    }
    assert all(f["source"] for f in error.findings if f["status"] == "refuse")


def test_an_older_runtime_alone_is_a_warning_as_measured() -> None:
    # librknnrt 1.6.0 loaded rknn-toolkit2 2.5.0 models in the observations: not refused.
    found = check_compatibility(RK3588, "rk3588", RT)
    assert statuses(found)["runtime-not-older-than-toolkit"] == "warn"
    assert statuses(found)["target-platform"] == "ok"
    assert refusal(RK3588, "rk3588", "b", RT, found) is None


def test_a_format_the_runtime_is_reported_to_refuse() -> None:
    old_model = ArtifactInfo("x/old.rknn", "rockchip", "rknn", 6, "1.4.0", ("rk3588",))
    found = check_compatibility(
        old_model, "rk3588", {"api_version": "1.4.0 (a10f100eb@2022-09-09)"}
    )
    assert statuses(found) == {"target-platform": "ok", "format-6-old-runtimes": "refuse"}
    assert "Invalid RKNN model version 6" in found[1].message
    assert "airockchip/rknn-toolkit2#281" in found[1].source


def test_a_newer_major_runtime_is_a_warning() -> None:
    old_model = ArtifactInfo("x/old.rknn", "rockchip", "rknn", 6, "1.6.0", ("rk3588",))
    found = check_compatibility(old_model, "rk3588", {"api_version": "2.3.2"})
    assert statuses(found) == {"target-platform": "ok", "runtime-major-differs": "warn"}
    assert refusal(old_model, "rk3588", "b", {}, found) is None


def test_a_sibling_platform_with_the_same_program_is_a_warning() -> None:
    rk3566 = read_rockchip_model(DATA / "probe-rk3566-i8.rknn")
    found = check_compatibility(rk3566, "rk3568", NEW)
    assert statuses(found)["target-platform"] == "warn"
    assert "same program" in found[0].message
    assert refusal(rk3566, "rk3568", "b", NEW, found) is None


@pytest.mark.parametrize(
    ("versions", "toolkit", "match"),
    [
        ({}, "2.5.0", r"reported no librknnrt version \(api_version\)"),
        ({"library": "/usr/lib/librknnrt.so"}, "2.5.0", "reported no librknnrt version"),
        ({"api_version": "unknown"}, "2.5.0", "holds no version number"),
        (NEW, None, "names no toolkit version"),
    ],
)
def test_unknown_versions_are_unknown_never_ok(
    versions: dict[str, str], toolkit: str | None, match: str
) -> None:
    model = ArtifactInfo("m.rknn", "rockchip", "rknn", 6, toolkit, ("rk3588",))
    found = check_compatibility(model, "rk3588", versions)
    runtime = [f for f in found if f.check == "runtime"]
    assert [f.status for f in runtime] == ["unknown"]
    assert re.search(match, runtime[0].message), runtime[0].message
    assert refusal(model, "rk3588", "b", versions, found) is None


def test_a_model_that_names_no_platform_is_unknown() -> None:
    model = ArtifactInfo(
        "m.nef", "kneron", "nef", None, None, (), unverified=("the schema is not public",)
    )
    found = check_compatibility(model, "kl730", {"firmware": "2.2.0.0"})
    assert statuses(found) == {"target-platform": "unknown", "runtime": "unknown"}
    assert "the schema is not public" in found[0].message


def test_a_simulated_board_is_checked_for_the_target_only() -> None:
    found = check_compatibility(RK3588, "rk3566", {"runtime": "sim"}, simulated=True)
    assert statuses(found) == {"target-platform": "refuse", "runtime": "skipped"}
    assert "only the target platform" in found[1].message
    ok = check_compatibility(RK3588, "rk3588", {}, simulated=True)
    assert statuses(ok) == {"target-platform": "ok", "runtime": "skipped"}
