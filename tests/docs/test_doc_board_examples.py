"""The examples of README.md and docs/ that need boards run on the built-in simulated farm: the
scripts that open a ``Farm`` in-process, the pytest tests under a pytest of their own (one run
per page, the plugin installed as a user has it). Each page's other blocks run first, in order,
as in ``test_doc_examples.py``, since a page's examples build on one another."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from doc_examples import REPO, blocks, pages, run_block

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

BOARD_PAGES = [p for p in pages() if any(b.kind in ("python-board", "pytest") for b in blocks(p))]

# What the tests of the pages take beyond the plugin's own fixtures: a frame of pixels.
CONFTEST = """\
import numpy as np
import pytest


@pytest.fixture
def frame():
    return np.random.default_rng(0).integers(0, 255, (1, 3, 8, 8), dtype=np.uint8)
"""


@pytest.mark.parametrize("page", BOARD_PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_the_page_board_examples_run(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "page"
    work.mkdir(mode=0o700)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(cache))
    tests = []
    for block in blocks(page):
        if block.kind == "pytest":
            tests.append(block)
        else:
            run_block(block, work)
    if not tests:
        return
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST)
    expected = 0
    for number, block in enumerate(tests):
        (suite / f"test_page_{number}.py").write_text(f"# {block.where}\n{block.text}")
        # One case per board of the SoCs a test names (the examples name theirs).
        socs = re.findall(r"@pytest\.mark\.soc\(([^)]*)\)", block.text)
        assert socs, f"{block.where}: name the SoCs the example runs on (@pytest.mark.soc)"
        expected += sum(len(s.split(",")) for s in socs)
    env = {**os.environ, "PYTEST_ADDOPTS": ""}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:labgrid"]
    command += ["-q", "-rA", "--reports", str(tmp_path / "reports"), str(suite)]
    done = subprocess.run(
        command,
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert f"{expected} passed" in done.stdout, done.stdout[-4000:]
    assert "skipped" not in done.stdout.splitlines()[-1], done.stdout[-4000:]
