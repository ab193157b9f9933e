"""No place stays acquired, however a holder ends: closed, at interpreter exit, on SIGTERM,
SIGHUP or Ctrl-C (SIGINT), and after SIGKILL by the next start on the host (labgrid itself keeps
a killed client's place acquired for ever: that is checked first). Two processes of one host
share a place; the last one out releases it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from npu_hil.harness.labgrid.config import LabgridConfig
from npu_hil.harness.labgrid.errors import PlaceBusyError
from npu_hil.harness.labgrid.ledger import Holder, PlaceLedger, current_holder, holder_alive
from npu_hil.harness.labgrid.places import LabgridPlaces
from tests.labgrid.lab import SSH_PLACE, Lab, as_foreground

HOLDER = Path(__file__).with_name("holder.py")
ROOT = Path(__file__).resolve().parents[2]


def holder_env() -> dict[str, str]:
    """This environment, with the repository importable (holder.py imports ``npu_hil``)."""
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def holder_command(lab: Lab, workdir: Path, *extra: str) -> list[str]:
    """holder.py holding the SSH place of ``lab`` for ``workdir``."""
    return [sys.executable, str(HOLDER), lab.address, SSH_PLACE, str(workdir), *extra]


class Holding:
    """holder.py in a process of its own (its own process group, so a signal reaches it only)."""

    def __init__(self, lab: Lab, workdir: Path, *extra: str) -> None:
        self.process = subprocess.Popen(
            as_foreground(holder_command(lab, workdir, *extra)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=holder_env(),
            start_new_session=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().split()
        if not line:
            self.process.kill()
            raise AssertionError(f"holder failed: {self.process.communicate(timeout=10)[1]}")
        assert line[0] == "held", line
        self.identity, self.how = line[1], line[2]

    def ended(self, timeout: float) -> int:
        """Its exit status once it has ended, its pipes closed."""
        self.process.communicate(timeout=timeout)
        return self.process.returncode

    def signal(self, signum: int) -> int:
        self.process.send_signal(signum)
        try:
            return self.ended(30)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGUSR1)  # its threads' stacks, then its end
            time.sleep(1.0)
            self.process.kill()
            _, stderr = self.process.communicate(timeout=10)
            raise AssertionError(
                f"holder still running 30 s after signal {signum}:\n{stderr}"
            ) from None

    def stop(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        return self.ended(30)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.ended(30)


@pytest.fixture
def holders() -> Iterator[list[Holding]]:
    started: list[Holding] = []
    yield started
    for holding in started:
        if holding.process.poll() is None:
            holding.stop()
        holding.ended(30)  # its pipes closed, however it ended


def test_closing_releases(lab: Lab, workdir: Path, holders: list[Holding]) -> None:
    holders.append(holding := Holding(lab, workdir))
    assert lab.acquired_by(SSH_PLACE) == holding.identity
    assert holding.stop() == 0
    assert lab.acquired_by(SSH_PLACE) is None
    assert not lab.reserved(SSH_PLACE)


def test_interpreter_exit_releases(lab: Lab, workdir: Path, holders: list[Holding]) -> None:
    holders.append(holding := Holding(lab, workdir, "--exit"))
    assert holding.ended(30) == 0
    assert lab.acquired_by(SSH_PLACE) is None


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_releases(lab: Lab, workdir: Path, holders: list[Holding], signum: int) -> None:
    holders.append(holding := Holding(lab, workdir))
    assert lab.acquired_by(SSH_PLACE) == holding.identity
    status = holding.signal(signum)
    assert status != 0  # it stopped because of the signal, not normally
    assert lab.acquired_by(SSH_PLACE) is None
    assert not lab.reserved(SSH_PLACE)


def test_sigkill_is_cleaned_up_by_the_next_start(
    lab: Lab, workdir: Path, holders: list[Holding]
) -> None:
    holders.append(holding := Holding(lab, workdir))
    holding.kill()  # SIGKILL: no handler, no atexit
    # labgrid keeps the dead client's place acquired (and its reservation with it).
    time.sleep(0.5)
    assert lab.acquired_by(SSH_PLACE) == holding.identity
    assert lab.reserved(SSH_PLACE)
    # The next start on this host, with the same workdir, releases it before anything else.
    config = LabgridConfig(lab.address, places=(SSH_PLACE,), wait=0.0)
    with LabgridPlaces(config, workdir=workdir) as places:
        assert places.released_stale == [SSH_PLACE]
        assert lab.acquired_by(SSH_PLACE) is None
        assert not lab.reserved(SSH_PLACE)
        places.acquire(SSH_PLACE)  # and it is usable at once, without waiting
    assert lab.acquired_by(SSH_PLACE) is None


def _killed_in_acquire(lab: Lab, workdir: Path, moment: str) -> None:
    """holder.py, killed just before or just after the coordinator acquires the place for it."""
    died = subprocess.run(
        holder_command(lab, workdir, f"--killed-{moment}"),
        capture_output=True,
        text=True,
        env=holder_env(),
        timeout=60,
    )
    assert died.returncode == -signal.SIGKILL, died.stdout + died.stderr
    time.sleep(0.5)


@pytest.mark.parametrize("moment", ["before-acquire", "after-acquire"])
def test_a_kill_next_to_the_acquire_is_cleaned_up_by_the_next_start(
    lab: Lab, workdir: Path, moment: str
) -> None:
    _killed_in_acquire(lab, workdir, moment)
    acquired = moment == "after-acquire"
    assert (lab.acquired_by(SSH_PLACE) is not None) is acquired
    assert lab.reserved(SSH_PLACE)  # the dead run's reservation keeps everyone else out
    config = LabgridConfig(lab.address, places=(SSH_PLACE,), wait=0.0)
    with LabgridPlaces(config, workdir=workdir) as places:
        assert places.released_stale == ([SSH_PLACE] if acquired else [])
        assert lab.acquired_by(SSH_PLACE) is None
        assert not lab.reserved(SSH_PLACE)
        places.acquire(SSH_PLACE)  # usable at once, without waiting
    assert lab.acquired_by(SSH_PLACE) is None


def test_a_record_of_a_place_never_acquired_spares_another_runs_hold(
    lab: Lab, workdir: Path, tmp_path: Path, holders: list[Holding]
) -> None:
    _killed_in_acquire(lab, workdir, "before-acquire")
    lab.cancel_reservations([SSH_PLACE])  # the dead run's reservation expires
    # A run of the same identity in another workdir acquires the place under its own reservation.
    holders.append(other := Holding(lab, tmp_path / "other"))
    config = LabgridConfig(lab.address, places=(SSH_PLACE,), wait=0.0)
    with LabgridPlaces(config, workdir=workdir) as places:
        assert places.released_stale == []
    assert lab.acquired_by(SSH_PLACE) == other.identity
    assert other.stop() == 0
    assert lab.acquired_by(SSH_PLACE) is None


def test_sigkilled_holder_with_a_live_sibling_is_not_released(
    lab: Lab, workdir: Path, holders: list[Holding]
) -> None:
    holders.append(first := Holding(lab, workdir))
    holders.append(second := Holding(lab, workdir))
    assert (first.how, second.how) == ("acquired", "shared")
    first.kill()
    config = LabgridConfig(lab.address, places=(SSH_PLACE,), wait=0.0)
    with LabgridPlaces(config, workdir=workdir) as places:
        assert places.released_stale == []
    assert lab.acquired_by(SSH_PLACE) == second.identity
    assert second.stop() == 0
    assert lab.acquired_by(SSH_PLACE) is None


def test_siblings_share_and_the_last_one_releases(
    lab: Lab, workdir: Path, holders: list[Holding]
) -> None:
    holders.append(first := Holding(lab, workdir))
    holders.append(second := Holding(lab, workdir))
    assert (first.how, second.how) == ("acquired", "shared")
    assert first.stop() == 0
    assert lab.acquired_by(SSH_PLACE) == second.identity  # still in use by the second
    assert second.stop() == 0
    assert lab.acquired_by(SSH_PLACE) is None
    assert not lab.reserved(SSH_PLACE)


def test_another_workdir_is_another_run_and_waits(
    lab: Lab, workdir: Path, tmp_path: Path, holders: list[Holding]
) -> None:
    holders.append(holding := Holding(lab, workdir))
    config = LabgridConfig(lab.address, places=(SSH_PLACE,), wait=0.0)
    other = LabgridPlaces(config, workdir=tmp_path / "other")
    with other, pytest.raises(PlaceBusyError, match=f"acquired by {holding.identity}"):
        other.acquire(SSH_PLACE)


@pytest.mark.slow
def test_a_reused_pid_is_not_the_holder(tmp_path: Path) -> None:
    me = current_holder()
    assert holder_alive(me)
    if me.start is not None:  # Linux: the start time tells a reused pid apart
        assert not holder_alive(Holder(me.pid, me.start + 1))
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not holder_alive(Holder(child.pid, None))
    ledger = PlaceLedger(tmp_path, "127.0.0.1:1")
    with ledger.transaction() as holdings:
        assert holdings == {}
    assert ledger.path.name == "places-127.0.0.1_1.json"
