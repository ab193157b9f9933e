"""In pytest: a health file that cannot be believed never ends a session in an exception nor
decides a board's fate; the run's report names it (``health_history``: the board ``unknown``
with the problem). A folder in a health file's place stays through the run; a "bad" state
planted by a second local user (setpriv) in a health folder others may write refuses nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# Seconds a test (README: test tiers).
pytestmark = pytest.mark.slow

NOBODY = 65534
TESTS = """
import numpy as np
import pytest

@pytest.mark.soc("rk3588")
def test_case(board, run_model):
    assert run_model("identity", {"input": np.zeros((1, 3, 2, 2), dtype=np.uint8)}).ok
"""
PLANTED = '{"schema": 1, "state": "bad", "since": "2026-12-01T00:00:00Z", "cause": "planted"}'


def _health_history(project: pytest.Pytester) -> dict[str, dict[str, object]]:
    (run,) = [p for p in (project.path / "reports").iterdir() if (p / "summary.json").is_file()]
    return json.loads((run / "summary.json").read_text())["health_history"]  # type: ignore[no-any-return]


def test_a_folder_in_a_health_files_place_is_named_in_the_report(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = tmp_path / "health"
    folder.mkdir(mode=0o700)
    (folder / "rk3588-01.health.json").mkdir()
    monkeypatch.setenv("NPU_HIL_HEALTH_DIR", str(folder))
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1)
    kept = _health_history(pytester)["rk3588-01"]
    assert kept["state"] == "unknown"
    assert str(folder / "rk3588-01.health.json") in str(kept["problem"])


@pytest.fixture
def shared() -> Iterator[Path]:
    """A health folder every local user may write (pytest's own tmp folders are private)."""
    if shutil.which("setpriv") is None or os.geteuid() != 0:
        pytest.skip("needs root and setpriv to act as a second local user")
    top = Path(tempfile.mkdtemp(prefix="npu-hil-health-run-"))
    top.chmod(0o755)
    folder = top / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(top, ignore_errors=True)


def test_a_bad_state_planted_by_another_user_refuses_nothing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, shared: Path
) -> None:
    planted = f"echo '{PLANTED}' > {shared}/rk3588-01.health.json"
    cmd = ["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups"]
    subprocess.run([*cmd, "sh", "-c", planted], check=True, timeout=60)
    monkeypatch.setenv("NPU_HIL_HEALTH_DIR", str(shared))
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1)  # the board was not refused as "bad"
    kept = _health_history(pytester)["rk3588-01"]
    assert kept["state"] == "unknown" and "not trusted" in str(kept["problem"])
    assert "planted" not in str(kept.get("cause"))
