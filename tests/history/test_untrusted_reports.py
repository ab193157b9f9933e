"""A reports folder another user owns, or others may write, is never believed: whoever can write
there could plant earlier runs and so decide the baselines, the history and the comparison. The
run's own report is still written; the report's head names the folder and why, the history
neither reads earlier runs nor indexes this one, and nothing is compared."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

# Seconds a test (README: test tiers).
pytestmark = pytest.mark.slow

NOBODY = 65534
TESTS = """
import numpy as np
import pytest

@pytest.mark.soc("rk3588")
def test_case(run_model):
    run_model("identity", {"input": np.arange(12, dtype=np.uint8).reshape(1, 3, 2, 2)})
"""


def _runs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and p.name[0].isdigit())


def _summary(run: Path) -> dict[str, Any]:
    return json.loads((run / "summary.json").read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize("how", ["writable-by-others", "another-users"])
def test_runs_in_a_folder_not_ours_are_not_believed(
    pytester: pytest.Pytester, tmp_path: Path, how: str
) -> None:
    if how == "another-users" and os.geteuid() != 0:
        pytest.skip("needs root to give the folder to a second local user")
    root = tmp_path / "reports"
    pytester.makepyfile(TESTS)
    reports = f"--reports={root}"
    pytester.runpytest(reports).assert_outcomes(passed=1)
    (first,) = _runs(root)
    assert _summary(first)["history"]["indexed_runs"] == 1

    if how == "writable-by-others":
        root.chmod(0o777)
    else:
        os.chown(root, NOBODY, NOBODY)
    result = pytester.runpytest(reports)
    result.assert_outcomes(passed=1)
    second = _runs(root)[-1]
    summary = _summary(second)  # the run's report is written all the same
    warnings = summary["meta"]["run_warnings"]
    assert any("reports folder not trusted" in w and str(root) in w for w in warnings), warnings
    assert summary["history"] == {"baseline_runs": [], "indexed_runs": None}
    comparison = json.loads((second / "comparison.json").read_text())
    assert "earlier runs not compared" in comparison["baseline"]
    assert comparison["previous_run"] is None
    result.stdout.fnmatch_lines(["*npu-hil: WARNING: reports folder not trusted*"])
    index = json.loads((root / "history.json").read_text())
    assert [r["run_id"] for r in index["runs"]] == [first.name]  # this run was not indexed


def test_a_run_folder_someone_else_made_first_is_never_written_into(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from npu_hil.harness.errors import UnsafeFolderError
    from npu_hil.harness.report.runs import RUN_DIR_ENV, run_dir_for_session

    planted = tmp_path / "reports" / "20261205T000000Z-abcdef"
    planted.mkdir(parents=True)
    planted.chmod(0o777)  # made first, for others to write into
    with pytest.raises(UnsafeFolderError, match="writable by"):
        run_dir_for_session(tmp_path / "reports", planted.name)
    monkeypatch.setenv(RUN_DIR_ENV, str(planted))
    with pytest.raises(UnsafeFolderError, match=str(planted)):
        run_dir_for_session(tmp_path / "reports")
    planted.chmod(0o700)
    assert run_dir_for_session(tmp_path / "reports") == planted
