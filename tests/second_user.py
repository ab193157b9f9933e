"""A second local user for tests of trust: uid and gid 65534 through ``setpriv`` (as root), and
folders that user can reach (pytest's own tmp folders are private)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

NOBODY = 65534


def as_nobody(*argv: str, timeout: float = 60.0, stdin: str | None = None) -> None:
    """Run ``argv`` as the second user (no supplementary groups); skip the test without root
    or setpriv. Only programs every user may run: this environment's Python may live in a
    folder of root's alone (pyenv under /root)."""
    if shutil.which("setpriv") is None or os.geteuid() != 0:
        pytest.skip("needs root and setpriv to act as a second local user")
    cmd = ["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups", *argv]
    subprocess.run(cmd, check=True, timeout=timeout, input=stdin, text=True)


def write_as_nobody(path: Path, text: str) -> None:
    """``path`` written by the second user (with the system's shell, not this Python)."""
    as_nobody("sh", "-c", 'cat > "$1"', "sh", str(path), stdin=text)


@contextlib.contextmanager
def reachable_folder(prefix: str, mode: int = 0o755) -> Iterator[Path]:
    """A fresh folder with ``mode`` (0o755: the second user may enter it; 0o1777: write in it,
    as in /tmp), removed after."""
    made = Path(tempfile.mkdtemp(prefix=prefix))
    made.chmod(mode)
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)
