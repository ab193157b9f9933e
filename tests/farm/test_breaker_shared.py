"""What a board's circuit breaker learns is the run's, not one process's: failures counted in
separate processes of one run (pytest-xdist workers) add up, a breaker one opened is open in
the others at once, a success or a power cycle in one ends it for all; another run keeps its
own count. A breaker file that is not ours (a second local user made with setpriv writes it),
not a regular file or damaged never decides, never hangs, never raises."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from npu_hil.harness.errors import TransportError
from npu_hil.harness.farm.breaker import BoardBrokenError, BreakerFile, CircuitBreaker
from tests.second_user import NOBODY, reachable_folder, write_as_nobody

RUN = "20261205T120000Z-run"

# One process of the run: fails the board N times (or succeeds, or power-cycles it), then says
# whether its breaker is open and why.
WORKER = textwrap.dedent(
    """
    import sys
    from npu_hil.harness.errors import TransportError
    from npu_hil.harness.farm.breaker import BoardBrokenError, CircuitBreaker
    from npu_hil.harness.farm.breaker import BreakerFile

    folder, run_id, action, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    breaker = CircuitBreaker("bad-01", 3, shared=BreakerFile(folder, "bad-01", run_id))
    for n in range(count):
        if action == "fail":
            breaker.failed(TransportError(f"connection lost ({n})"))
        elif action == "succeed":
            breaker.succeeded()
        else:
            breaker.reset()
    try:
        breaker.check()
        print("closed", len(breaker.failures))
    except BoardBrokenError as exc:
        print("open", exc.cause, "|", exc.message)
    """
)


def worker(folder: Path, action: str, count: int = 1, run_id: str = RUN) -> str:
    """What a separate process of the run (``run_id``) finds after ``action`` ``count`` times."""
    cmd = [sys.executable, "-c", WORKER, str(folder), run_id, action, str(count)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip()


def breaker(folder: Path, run_id: str = RUN) -> CircuitBreaker:
    return CircuitBreaker("bad-01", 3, shared=BreakerFile(folder, "bad-01", run_id))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    made = tmp_path / "health"
    made.mkdir(mode=0o700)
    return made


def test_failures_in_two_processes_add_up_and_open_the_breaker_in_both(folder: Path) -> None:
    here = breaker(folder)
    here.check()  # closed, and this process has looked at the file
    assert worker(folder, "fail", 2) == "closed 2"
    # The third failure in a row, counted here, opens the run's breaker...
    assert here.failed(TransportError("connection refused")) is True
    with pytest.raises(BoardBrokenError, match="failed 3 times in a row") as opened:
        here.check()
    assert "connection refused" in opened.value.cause
    # ... and a process that never failed once refuses the board at once, with the cause.
    found = worker(folder, "fail", 0)
    assert found.startswith("open TransportError: connection refused |"), found
    assert "failed 3 times in a row" in found
    # Another run on the same inventory keeps its own count.
    assert worker(folder, "fail", 0, run_id="20261205T130000Z-other") == "closed 0"


def test_a_breaker_opened_in_another_process_is_open_here_without_a_failure(
    folder: Path,
) -> None:
    here = breaker(folder)
    assert not here.is_open
    assert worker(folder, "fail", 3).startswith("open TransportError: connection lost (2)")
    assert here.is_open
    with pytest.raises(BoardBrokenError, match=r"connection lost \(2\)"):
        here.check()


def test_a_success_or_a_power_cycle_elsewhere_ends_the_run_of_failures(folder: Path) -> None:
    here = breaker(folder)
    here.failed(TransportError("timeout"))
    here.failed(TransportError("timeout"))
    assert worker(folder, "succeed") == "closed 0"  # the board answered another process
    here.failed(TransportError("timeout"))
    here.check()  # one failure in a row, not three
    assert here.failures == ["TransportError: timeout"]
    for _ in range(2):
        here.failed(TransportError("timeout"))
    assert here.is_open
    assert worker(folder, "reset") == "closed 0"  # power-cycled by another process
    assert not here.is_open
    here.check()


def test_a_passing_job_writes_nothing(folder: Path) -> None:
    here = breaker(folder)
    for _ in range(100):
        here.check()
        here.succeeded()
    assert not (folder / "bad-01.breaker.json").exists()


def test_a_file_another_user_owns_is_not_believed(
    folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    worker(folder, "fail", 3)
    os.chown(folder / "bad-01.breaker.json", NOBODY, NOBODY)  # as if another user had made it
    here = breaker(folder)
    with caplog.at_level(logging.WARNING):
        here.check()  # not open: that file decides nothing
    assert f"owned by uid {NOBODY}" in caplog.text and "this process only" in caplog.text
    # The breaker still counts, in this process.
    for _ in range(3):
        here.failed(TransportError("lost"))
    assert here.is_open


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder a second local user can reach (pytest's own tmp folders are private)."""
    with reachable_folder("npu-hil-breaker-", 0o755) as made:
        yield made


def test_a_shared_folder_written_by_another_user_decides_nothing(
    open_folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    shared = open_folder / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # every local user may write here
    # The other user writes an open breaker for our run, in the file's own format (the
    # harness itself, run as that user, would refuse our folder).
    document = {
        "schema": 1,
        "board": "bad-01",
        "runs": {RUN: {"failures": ["TransportError: planted"] * 3, "opened": "planted"}},
    }
    write_as_nobody(shared / "bad-01.breaker.json", json.dumps(document))
    assert (shared / "bad-01.breaker.json").stat().st_uid == NOBODY
    here = breaker(shared)
    with caplog.at_level(logging.WARNING):
        here.check()
        assert not here.is_open
    assert "not trusted" in caplog.text and "writable by group or others" in caplog.text


@pytest.mark.parametrize("how", ["fifo", "dev-zero", "deep", "huge-number", "not-json"])
def test_a_damaged_file_never_hangs_nor_raises(
    folder: Path, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = folder / "bad-01.breaker.json"
    if how == "fifo":
        os.mkfifo(path, 0o600)
    elif how == "dev-zero":
        path.symlink_to("/dev/zero")
    elif how == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif how == "huge-number":
        path.write_text('{"schema": 1, "board": "bad-01", "runs": {"r": {"failures": 1e400}}}')
    else:
        path.write_text("{nope")
    path.parent.chmod(0o700)
    here = breaker(folder)
    with caplog.at_level(logging.WARNING):
        here.check()
        for _ in range(3):
            here.failed(TransportError("lost"))
    assert here.is_open  # counted all the same
    assert str(path) in caplog.text
    if how in ("deep", "huge-number", "not-json"):
        # A damaged file of ours is written afresh: the run's processes share again.
        assert worker(folder, "fail", 0).startswith("open TransportError: lost")
