"""The log signature tables: every one loads, every sample is classified as its own signature
says on a target of its vendor (and by no other vendor's table), unknown lines give no class, the
classes rank infrastructure over compatibility over product, and a bad table is refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from npu_hil.targets import log_signatures as sigs
from npu_hil.targets.log_signatures import LogSignatureError, classify, load_signatures

TARGETS = {"rockchip": "rk3588", "horizon": "rdk-x5", "kneron": "kl730"}
TABLES = {
    "generic": sigs.HERE / sigs.FILE_NAME,
    **{vendor: sigs.HERE / vendor / sigs.FILE_NAME for vendor in TARGETS},
}


@pytest.mark.parametrize("vendor", sorted(TABLES))
def test_each_table_loads_with_sources(vendor: str) -> None:
    table = load_signatures(TABLES[vendor])
    if vendor == "kneron":
        assert table == ()  # no public message we could cite: no table, no guesses
        return
    assert table
    for signature in table:
        assert signature.source and signature.meaning
        assert signature.log_class in sigs.LOG_CLASSES


@pytest.mark.parametrize("vendor", ["rockchip", "horizon"])
def test_every_sample_is_classified_as_its_signature_says(vendor: str) -> None:
    target = TARGETS[vendor]
    for signature in load_signatures(TABLES[vendor]):
        lines = {"kernel": [], "runtime": []}
        lines[signature.log].append(f"[  605.267268] {signature.sample}")
        verdict = classify(target, kernel=lines["kernel"], runtime=lines["runtime"])
        assert verdict.log_class == signature.log_class, signature.id
        assert verdict.matches[0].signature.id == signature.id
        # Another vendor's boards never log it: their tables do not know it.
        other = "rk3588" if vendor == "horizon" else "rdk-x5"
        assert not classify(other, kernel=lines["kernel"], runtime=lines["runtime"]).matches


@pytest.mark.parametrize("target", sorted(TARGETS.values()))
def test_the_oom_killer_is_known_on_every_board(target: str) -> None:
    line = "[ 18492.104] Out of memory: Killed process 4182 (python3) total-vm:812044kB"
    verdict = classify(target, kernel=[line], runtime=[])
    assert verdict.log_class == "compatibility" and verdict.matches[0].signature.id == "oom-killer"
    cgroup = "Memory cgroup out of memory: Killed process 4182 (order-worker)"
    assert classify(target, kernel=[cgroup], runtime=[]).log_class == "compatibility"


def test_a_line_in_the_wrong_log_is_not_matched() -> None:
    # The RKNPU driver's messages are the kernel's; the same text on stderr is not its log.
    line = "RKNPU: job timeout, flags: 0x0"
    assert classify("rk3588", kernel=[], runtime=[line]).log_class == ""
    assert classify("rk3588", kernel=[line], runtime=[]).log_class == "infrastructure"


def test_unknown_lines_give_no_class() -> None:
    verdict = classify(
        "rk3588",
        kernel=["[ 10.0] usb 1-1: new high-speed USB device", "[ 11.0] RKNPU: rknpu iommu is on"],
        runtime=["I RKNN: [01:19:04.510] RKNN Runtime Information: librknnrt version: 1.4.0"],
    )
    assert verdict.log_class == "" and verdict.matches == ()


def test_infrastructure_outranks_compatibility_and_product() -> None:
    verdict = classify(
        "rk3588",
        kernel=["Out of memory: Killed process 9 (x)", "RKNPU: soft reset, num: 1"],
        runtime=["E RKNN: [17:19:34.670] failed to submit!, op id: 1"],
    )
    assert verdict.log_class == "infrastructure"
    assert [m.signature.log_class for m in verdict.matches] == [
        "compatibility",
        "infrastructure",
        "product",
    ]
    alone = classify("rk3588", kernel=[], runtime=["E RKNN: [1] failed to submit!, op id: 3"])
    assert alone.log_class == "product"


def test_fault_lines_are_the_samples_of_the_fault() -> None:
    lines = sigs.fault_lines("rk3588", "npu-timeout")
    assert lines["runtime"] == [] and len(lines["kernel"]) == 3
    assert any("job timeout" in line for line in lines["kernel"])
    assert sigs.fault_lines("rdk-x5", "npu-timeout")["runtime"]
    assert sigs.fault_lines("kl730", "npu-timeout") == {"kernel": [], "runtime": []}
    assert sigs.fault_lines("kl730", "oom-kill")["kernel"]  # any Linux board has an OOM killer


def write(tmp_path: Path, rows: object) -> Path:
    path = tmp_path / "log_signatures.json"
    path.write_text(json.dumps({"schema": sigs.SCHEMA, "signatures": rows}))
    return path


ROW = {
    "id": "x",
    "log": "kernel",
    "regex": "boom",
    "class": "product",
    "meaning": "m",
    "source": "s",
    "sample": "a boom",
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"class": "flaky"}, "class must be one of"),
        ({"log": "syslog"}, "log must be one of"),
        ({"regex": "("}, "regex"),
        ({"sample": "quiet"}, "sample does not match"),
        ({"source": ""}, "missing or empty: source"),
    ],
)
def test_a_bad_entry_is_refused_by_name(tmp_path: Path, change: dict, message: str) -> None:
    with pytest.raises(LogSignatureError, match=message) as caught:
        load_signatures(write(tmp_path, [{**ROW, **change}]))
    assert "signatures[0]" in str(caught.value)


def test_twice_the_same_id_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LogSignatureError, match="appear twice: x"):
        load_signatures(write(tmp_path, [ROW, ROW]))
