"""The inventory a run uses is never a surprise: it is found beside the inifile or in the folder
pytest runs in, never through a rootdir that an option's value moved (``--reports DIR`` with DIR
an existing folder elsewhere); the console names the file, or says why the built-in farm runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

NO_AUTOLOAD = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"

INVENTORY = """\
defaults: {backend: sim, fallback: sim}
boards:
  - {name: mine-01, target: rk3588, backend: sim, transport: local}
"""
TESTS = """
import pytest

@pytest.mark.soc("rk3588")
def test_board(board):
    assert board.name == "mine-01"
"""


def _summary(reports: Path) -> dict[str, object]:
    (path,) = reports.glob("*/summary.json")
    found: dict[str, object] = json.loads(path.read_text())
    return found


def test_an_existing_reports_folder_elsewhere_does_not_move_the_inventory(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".yaml", inventory=INVENTORY)
    pytester.makepyfile(TESTS)
    with tempfile.TemporaryDirectory() as elsewhere:
        reports = Path(elsewhere) / "reports"
        reports.mkdir()
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--reports", str(reports))
        result.assert_outcomes(passed=1)
        inventory = pytester.path / "inventory.yaml"
        result.stdout.fnmatch_lines([f"npu-hil: inventory {inventory}"])
        assert _summary(reports)["meta"]["inventory"] == str(inventory)  # type: ignore[index]


def test_the_inventory_beside_the_inifile_serves_a_run_from_a_subfolder(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".yaml", inventory=INVENTORY)
    pytester.makeini("[pytest]\n")
    sub = pytester.mkdir("tests")
    (sub / "test_sub.py").write_text(TESTS)
    # Started in the subfolder: the rootdir and the inventory come from the inifile above it.
    plugin = ["-p", "npu_hil.harness.plugin"] if os.environ.get(NO_AUTOLOAD) else []
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *plugin, "."]
    done = subprocess.run(cmd, cwd=sub, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-2000:]
    assert f"npu-hil: inventory {pytester.path / 'inventory.yaml'}" in done.stdout


def test_the_fallback_to_the_built_in_farm_says_where_it_looked(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(TESTS.replace('"mine-01"', '"rk3588-01"'))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [f"npu-hil: no inventory given*(inventory.yaml in {pytester.path})*"]
    )
