"""A real OpenSSH sshd on 127.0.0.1: its own host key, one client key, key logins only.

Who can log in: sshd started by an unprivileged user cannot switch users, so it serves exactly
that user and needs no privilege separation directory; that is how a farm should run. Started by
root it runs as root (privilege separation then requires ``/run/sshd``, created here) and lets
root in by key only (``PermitRootLogin prohibit-password``). Either way ``AllowUsers`` names the
one user and password and keyboard-interactive logins are off.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from npu_hil_testkit.simfarm.errors import MissingToolError, SimFarmError
from npu_hil_testkit.simfarm.procs import start_listener

__all__ = [
    "Sshd",
    "fingerprint",
    "keygen",
    "login_user",
    "require_openssh",
    "start_sshd",
    "stop_sshd",
]

SFTP_SERVERS = (
    "/usr/lib/openssh/sftp-server",
    "/usr/libexec/openssh/sftp-server",
    "/usr/libexec/sftp-server",
)
PRIVSEP_DIR = Path("/run/sshd")
START_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Sshd:
    """A running sshd and the material to reach it."""

    port: int
    user: str
    host_key: Path  # private ed25519 host key
    host_pub: str  # "ssh-ed25519 AAAA..." line
    client_key: Path  # private key in authorized_keys
    root: Path
    host: str = "127.0.0.1"

    def known_hosts_line(self) -> str:
        """The line a known_hosts file needs for strict host key checking of this sshd."""
        return f"[{self.host}]:{self.port} {self.host_pub}\n"

    @property
    def log(self) -> Path:
        return self.root / "sshd.log"


def _sshd_binary() -> str | None:
    found = shutil.which("sshd") or "/usr/sbin/sshd"
    return found if os.access(found, os.X_OK) else None


def require_openssh() -> str:
    """The path of sshd (absolute: sshd re-executes itself and refuses a relative one);
    MissingToolError when sshd or ssh-keygen is missing."""
    sshd = _sshd_binary()
    if sshd is None:
        raise MissingToolError("OpenSSH sshd", "openssh-server")
    if shutil.which("ssh-keygen") is None:
        raise MissingToolError("ssh-keygen", "openssh-client")
    return sshd


def keygen(path: Path) -> None:
    """A new ed25519 key pair without a passphrase at ``path`` and ``path.pub``."""
    try:
        subprocess.run(
            [
                "ssh-keygen",
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                "npu-hil-simfarm",
                "-f",
                str(path),
            ],
            check=True,
            timeout=30,
            capture_output=True,
        )
    except FileNotFoundError:
        raise MissingToolError("ssh-keygen", "openssh-client") from None
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        raise SimFarmError(f"ssh-keygen could not write {path}: {exc}") from None


def fingerprint(public_key_file: Path) -> str:
    """``SHA256:...`` as ``ssh-keygen -l`` prints it."""
    out = subprocess.run(
        ["ssh-keygen", "-lf", str(public_key_file)],
        check=True,
        timeout=30,
        capture_output=True,
        text=True,
    )
    return out.stdout.split()[1]


def login_user() -> str:
    """The account sshd lets in: the one it runs as (from the password database, not ``$USER``,
    which sudo and su may leave pointing at someone else)."""
    return pwd.getpwuid(os.geteuid()).pw_name


def _sftp_server() -> str:
    return next((p for p in SFTP_SERVERS if os.path.exists(p)), "internal-sftp")


def _setenv_lines(env: Mapping[str, str]) -> str:
    lines = []
    for name, value in env.items():
        if not name.isidentifier() or any(c in value for c in '"\n\r'):
            raise SimFarmError(f"sshd SetEnv {name}={value!r}: unusable name or value")
        lines.append(f'SetEnv "{name}={value}"\n')
    return "".join(lines)


def _write_config(
    root: Path, port: int, host_key: Path, authorized: Path, user: str, env: Mapping[str, str]
) -> Path:
    config = root / "sshd_config"
    config.write_text(
        f"ListenAddress 127.0.0.1\nPort {port}\nHostKey {host_key}\n"
        f"AuthorizedKeysFile {authorized}\nPidFile {root / 'sshd.pid'}\n"
        # StrictModes would refuse keys under a shared temporary folder.
        "StrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PubkeyAuthentication yes\nPermitRootLogin prohibit-password\n"
        f"AllowUsers {user}\n"
        f"Subsystem sftp {_sftp_server()}\n"
        # Many boards and pytest workers connect at once through this one daemon.
        "MaxStartups 100\nMaxSessions 100\nLogLevel ERROR\n" + _setenv_lines(env),
        encoding="utf-8",
    )
    return config


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.settimeout(2)
            return sock.recv(4).startswith(b"SSH-")
    except OSError:
        return False


def start_sshd(
    root: Path,
    host_key: Path | None = None,
    *,
    port: int | None = None,
    env: Mapping[str, str] | None = None,
    attempts: int = 3,
) -> tuple[subprocess.Popen[bytes], Sshd]:
    """Start sshd in ``root`` and wait until it greets. Keys are created in ``root`` unless they
    exist (or ``host_key`` is given), so a restarted farm keeps its host key. ``env`` is set in
    every login (``SetEnv``). Without a ``port`` a free one is taken, and another one if a
    different process took it first (up to ``attempts``). The process runs in its own session
    and outlives the caller; stop it with :func:`stop_sshd` or by its record."""
    sshd = require_openssh()
    root.mkdir(parents=True, exist_ok=True)
    if host_key is None:
        host_key = root / "host_ed25519"
        if not host_key.exists():
            keygen(host_key)
    client_key = root / "client_ed25519"
    if not client_key.exists():
        keygen(client_key)
    authorized = root / "authorized_keys"
    authorized.write_text(Path(f"{client_key}.pub").read_text(encoding="utf-8"), encoding="utf-8")
    if os.geteuid() == 0:
        PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
    user = login_user()
    log = root / "sshd.log"

    def argv_for(chosen: int) -> list[str]:
        config = _write_config(root, chosen, host_key, authorized, user, env or {})
        # The log goes to a file, not a pipe: an unread pipe could fill and stall sshd.
        return [sshd, "-D", "-e", "-f", str(config)]

    process, chosen = start_listener(
        argv_for,
        _answers,
        what="sshd",
        log=log,
        port=port,
        attempts=attempts,
        timeout=START_TIMEOUT_S,
    )
    info = Sshd(
        port=chosen,
        user=user,
        host_key=host_key,
        host_pub=" ".join(Path(f"{host_key}.pub").read_text(encoding="utf-8").split()[:2]),
        client_key=client_key,
        root=root,
    )
    return process, info


def stop_sshd(process: subprocess.Popen[bytes], timeout: float = 5.0) -> None:
    """Stop the listener. Connections already open keep their own sshd process (in a session
    of its own) until the client closes them, as with any sshd."""
    process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout)
