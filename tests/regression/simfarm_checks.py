"""What the regression-over-links tests check around a run: the tools a link needs, and that a
finished run left no process of its farm behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from npu_hil_testkit.simfarm import MissingToolError
from npu_hil_testkit.simfarm.console import require_socat
from npu_hil_testkit.simfarm.sshd import require_openssh


def require_link(kind: str) -> None:
    try:
        require_openssh() if kind == "ssh" else require_socat()
    except MissingToolError as exc:
        pytest.skip(exc.message)


def leftovers(tmp: Path) -> list[str]:
    """Processes whose command line still names the run's private temporary folder."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(tmp) in cmdline and "pytest" not in cmdline:
            found.append(f"{proc.name}: {cmdline.strip()}")
    return found
