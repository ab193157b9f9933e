"""What a board test's failure sends to the console and to ``pytest.log`` is scrubbed like the
reports: no ``password=`` a board printed, no raw terminal escape; a clean failure is shown as
pytest renders it."""

from __future__ import annotations

import io
import os
import threading

import pytest

from npu_hil.harness.cli.nightly_cmd import _copy_scrubbed

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

TESTS = """
import pytest

@pytest.mark.soc("rk3588")
def test_leaky(board):
    raise RuntimeError("rknpu: login password=hunter2 failed \\x1b[2J\\x1b]0;owned\\x07")

@pytest.mark.soc("rk3588")
def test_plain(board):
    assert 1 + 1 == 3
"""


def test_the_console_never_shows_a_boards_secret_or_escape(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS)
    result = project.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "hunter2" not in out and "\x1b[2J" not in out and "\x1b]0;" not in out
    assert "password=[secret removed]" in out and "\\x1b[2J" in out
    assert "assert (1 + 1) == 3" in out  # pytest's own rendering of a clean failure


def test_pytest_log_is_copied_scrubbed() -> None:
    read_end, write_end = os.pipe()
    log = io.BytesIO()
    with os.fdopen(read_end, "rb") as source:
        copier = threading.Thread(target=_copy_scrubbed, args=(source, log))
        copier.start()
        with os.fdopen(write_end, "wb") as sink:
            sink.write(b"ok line\nE  token=abc123 \x1b[31mred\nbad \xff byte\n")
        copier.join(timeout=10)
    text = log.getvalue().decode()
    assert text.splitlines() == [
        "ok line",
        "E  token=[secret removed] \\x1b[31mred",
        "bad \ufffd byte",
    ]
