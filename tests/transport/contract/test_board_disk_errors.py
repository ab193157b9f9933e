"""A full or read-only board disk is reported as such (ENOSPC, EROFS, EACCES with their errno),
over every transport, by the transfer code: never as a short transfer ("landed as 0 bytes") or a
missing file. A job itself touches no disk (it travels in frames), so such a disk does not stop
it, and a kept job's view that cannot be written costs the job nothing.

The disk is real: a tmpfs of a few MiB (``size=``) mounted as the board's workdir, filled with
a file or remounted read-only. It is mounted in this machine's mount namespace, not a private
one, because the board side runs in processes the fixtures started before (the sshd, the shell
on the console's pseudo-terminal) and must see it; it is unmounted after each test. Needs root
(mount), skipped otherwise.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.agent.protocol import InputSpec, JobSpec
from npu_hil.harness.errors import TransportError
from npu_hil.harness.transport.ssh import SshTransport
from tests.agent.jobs import FAKE_ADAPTERS, echo_job
from tests.transport.contract.conftest import PY, open_transport

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

SHAPE = (256, 1024)  # 256 KiB in, 256 KiB out
X = np.arange(SHAPE[0] * SHAPE[1], dtype=np.uint8).reshape(SHAPE).view(np.int8)


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, this user's alone, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs as the board's disk needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "npu-hil-test", str(mount)],
        capture_output=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path, leave: int = 0) -> None:
    """Fill the disk but for ``leave`` bytes."""
    stats = os.statvfs(disk)
    free = stats.f_bavail * stats.f_frsize
    with (disk / "filler").open("wb") as stream:
        try:
            stream.write(b"\0" * max(0, free - leave))
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def read_only(disk: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)


# SFTP (small files, read back) and the exec-channel stream (large files) fail differently.
SSH_MODES = {"ssh-sftp": {}, "ssh-stream": {"readback_max": 0}}


def _cases(kinds: tuple[str, ...]) -> list[object]:
    cases: list[object] = []
    for kind in kinds:
        if kind == "ssh":
            cases += [pytest.param("ssh", options, id=name) for name, options in SSH_MODES.items()]
        else:
            cases.append(pytest.param(kind, {}, id=kind))
    return cases


@contextmanager
def client_on(
    request: pytest.FixtureRequest, kind: str, disk: Path, tmp_path: Path, keep_jobs: bool = False
) -> Iterator[tuple[AgentClient, Path]]:
    """A client of a board whose workdir is on ``disk``, and the model of its jobs: the agent
    deployed and a first job run (its view kept with ``keep_jobs``) while the disk had room."""
    model = tmp_path / "echo.bin"
    model.write_bytes(b"model" * 50)
    with (
        open_transport(
            request, kind, disk / "board", **request.node.callspec.params.get("ssh_options", {})
        ) as transport,
        AgentClient(
            transport, adapter_dirs=[FAKE_ADAPTERS], margin_s=5.0, keep_jobs=keep_jobs
        ) as client,
    ):
        assert client.submit(job(model, "first"), {"x": X}).ok
        yield client, model


def new_model(tmp_path: Path) -> Path:
    """A model the board's cache does not hold yet: the next job deploys it."""
    model = tmp_path / "echo-new.bin"
    model.write_bytes(b"another model" * 50)
    return model


def job(model: Path, name: str) -> JobSpec:
    return echo_job(model, name, inputs=(InputSpec("x", "NCHW", SHAPE, "int8"),))


def assert_named(error: TransportError, number: int) -> None:
    assert error.errno == number
    assert error.errno_name == errno.errorcode[number]
    assert f"{errno.errorcode[number]} ({os.strerror(number)}) on the board" in error.message


@pytest.mark.parametrize(("kind", "ssh_options"), _cases(("local", "ssh", "serial")))
def test_a_full_disk_is_enospc_when_deploying_a_model(
    request: pytest.FixtureRequest, disk: Path, tmp_path: Path, kind: str, ssh_options: object
) -> None:
    with client_on(request, kind, disk, tmp_path) as (client, _):
        fill(disk)
        with pytest.raises(TransportError) as caught:
            client.submit(job(new_model(tmp_path), "full"), {"x": X})
        assert_named(caught.value, errno.ENOSPC)
        assert "landed as" not in caught.value.message.split(" on the board")[0]


@pytest.mark.parametrize(("kind", "ssh_options"), _cases(("local", "ssh")))
def test_a_read_only_disk_is_erofs_when_deploying_a_model(
    request: pytest.FixtureRequest, disk: Path, tmp_path: Path, kind: str, ssh_options: object
) -> None:
    # (Over the serial console the resident agent keeps files open on the disk, so it cannot
    # be remounted read-only under it.)
    with client_on(request, kind, disk, tmp_path) as (client, _):
        read_only(disk)
        with pytest.raises(TransportError) as caught:
            client.submit(job(new_model(tmp_path), "ro"), {"x": X})
        assert_named(caught.value, errno.EROFS)
        assert "No such file" not in caught.value.message.split(" on the board")[0]


@pytest.mark.parametrize(("kind", "ssh_options"), _cases(("local", "ssh", "serial")))
def test_a_kept_view_on_a_full_disk_costs_the_job_nothing(
    request: pytest.FixtureRequest, disk: Path, tmp_path: Path, kind: str, ssh_options: object
) -> None:
    """With ``keep_jobs`` the agent writes a job's files after it ran; on a full disk they
    cannot be written, and the job's result and buffers come back all the same."""
    with client_on(request, kind, disk, tmp_path, keep_jobs=True) as (client, model):
        fill(disk)
        result = client.submit(job(model, "kept-full"), {"x": X})
        assert result.ok, result.errors
        assert result.output("x_out").data.tobytes() == X.tobytes()
    # The view was begun and could not be finished: no result.json, its input not whole.
    (kept,) = (disk / "board" / "jobs").glob("kept-full-*")
    assert not (kept / "result.json").exists()
    assert not (kept / "input_0.bin").exists() or (kept / "input_0.bin").stat().st_size < X.nbytes


@pytest.mark.parametrize(("kind", "ssh_options"), _cases(("local", "ssh")))
def test_a_kept_view_on_a_read_only_disk_costs_the_job_nothing(
    request: pytest.FixtureRequest,
    disk: Path,
    tmp_path: Path,
    kind: str,
    ssh_options: object,
) -> None:
    """The view's folder cannot even be made: the job runs all the same, and the report is told
    why its files are not on the board (the client's board events)."""
    with client_on(request, kind, disk, tmp_path, keep_jobs=True) as (client, model):
        client.take_events()
        read_only(disk)
        result = client.submit(job(model, "kept-ro"), {"x": X})
        assert result.ok, result.errors
        assert result.output("x_out").data.tobytes() == X.tobytes()
        (event,) = client.take_events()
    assert not list((disk / "board" / "jobs").glob("kept-ro-*"))
    assert "job kept-ro: its files could not be kept on the board" in event
    assert "Read-only" in event


@pytest.mark.parametrize(("kind", "ssh_options"), _cases(("local", "ssh", "serial")))
def test_a_framed_job_runs_on_a_full_disk(
    request: pytest.FixtureRequest, disk: Path, tmp_path: Path, kind: str, ssh_options: object
) -> None:
    """A job travels in the session's frames and writes nothing on the board: a disk with no
    byte free does not stop it, and its buffers come back whole."""
    with client_on(request, kind, disk, tmp_path) as (client, model):
        fill(disk)
        assert os.statvfs(disk).f_bavail == 0
        result = client.submit(job(model, "full-framed"), {"x": X})
        assert result.ok, result.errors
        assert result.output("x_out").data.tobytes() == X.tobytes()


@pytest.mark.parametrize(("kind", "ssh_options"), _cases(("local", "ssh")))
def test_a_framed_job_runs_on_a_read_only_disk(
    request: pytest.FixtureRequest, disk: Path, tmp_path: Path, kind: str, ssh_options: object
) -> None:
    with client_on(request, kind, disk, tmp_path) as (client, model):
        read_only(disk)
        result = client.submit(job(model, "ro-framed"), {"x": X})
        assert result.ok, result.errors
        assert result.output("x_out").data.tobytes() == X.tobytes()


# --- permission denied: a board folder this user may not write --------------------------------

DENIED = """
import json, sys
from pathlib import Path
import numpy as np
from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.agent.protocol import InputSpec
from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.transport import LocalTransport
from tests.agent.jobs import FAKE_ADAPTERS, echo_job

root = Path(sys.argv[1])
model = root / "echo.bin"
model.write_bytes(b"model" * 50)
x = np.zeros((4, 4), np.int8)
spec = lambda name: echo_job(model, name, inputs=(InputSpec("x", "NCHW", (4, 4), "int8"),))
client = AgentClient(LocalTransport(root / "board", python=sys.executable),
                     adapter_dirs=[FAKE_ADAPTERS])
assert client.submit(spec("first"), {"x": x}).ok
(root / "board" / "cache").chmod(0o500)  # the board's model cache: no longer writable by us
other = root / "echo-new.bin"
other.write_bytes(b"another model" * 50)
try:
    client.submit(echo_job(other, "denied", inputs=(InputSpec("x", "NCHW", (4, 4), "int8"),)),
                  {"x": x})
except NpuHilError as exc:
    print(json.dumps({"type": type(exc).__name__, "errno": exc.errno,
                      "name": exc.errno_name, "message": exc.message}))
"""


def test_a_folder_we_may_not_write_is_eacces(tmp_path: Path) -> None:
    """A model deployed into a board's cache folder this user may not write. Root is not
    refused by a folder's mode, so the run drops the capabilities that let it pass
    (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH): it is then held to the mode as any user is.
    (A second uid cannot run this machine's Python, which lives in root's home.)"""
    import json
    import shutil

    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("dropping CAP_DAC_OVERRIDE needs root and setpriv")
    done = subprocess.run(
        [
            "setpriv",
            "--bounding-set=-dac_override,-dac_read_search",
            sys.executable,
            "-c",
            DENIED,
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[3],
    )
    (tmp_path / "board" / "cache").chmod(0o700)
    assert done.returncode == 0, done.stderr
    error = json.loads(done.stdout.strip().splitlines()[-1])
    assert (error["type"], error["errno"], error["name"]) == ("TransportError", 13, "EACCES")
    assert "EACCES (Permission denied) on the board" in error["message"]


def test_a_folder_we_may_not_write_is_eacces_over_ssh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same over a real sshd whose logins run without CAP_DAC_OVERRIDE (a board where the
    login user may not write the model cache)."""
    import shutil

    from npu_hil_testkit.simfarm import sshd as sshd_module

    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("dropping CAP_DAC_OVERRIDE needs root and setpriv")
    real = sshd_module.require_openssh()
    wrapper = tmp_path / "sshd-without-dac-override"
    wrapper.write_text(
        f'#!/bin/sh\nexec setpriv --bounding-set=-dac_override,-dac_read_search {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setattr(sshd_module, "require_openssh", lambda: str(wrapper))
    process, sshd = sshd_module.start_sshd(tmp_path / "sshd")
    known = tmp_path / "known_hosts"
    known.write_text(sshd.known_hosts_line())
    model = tmp_path / "echo.bin"
    model.write_bytes(b"model" * 50)
    other = new_model(tmp_path)  # deployed once the cache is no longer writable
    x = np.zeros((4, 4), np.int8)
    small = (InputSpec("x", "NCHW", (4, 4), "int8"),)
    try:
        for options in SSH_MODES.values():
            board = tmp_path / f"board{len(options)}"
            with (
                SshTransport(
                    "127.0.0.1",
                    sshd.port,
                    sshd.user,
                    workdir=str(board),
                    key_file=sshd.client_key,
                    known_hosts=known,
                    user_known_hosts=None,
                    python=PY,
                    **options,  # type: ignore[arg-type]
                ) as transport,
                AgentClient(transport, adapter_dirs=[FAKE_ADAPTERS]) as client,
            ):
                assert client.submit(echo_job(model, "first", inputs=small), {"x": x}).ok
                (board / "cache").chmod(0o500)
                try:
                    with pytest.raises(TransportError) as caught:
                        client.submit(echo_job(other, "denied", inputs=small), {"x": x})
                finally:
                    (board / "cache").chmod(0o700)
                assert_named(caught.value, errno.EACCES)
    finally:
        sshd_module.stop_sshd(process)
