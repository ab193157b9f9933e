"""The kernel log reader against real files in the /dev/kmsg record format
(``pri,seq,usec,flags;message`` and `` KEY=value`` continuation lines): the mark is the end of
the log, the delta is what came after it, a wrapped ring buffer (EPIPE, or a gap in the sequence
numbers) is counted, the caps keep the newest lines, and without a readable log the delta says
why; the dmesg fallback; the runtime's stderr capture; and the reader under Python 3.8."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from npu_hil.harness.board import kernlog
from npu_hil.harness.board.boardstate import SYSFS_ROOT_ENV
from npu_hil.harness.board.kernlog import (
    SYNC_WAIT_S,
    KernelLog,
    StderrCapture,
    StderrTee,
    parse_record,
    set_log_level,
)
from tests.agent.jobs import PY38, py38_problem


def record(seq: int, message: str, pri: int = 3, usec: int | None = None) -> str:
    return f"{pri},{seq},{usec if usec is not None else 1000000 + seq},-;{message}\n"


@pytest.fixture
def kmsg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "dev" / "kmsg"
    path.parent.mkdir()
    path.write_text(record(0, "booted") + record(1, "old line"))
    monkeypatch.setenv(kernlog.KMSG_ENV, str(path))
    return path


def append(path: Path, *records: str) -> None:
    with path.open("a") as handle:
        handle.write("".join(records))


def test_a_record_parses_with_its_level_sequence_and_time() -> None:
    parsed = parse_record("6,1234,5678901,-,caller=T1;RKNPU: soft reset, num: 1")
    assert parsed == {
        "level": 6,
        "facility": 0,
        "seq": 1234,
        "usec": 5678901,
        "message": "RKNPU: soft reset, num: 1",
    }
    assert parse_record(" SUBSYSTEM=platform") is None
    assert parse_record("not a record") is None
    assert kernlog.format_line(parsed) == "[    5.678901] RKNPU: soft reset, num: 1"


def test_the_delta_is_what_came_after_the_mark(kmsg: Path) -> None:
    log = KernelLog()
    log.mark()
    append(kmsg, record(2, "RKNPU: job timeout, flags: 0x0"), " DEVICE=+platform:npu\n")
    append(kmsg, record(3, "RKNPU: soft reset, num: 1", usec=7_000_001))
    delta = log.delta()
    assert delta["source"] == "kmsg"
    assert delta["lines"] == [
        "[    1.000002] RKNPU: job timeout, flags: 0x0",
        "[    7.000001] RKNPU: soft reset, num: 1",
    ]
    assert "lost" not in delta and "dropped" not in delta


def test_a_quiet_kernel_gives_an_empty_delta(kmsg: Path) -> None:
    log = KernelLog()
    log.mark()
    assert log.delta() == {"source": "kmsg", "lines": []}


def test_a_gap_in_the_sequence_counts_the_records_lost(kmsg: Path) -> None:
    log = KernelLog()
    log.mark()
    append(kmsg, record(2, "a"), record(7, "b"))
    delta = log.delta()
    assert delta["lost"] == 4 and len(delta["lines"]) == 2


def test_epipe_means_the_ring_buffer_wrapped_and_the_reader_goes_on(kmsg: Path) -> None:
    # /dev/kmsg answers a read whose record was overwritten with EPIPE, then carries on from
    # the oldest record left; a file cannot, so the read is wrapped the way the kernel does it.
    calls = {"n": 0}

    def read(fd: int, size: int) -> bytes:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError(errno.EPIPE, "Broken pipe")
        return os.read(fd, size)

    log = KernelLog(read=read)
    log.mark()
    append(kmsg, record(40, "RKNPU: soft reset, num: 2"))
    delta = log.delta()
    assert delta["lost"] == 1
    assert delta["lines"] == ["[    1.000040] RKNPU: soft reset, num: 2"]


def test_eagain_ends_the_delta_as_on_dev_kmsg(kmsg: Path) -> None:
    chunks = [record(2, "one").encode(), record(3, "two").encode()]

    def read(fd: int, size: int) -> bytes:
        if chunks:
            return chunks.pop(0)
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    log = KernelLog(read=read)
    log.mark()
    assert [line.split("] ")[1] for line in log.delta()["lines"]] == ["one", "two"]


def test_the_caps_keep_the_newest_lines(kmsg: Path) -> None:
    log = KernelLog()
    log.mark()
    append(kmsg, *(record(2 + i, f"line {i} " + "x" * 900) for i in range(kernlog.MAX_LINES + 50)))
    delta = log.delta()
    lines = delta["lines"]
    assert lines[-1].split("] ")[1].startswith(f"line {kernlog.MAX_LINES + 49} ")
    assert all(len(line) <= kernlog.MAX_LINE_CHARS for line in lines)
    assert sum(len(line) + 1 for line in lines) <= kernlog.MAX_BYTES
    assert delta["dropped"] == kernlog.MAX_LINES + 50 - len(lines)


def test_a_missing_log_under_a_fake_root_is_absent_with_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(kernlog.KMSG_ENV, raising=False)
    monkeypatch.delenv(kernlog.DMESG_ENV, raising=False)
    monkeypatch.setenv(SYSFS_ROOT_ENV, str(tmp_path))
    log = KernelLog()
    log.mark()
    delta = log.delta()
    assert delta["source"] == "absent" and delta["lines"] == []
    assert str(tmp_path / "dev" / "kmsg") in delta["why"]


def test_a_simulated_log_is_created_empty_when_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "board" / "dev" / "kmsg"
    monkeypatch.setenv(kernlog.KMSG_ENV, str(path))
    log = KernelLog()
    log.mark()
    append(path, record(0, "first"))
    assert log.delta()["lines"] == ["[    1.000000] first"]


def test_without_kmsg_the_dmesg_lines_after_the_mark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    output = tmp_path / "dmesg.txt"
    output.write_text("[    1.0] boot\n[    2.0] same\n")
    fake = tmp_path / "dmesg"
    fake.write_text(f"#!/bin/sh\ncat {output}\n")
    fake.chmod(0o755)
    monkeypatch.delenv(kernlog.KMSG_ENV, raising=False)
    monkeypatch.setenv(SYSFS_ROOT_ENV, str(tmp_path))  # no dev/kmsg there
    monkeypatch.setenv(kernlog.DMESG_ENV, str(fake))
    log = KernelLog()
    log.mark()
    with output.open("a") as handle:
        handle.write("[    3.0] same\n[    4.0] Out of memory: Killed process 12 (python3)\n")
    delta = log.delta()
    assert delta["source"] == "dmesg"
    assert delta["lines"] == [
        "[    3.0] same",
        "[    4.0] Out of memory: Killed process 12 (python3)",
    ]


def test_a_failing_dmesg_is_absent_with_both_reasons(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "dmesg"
    fake.write_text(
        "#!/bin/sh\necho 'dmesg: read kernel buffer failed: Operation not permitted' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.delenv(kernlog.KMSG_ENV, raising=False)
    monkeypatch.setenv(SYSFS_ROOT_ENV, str(tmp_path))
    monkeypatch.setenv(kernlog.DMESG_ENV, str(fake))
    log = KernelLog()
    log.mark()
    delta = log.delta()
    assert delta["source"] == "absent"
    assert "kmsg" in delta["why"] and "Operation not permitted" in delta["why"]


@pytest.mark.skipif(not os.access("/dev/kmsg", os.R_OK), reason="/dev/kmsg is not readable here")
def test_the_real_dev_kmsg_marks_at_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    # Read only: the machine's kernel log is never written. SEEK_END puts the reader after the
    # newest record, so the delta holds at most what the kernel logged in these few lines.
    monkeypatch.delenv(kernlog.KMSG_ENV, raising=False)
    monkeypatch.delenv(SYSFS_ROOT_ENV, raising=False)
    log = KernelLog()
    log.mark()
    assert log.fd is not None, log.why
    delta = log.delta()
    assert delta["source"] == "kmsg" and "why" not in delta
    assert len(delta["lines"]) < 50


def close_tee(tee: StderrTee) -> None:
    """Descriptor 2 put back and the tee ended (the agent never needs it: the tee ends with the
    process; a test does)."""
    if tee.saved is not None:
        sys.stderr.flush()
        os.dup2(tee.saved, 2)
        sys.stderr.flush()
        os.close(tee.saved)
        tee.saved = None
    if tee.ack is not None:
        os.close(tee.ack)
        tee.ack = None
    if tee.proc is not None:
        try:
            tee.proc.wait(timeout=SYNC_WAIT_S)
        except subprocess.TimeoutExpired:
            tee.proc.kill()
            tee.proc.wait()
        tee.proc = None


def test_the_runtime_stderr_is_captured_in_the_window() -> None:
    tee = StderrTee()
    try:
        os.write(2, b"before the window\n")
        capture = StderrCapture(tee)
        capture.start()
        os.write(2, b"E RKNN: [17:10:15.696] Invalid RKNN model version 6\n")
        # A child writing to the descriptor it inherited, as a runtime's helper process would.
        subprocess.run(["sh", "-c", "echo from a child >&2"], check=True)
        os.write(2, b"a line cut in the middle: \0npu-hil")  # a partial sync mark is text
        got = capture.stop(5, "RKNN_LOG_LEVEL")
        # The next job's window holds only its own lines: one tee, many windows.
        second = StderrCapture(tee)
        second.start()
        os.write(2, b"second job\n")
        again = second.stop(None, None)
    finally:
        close_tee(tee)
    assert got["source"] == "stderr" and got["level"] == 5 and got["env"] == "RKNN_LOG_LEVEL"
    assert got["lines"] == [
        "E RKNN: [17:10:15.696] Invalid RKNN model version 6",
        "from a child",
        "a line cut in the middle: \0npu-hil",
    ]
    assert again["lines"] == ["second job"]
    os.write(2, b"")  # descriptor 2 is back and usable
    assert tee.proc is None  # the tee ended with its last writer


def test_the_level_goes_where_the_runtime_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NPU_HIL_TEST_LEVEL", raising=False)
    set_log_level("NPU_HIL_TEST_LEVEL", None)
    assert "NPU_HIL_TEST_LEVEL" not in os.environ
    set_log_level("NPU_HIL_TEST_LEVEL", 4)
    assert os.environ["NPU_HIL_TEST_LEVEL"] == "4"


PY38_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
from board.kernlog import KernelLog
log = KernelLog(sys.argv[2])
log.mark()
with open(sys.argv[2], "a") as handle:
    handle.write("3,5,6000000,-;RKNPU: job timeout, flags: 0x0\\n")
print(log.delta()["lines"])
"""


@pytest.mark.skipif(py38_problem() is not None, reason=py38_problem() or "")
def test_the_reader_runs_under_python_38(tmp_path: Path) -> None:
    path = tmp_path / "kmsg"
    path.write_text(record(4, "before"))
    package = Path(kernlog.__file__).parents[1]
    done = subprocess.run(
        [PY38, "-c", PY38_SCRIPT, str(package), str(path)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().strip() == "['[    6.000000] RKNPU: job timeout, flags: 0x0']"
