"""``npu-hil history``: the per-case view, the filters, the exports, and a folder with no
history (exit 2, one line), as a user runs it (a subprocess) and in-process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from npu_hil.harness.cli.main import main

A = ("rk3588-01", "tests/hil/test_reference.py::test_reference_model[identity-rk3588-01]")
B = ("kl730-01", "tests/hil/test_reference.py::test_reference_model[conv-kl730-01]")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "npu_hil.harness.cli.main", *args],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def index(write: Any) -> Any:
    write({A: ["passed"] * 3, B: ["passed"] * 3}, run_key="older-kind")
    kept = write(
        {A: ["passed", "passed", "failed", "failed"], B: ["passed", "failed", "passed", "failed"]},
        first=10,
        p50=lambda i: 0.075 + 0.01 * i,
        snr=lambda i: "inf",
    )
    return [e for e in kept if e.run_key == "key-nightly"]


@pytest.mark.slow
def test_the_view_as_a_user_runs_it(reports: Path, index: Any) -> None:
    done = run("history", "--reports", str(reports))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "4 runs of kind key-nightly" in out  # the newest run's kind, not the older one
    assert A[1] in out and B[1] in out  # the whole nodeid, brackets and all
    assert "✓✓✗✗" in out and "✓✗✓✗" in out
    assert index[2].run_id in out  # A failing since
    assert "100%" in out  # B's flakiness
    assert "exact" in out and "0.105" in out  # SNR of an exact match; the last p50


def test_filters_and_json_in_process(
    reports: Path, index: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", "--reports", str(reports), "--board", "kl730-01", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["nodeid"] for c in doc["cases"]] == [B[1]]
    assert doc["cases"][0]["failing_since"]["run_id"] == index[3].run_id
    assert main(["history", "--reports", str(reports), "--case", "identity", "--runs", "2"]) == 0
    out = capsys.readouterr().out
    assert "2 runs of kind" in out and A[1] in out and B[1] not in out
    assert main(["history", "--reports", str(reports), "--key", "older-kind", "--json"]) == 0
    older = json.loads(capsys.readouterr().out)
    assert older["run_key"] == "older-kind" and len(older["runs"]) == 3


@pytest.mark.slow
def test_exports(reports: Path, index: Any, tmp_path: Path) -> None:
    parser = pytest.importorskip("prometheus_client.openmetrics.parser")
    done = run("history", "--reports", str(reports), "--export", "openmetrics")
    assert done.returncode == 0, done.stderr
    families = {f.name: f for f in parser.text_string_to_metric_families(done.stdout)}
    # an export takes every indexed run of the kind: 2 cases x 4 runs
    assert len(families["npu_hil_latency_p50_milliseconds"].samples) == 8
    out = tmp_path / "history.jsonl"
    done = run(
        "history",
        "--reports",
        str(reports),
        "--export",
        "jsonl",
        "--out",
        str(out),
        "--board",
        "rk3588-01",
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 4 and {r["board"] for r in rows} == {"rk3588-01"}
    assert "4 lines" in done.stderr


@pytest.mark.slow
def test_no_history_is_exit_2_with_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "reports"
    empty.mkdir()
    for folder in (empty, tmp_path / "missing"):
        done = run("history", "--reports", str(folder))
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "no history in" in lines[0], done.stderr
        assert "Traceback" not in done.stderr


def test_an_unknown_kind_names_the_kinds_there(
    reports: Path, index: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", "--reports", str(reports), "--key", "nope"]) == 2
    err = capsys.readouterr().err
    assert "no complete run of kind 'nope'" in err and "key-nightly" in err
    assert main(["history", "--reports", str(reports), "--runs", "0"]) == 2
