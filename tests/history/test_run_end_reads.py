"""What the end of a run reads: each earlier run's measurements once (for the baselines and the
report's history view alike, read while the run runs) and nothing of the run itself, which it
holds in memory. At 12,000 cases every extra read of a run's measurements cost about a second
of the run's bookkeeping."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

import npu_hil.harness.history.store as store

pytestmark = pytest.mark.slow

TESTS = """
import numpy as np
import pytest

X = {"input": np.arange(60, dtype=np.uint8).reshape(1, 3, 4, 5)}

@pytest.mark.soc("rk3588")
@pytest.mark.parametrize("n", range(3))
def test_case(run_model, n):
    run_model("identity", X)
"""


def _runs(project: pytest.Pytester) -> list[Path]:
    return sorted(p for p in (project.path / "reports").glob("*T*Z-*") if p.is_dir())


def test_each_earlier_run_is_read_once_and_the_run_itself_never(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(TESTS)
    read: Counter[str] = Counter()
    real = store.read_measurements

    def counting(run_dir: Path, problems: list[str] | None = None):  # type: ignore[no-untyped-def]
        read[Path(run_dir).name] += 1
        return real(run_dir, problems)

    monkeypatch.setattr(store, "read_measurements", counting)
    wide = ("--baseline-floor", "2000")  # the host's wall time: only the wiring is under test
    project.runpytest(*wide).assert_outcomes(passed=3)
    (first,) = _runs(project)
    assert read == Counter(), "a first run has no earlier run to read, nor its own"

    project.runpytest(*wide).assert_outcomes(passed=3)
    second = _runs(project)[-1]
    assert read == Counter({first.name: 1})
    summary = json.loads((second / "summary.json").read_text())
    assert summary["history"] == {"baseline_runs": [first.name], "indexed_runs": 2}
    # The page's history view has both runs: the earlier one read, this one from memory.
    page = (second / "report.html").read_text()
    assert first.name in page and page.count(second.name) >= 2

    # Without an index the index is rebuilt from the run folders, still never from this run's.
    (project.path / "reports" / "history.json").unlink()
    read.clear()
    project.runpytest(*wide).assert_outcomes(passed=3)
    third = _runs(project)[-1]
    assert third.name not in read and read[first.name] >= 1 and read[second.name] >= 1
    index = json.loads((project.path / "reports" / "history.json").read_text())
    assert [r["run_id"] for r in index["runs"]] == [first.name, second.name, third.name]
