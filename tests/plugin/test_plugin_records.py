"""Records, JUnit properties, fallback marking and the run's report folder."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

# Seconds a test (README: test tiers).
pytestmark = pytest.mark.slow

TESTS = """
import numpy as np
import pytest
from npu_hil.harness.plugin import assert_run_ok

X = {"input": np.arange(60, dtype=np.uint8).reshape(1, 3, 4, 5)}

@pytest.mark.soc("rk3588")
def test_ok(run_model):
    assert_run_ok(run_model("identity", X))

@pytest.mark.soc("rk3588")
def test_bad(run_model):
    assert_run_ok(run_model("identity", X, faults=["dirty-padding"]))

@pytest.mark.soc("rv1106")
def test_skipped(run_model):
    pass
"""

FALLBACK_INVENTORY = """\
boards:
  - name: rk3588-01
    target: rk3588
    backend: hw
    fallback: sim
    transport: {kind: ssh, host: 127.0.0.1, port: 2222}
"""


def _run_dir(project: pytest.Pytester) -> Path:
    runs = [
        p for p in (project.path / "reports").iterdir() if p.is_dir() and not p.name.startswith(".")
    ]
    assert len(runs) == 1, runs
    return runs[0]


def _records(run_dir: Path) -> dict[str, dict[str, object]]:
    lines = (run_dir / "records.jsonl").read_text().splitlines()
    return {r["nodeid"].split("::")[-1]: r for r in map(json.loads, lines)}


def test_one_record_per_test_and_the_report(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS)
    result = project.runpytest("--junitxml=junit.xml")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    run_dir = _run_dir(project)
    records = _records(run_dir)
    assert set(records) == {
        "test_ok[rk3588-01]",
        "test_bad[rk3588-01]",
        "test_skipped[rv1106-no-board]",
    }
    ok, bad = records["test_ok[rk3588-01]"], records["test_bad[rk3588-01]"]
    assert ok["outcome"] == "passed" and bad["outcome"] == "failed"
    assert records["test_skipped[rv1106-no-board]"]["outcome"] == "skipped"
    assert ok["board"] == "rk3588-01" and ok["target"] == "rk3588" and ok["simulated"] is True
    assert ok["runtime_versions"] and ok["artifact_hashes"]
    assert [t["role"] for t in ok["tensors"]] == ["input", "output"]
    assert "different" in str(bad["message"]) or "different" in str(bad["longrepr"])
    heatmaps = [t["heatmap"] for t in bad["tensors"] if t["heatmap"]]
    assert heatmaps and all((run_dir / h).is_file() for h in heatmaps)
    assert not (project.path / "reports" / ".incoming").exists()
    # the failure message names the heatmap where it stays after the run
    named = re.findall(r"heatmap: (\S+\.png)", str(bad["longrepr"]))
    assert named and all(Path(p).is_file() for p in named)
    assert all(f"{run_dir.name}/heatmaps/" in p for p in named)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary  # the writer's summary: the run is complete
    for name in ("junit.xml", "report.html"):
        assert (run_dir / name).is_file()
    case = ET.parse(project.path / "junit.xml").find(".//testcase[@name='test_ok[rk3588-01]']")
    assert case is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["npu_hil.board"] == "rk3588-01"
    assert props["npu_hil.target"] == "rk3588"
    assert props["npu_hil.backend"] == "sim"
    assert props["npu_hil.simulated"] == "true"
    runtimes = {k.split(".", 2)[2]: v for k, v in props.items() if k.startswith("npu_hil.runtime.")}
    assert runtimes, props
    # The old spelling, deprecated, still says the same for this release.
    deprecated = {
        k.split(".", 2)[2]: v for k, v in props.items() if k.startswith("npu_hil.version.")
    }
    assert deprecated == runtimes
    assert any(k.startswith("npu_hil.artifact.") for k in props)


def test_reports_option(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS)
    project.runpytest("--reports", "out/nightly")
    assert any((project.path / "out" / "nightly").iterdir())
    assert not (project.path / "reports").exists()


def test_auto_backend_falls_back_and_says_simulated(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", inventory=FALLBACK_INVENTORY)
    pytester.makepyfile(
        """
        import numpy as np
        import pytest

        @pytest.mark.soc("rk3588")
        def test_fallback(run_model, board):
            assert board.simulated and board.fallback_reason
            assert run_model("identity", {"input": np.zeros((1, 3, 2, 2), np.uint8)}).ok

        @pytest.mark.hw_only
        @pytest.mark.soc("rk3588")
        def test_hardware_only(board):
            pass
        """
    )
    result = pytester.runpytest("--backend", "auto", "--junitxml=junit.xml", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*hw_only: rk3588-01 runs simulated*"])
    record = _records(_run_dir(pytester))["test_fallback[rk3588-01]"]
    assert record["simulated"] is True and record["backend"] == "sim"
    assert "ssh" in str(record["properties"]["fallback_reason"])  # type: ignore[index]
    case = ET.parse(pytester.path / "junit.xml").find(
        ".//testcase[@name='test_fallback[rk3588-01]']"
    )
    assert case is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["npu_hil.simulated"] == "true" and props["npu_hil.fallback_reason"]
    # provenance: the fallback ran simulated, the skipped hw_only case ran on neither
    skipped = _records(_run_dir(pytester))["test_hardware_only[rk3588-01]"]
    assert record["ran_on"] == "sim" and skipped["ran_on"] == ""
    summary = json.loads((_run_dir(pytester) / "summary.json").read_text())
    assert (summary["hardware"], summary["simulated"], summary["not_run"]) == (0, 1, 1)
    health = summary["board_health"]["rk3588-01"]
    assert any("fell back to a simulated board" in e["event"] for e in health)
    html = (_run_dir(pytester) / "report.html").read_text()
    assert "MIXED" not in html and "fell back to a simulated board" in html
    assert 'id="health"' in html


def test_baseline_is_the_last_complete_run_of_the_same_kind(project: pytest.Pytester) -> None:
    """A -k debugging run between two full runs is not the second one's baseline."""
    project.makepyfile(TESTS)

    def run(*args: str) -> tuple[Path, dict[str, object]]:
        before = (
            set((project.path / "reports").glob("*T*Z-*"))
            if (project.path / "reports").exists()
            else set()
        )
        project.runpytest(*args)
        (new,) = set((project.path / "reports").glob("*T*Z-*")) - before
        return new, json.loads((new / "comparison.json").read_text())

    first, first_cmp = run()
    assert first_cmp["previous_run"] is None
    _, debug_cmp = run("-k", "test_ok")
    assert debug_cmp["previous_run"] is None  # another selection: no baseline
    _, second_cmp = run()
    assert second_cmp["previous_run"] == first.name
    assert second_cmp["previous_started"]
    assert [e["nodeid"].split("::")[-1] for e in second_cmp["still_failing"]] == [
        "test_bad[rk3588-01]"
    ]
    _, asked_cmp = run("-k", "test_ok", "--compare-with", first.name)
    assert asked_cmp["previous_run"] == first.name
    assert "--compare-with" in str(asked_cmp["baseline"])


def test_hw_only_skipped_on_a_simulated_board_is_not_hardware(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        import pytest

        @pytest.mark.hw_only
        @pytest.mark.soc("rk3588")
        def test_hardware_only(board):
            pass

        @pytest.mark.soc("rk3588")
        def test_sim(board):
            pass
        """
    )
    project.runpytest().assert_outcomes(passed=1, skipped=1)
    run_dir = _run_dir(project)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["hardware"], summary["simulated"], summary["not_run"]) == (0, 1, 1)
    assert summary["per_board"]["rk3588-01"]["kind"] == "SIM"
    html = (run_dir / "report.html").read_text()
    assert "MIXED" not in html and 'class="b hw"' not in html
    meta = summary["meta"]
    assert meta["complete"] is True and meta["pytest_exit"] == 0 and len(meta["run_key"]) == 16
    assert meta["harness_version"] and meta["command_line"].startswith("pytest")


def test_hw_backend_leaves_simulated_boards_out(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS)
    result = project.runpytest("--backend", "hw", "-rs")
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines(["*no board for SoC rk3588*"])


def test_sim_only_runs_on_simulated_boards(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        import pytest

        @pytest.mark.sim_only
        @pytest.mark.soc("rk3588")
        def test_sim(board):
            assert board.simulated
        """
    )
    project.runpytest().assert_outcomes(passed=1)
