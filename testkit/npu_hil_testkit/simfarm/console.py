"""Serial consoles of simulated boards: a shell on a pseudo-terminal (socat), optionally served
over the network as RFC 2217 by ser2net.

The far side of each console is a fake board: a boot log, an optional login, then a shell with
a plain ``$ `` prompt; when the shell dies the board "reboots" (prints a new boot log), as a real
board's console does after a reset.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from npu_hil_testkit.simfarm.errors import MissingToolError
from npu_hil_testkit.simfarm.inventory import harness_root
from npu_hil_testkit.simfarm.procs import (
    is_listening,
    spawn,
    start_listener,
    stop_popen,
    wait_until,
)

__all__ = [
    "BOARD_SCRIPT",
    "Ser2net",
    "SerialBoard",
    "require_ser2net",
    "require_socat",
    "start_ser2net",
    "start_serial_board",
    "stop_serial_board",
]

START_TIMEOUT_S = 10.0

# The boot limit keeps a board whose pty went away from looping. The shells run without job
# control (+m): a job-control shell would take the terminal's foreground group with it when it
# dies, and the next one would stop on SIGTTIN; the trap lets ^C reach the running command
# without ending the board.
BOARD_SCRIPT = r"""
trap ':' INT
boots=0
while [ $boots -lt "${BOARD_BOOTS:-5}" ]; do
  boots=$((boots+1))
  printf '[    0.000000] Booting Linux on physical CPU 0x0 (boot %d)\r\n' $boots
  printf '[    0.120000] npu-fake: NPU ready\r\n'
  if [ -n "$BOARD_USER" ]; then
    while :; do
      printf 'fakeboard login: '
      read -r u || exit 0
      printf 'Password: '
      stty -echo; read -r p || exit 0; stty echo; printf '\r\n'
      [ "$u" = "$BOARD_USER" ] && [ "$p" = "$BOARD_PASSWORD" ] && break
      printf 'Login incorrect\r\n'
    done
  fi
  /bin/sh +m -i
done
"""

# Variables of the caller's environment that would change the console shell's prompt or
# startup: the transport expects the plain prompt the script sets.
_SHELL_STARTUP = ("ENV", "PROMPT_COMMAND", "BASH_ENV", "PS2", "PS4")


def require_socat() -> str:
    socat = shutil.which("socat")
    if socat is None:
        raise MissingToolError("socat", "socat")
    return socat


def require_ser2net() -> str:
    ser2net = shutil.which("ser2net") or "/usr/sbin/ser2net"
    if not os.access(ser2net, os.X_OK):
        raise MissingToolError("ser2net", "ser2net")
    return ser2net


@dataclass(frozen=True)
class SerialBoard:
    """A socat-served console: ``tty`` is the device path the transport opens."""

    tty: Path
    root: Path
    process: subprocess.Popen[bytes]

    @property
    def log(self) -> Path:
        return self.root / "console.log"


def start_serial_board(
    root: Path,
    *,
    user: str = "",
    password: str = "",
    pythonpath: str | os.PathLike[str] | None = None,
    boots: int = 5,
) -> SerialBoard:
    """Start a fake board's console in ``root``: the device is the ``root/tty`` symlink to the
    pty. With ``user`` the board asks for a login first. ``pythonpath`` (default: the folder
    holding the harness) is the shell's ``PYTHONPATH``, so the sim adapter imports there as on an
    SSH board. ``boots`` bounds the reboots."""
    socat = require_socat()
    root.mkdir(parents=True, exist_ok=True)
    script = root / "board.sh"
    script.write_text(BOARD_SCRIPT, encoding="utf-8")
    tty = root / "tty"
    tty.unlink(missing_ok=True)  # a stale link from an earlier console would look ready
    env = {k: v for k, v in os.environ.items() if k not in _SHELL_STARTUP}
    env.update(
        BOARD_USER=user,
        BOARD_PASSWORD=password,
        BOARD_BOOTS=str(boots),
        PS1="$ ",
        PYTHONPATH=str(pythonpath if pythonpath is not None else harness_root()),
    )
    log = root / "console.log"
    process = spawn(
        [
            socat,
            f"PTY,link={tty},raw,echo=0",
            f"EXEC:/bin/sh {script},pty,stderr,setsid,ctty,sigint,sane",
        ],
        log=log,
        cwd=root,
        env=env,
    )
    wait_until(tty.exists, process, timeout=START_TIMEOUT_S, what=f"socat console {tty}", log=log)
    return SerialBoard(tty, root, process)


def stop_serial_board(process: subprocess.Popen[bytes], timeout: float = 5.0) -> None:
    """Stop a console (or ser2net): socat closes the pty master on exit, which hangs up the
    board's session (SIGHUP)."""
    stop_popen(process, timeout)


@dataclass(frozen=True)
class Ser2net:
    """ser2net serving one console as RFC 2217 on 127.0.0.1:``port``."""

    process: subprocess.Popen[bytes]
    port: int
    config: Path

    @property
    def url(self) -> str:
        """The URL as a user writes it (no pyserial options: the transport adds what it needs)."""
        return f"rfc2217://127.0.0.1:{self.port}"


def start_ser2net(
    tty: Path,
    root: Path,
    *,
    port: int | None = None,
    baudrate: int = 115200,
    attempts: int = 3,
) -> Ser2net:
    """Serve the console at ``tty`` as RFC 2217 on 127.0.0.1 (config, pid file and log in
    ``root``) and wait until it listens. Without a ``port`` a free one is taken, and another if
    a different process took it first."""
    ser2net = require_ser2net()
    root.mkdir(parents=True, exist_ok=True)
    config = root / "ser2net.yaml"
    log = root / "ser2net.log"

    def argv_for(chosen: int) -> list[str]:
        config.write_text(
            "connection: &board\n"
            f"  accepter: telnet(rfc2217),tcp,127.0.0.1,{chosen}\n"
            "  enable: on\n"
            f"  connector: serialdev,{tty},{baudrate}n81,local\n",
            encoding="utf-8",
        )
        return [ser2net, "-n", "-c", str(config), "-P", str(root / "ser2net.pid")]

    process, chosen = start_listener(
        argv_for,
        is_listening,
        what="ser2net",
        log=log,
        port=port,
        attempts=attempts,
        timeout=START_TIMEOUT_S,
    )
    return Ser2net(process, chosen, config)
