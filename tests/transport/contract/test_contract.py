"""The Transport protocol, held to the same tests on every transport (``KINDS`` of the
conftest: local, SSH to a real sshd, serial on a pty and through ser2net): commands, stdin,
timeouts that kill, files that arrive whole and checked, confinement to the workdir, typed
errors, and resident agents.

What only one transport has (SSH host keys and reconnects, a serial console's login, noise and
reboots) stays in that transport's own tests.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np
import pytest

from npu_hil.harness.agent.client import AgentClient
from npu_hil.harness.errors import TransportError
from npu_hil.harness.transport import CompletedRun, RemotePathError, Transport, remote_path
from tests.agent.jobs import FAKE_ADAPTERS, X, echo_job
from tests.transport.contract.conftest import PY

# pyserial 3.5's rfc2217 client (the ser2net kind) still calls Thread.setDaemon/setName.
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore:set(Daemon|Name).. is deprecated:DeprecationWarning"),
]

BAD_PATHS = ["../x", "/etc/passwd", "a/../../x", "", ".", "a\\b", "a\\..\\b", "a\x00b"]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def leftovers(transport: Transport) -> list[str]:
    """Temporary files a transfer left in the workdir."""
    return sorted(p.name for p in Path(transport.workdir).rglob("*") if p.name.endswith(".tmp"))


# --- commands ------------------------------------------------------------------------------------


def test_it_is_a_transport(transport: Transport) -> None:
    assert isinstance(transport, Transport)
    assert transport.python == PY
    assert Path(transport.workdir).is_absolute()
    assert not transport.exists("nothing")  # connected (SSH creates the workdir then)
    assert Path(transport.workdir).is_dir()


def test_run_exit_status_output_and_workdir(transport: Transport) -> None:
    done = transport.run(
        [PY, "-c", "import os,sys; print(os.getcwd()); sys.stderr.write('e'); sys.exit(3)"],
        timeout=30,
    )
    assert isinstance(done, CompletedRun)
    assert done.returncode == 3
    assert done.stdout.decode().strip() == transport.workdir
    assert done.stderr == b"e"
    assert 0 < done.duration < 30


def test_arguments_arrive_verbatim(transport: Transport, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    odd = ["printf", "%s|", "a b", "$HOME", "'q'", "; rm -rf /", f"$(touch {marker})", "*"]
    done = transport.run(odd, timeout=10)
    assert done.stdout == f"a b|$HOME|'q'|; rm -rf /|$(touch {marker})|*|".encode()
    assert not marker.exists()


def test_run_with_binary_stdin(transport: Transport) -> None:
    data = bytes(range(256)) * 256
    done = transport.run(
        [PY, "-c", "import sys; d = sys.stdin.buffer.read(); sys.stdout.buffer.write(d[::-1])"],
        timeout=30,
        stdin=data,
    )
    assert done.returncode == 0 and done.stdout == data[::-1]


def test_a_timeout_kills_the_command_and_the_transport_goes_on(
    transport: Transport, tmp_path: Path
) -> None:
    marker = tmp_path / "survived"
    code = f"import time; time.sleep(2); open({str(marker)!r}, 'w').close()"
    started = time.monotonic()
    with pytest.raises(TransportError):
        transport.run([PY, "-c", code], timeout=0.5)
    assert time.monotonic() - started < 15
    time.sleep(2.5)
    assert not marker.exists()
    assert transport.run(["true"], timeout=10).returncode == 0


def test_a_missing_program_is_an_exit_status_or_a_transport_error(transport: Transport) -> None:
    try:
        done = transport.run(["/nonexistent/program"], timeout=10)
    except TransportError as exc:
        assert "/nonexistent/program" in exc.message or "cannot start" in exc.message
    else:
        assert done.returncode == 127  # a shell's "not found"


# --- files ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 100_000])
def test_put_get_identical_bytes(transport: Transport, tmp_path: Path, size: int) -> None:
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    source = tmp_path / "src.bin"
    source.write_bytes(data)
    transport.put(source, "a/b/c.bin")
    landed = (Path(transport.workdir) / "a/b/c.bin").read_bytes()
    assert (len(landed), sha256(landed)) == (size, sha256(data))
    transport.get("a/b/c.bin", tmp_path / "back" / "c.bin")
    back = (tmp_path / "back" / "c.bin").read_bytes()
    assert (len(back), sha256(back)) == (size, sha256(data))
    assert sorted(p.name for p in (Path(transport.workdir) / "a/b").iterdir()) == ["c.bin"]


def test_put_replaces_the_whole_file(transport: Transport, tmp_path: Path) -> None:
    (tmp_path / "long").write_bytes(b"L" * 50_000)
    (tmp_path / "short").write_bytes(b"short")
    transport.put(tmp_path / "long", "f")
    transport.put(tmp_path / "short", "f")
    assert (Path(transport.workdir) / "f").read_bytes() == b"short"
    assert leftovers(transport) == []


def test_missing_files_are_transport_errors(transport: Transport, tmp_path: Path) -> None:
    with pytest.raises(TransportError, match="no such file"):
        transport.get("nothing.bin", tmp_path / "x")
    assert not (tmp_path / "x").exists()
    with pytest.raises(TransportError, match="put"):
        transport.put(tmp_path / "nothing.bin", "x.bin")
    assert not transport.exists("x.bin")


def test_exists_and_cleanup(transport: Transport, tmp_path: Path) -> None:
    source = tmp_path / "f"
    source.write_bytes(b"x")
    transport.put(source, "jobs/a/b/f")
    transport.put(source, "single")
    assert transport.exists("jobs/a/b/f") and transport.exists("jobs/a")
    assert not transport.exists("jobs/nope")
    transport.cleanup("jobs/a")
    transport.cleanup("single")
    transport.cleanup("never-was")  # missing is fine
    assert not transport.exists("jobs/a") and not transport.exists("single")
    assert transport.exists("jobs")


def test_remote_paths_are_confined(transport: Transport, tmp_path: Path) -> None:
    source = tmp_path / "f"
    source.write_bytes(b"x")
    for bad in BAD_PATHS:
        with pytest.raises(RemotePathError):
            remote_path(bad)
        for call in (
            lambda bad=bad: transport.put(source, bad),
            lambda bad=bad: transport.get(bad, tmp_path / "g"),
            lambda bad=bad: transport.exists(bad),
            lambda bad=bad: transport.cleanup(bad),
        ):
            with pytest.raises(RemotePathError):
                call()
    assert not (tmp_path / "x").exists() and not (tmp_path / "g").exists()


def test_names_with_shell_metacharacters_are_harmless(transport: Transport, tmp_path: Path) -> None:
    canary = tmp_path / "canary"  # what the injected commands would remove
    canary.mkdir()
    (canary / "keep").write_bytes(b"1")
    marker = tmp_path / "marker"  # what they would create
    (tmp_path / "f").write_bytes(b"payload")
    names = [
        f"x; rm -rf {canary}; touch {marker}",
        f"$(rm -rf {canary})",
        f"`touch {marker}`",
        f"'; rm -rf {canary}; '",
        f'"; rm -rf {canary}; "',
        "a b'c\"d",
        "-rf",
        "*",
        "$HOME",
    ]
    for name in names:
        transport.put(tmp_path / "f", name)
        assert (Path(transport.workdir) / name).read_bytes() == b"payload"
        assert transport.exists(name)
        transport.get(name, tmp_path / "g")
        assert (tmp_path / "g").read_bytes() == b"payload"
        transport.cleanup(name)
        assert not transport.exists(name)
    assert not marker.exists()
    assert (canary / "keep").read_bytes() == b"1"
    assert leftovers(transport) == []


# --- resident and one-shot agents ------------------------------------------------------------


def test_an_agent_session_serves_jobs_and_one_shot_runs_too(
    transport: Transport, tmp_path: Path
) -> None:
    model = tmp_path / "echo.bin"
    model.write_bytes(b"contract model" * 40)
    with AgentClient(transport, adapter_dirs=[FAKE_ADAPTERS], margin_s=5.0) as client:
        client.ping()
        assert client.agent_pid is not None
        first = client.submit(echo_job(model, "first"), {"x": X})
        assert first.ok, first
        again = client.submit(echo_job(model, "again"), {"x": X})
        assert again.ok and again.timings.model_cached
    with AgentClient(transport, adapter_dirs=[FAKE_ADAPTERS], resident=False) as client:
        assert client.submit(echo_job(model, "one-shot"), {"x": X}).ok
    assert list((Path(transport.workdir) / "jobs").glob("*")) == []
