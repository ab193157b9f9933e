"""The emulated board's ``python``: a shell script that runs the root's interpreter under
``qemu-user``, with no binfmt registration and no chroot.

``qemu-aarch64 -L ROOT`` looks every absolute path up in ROOT first and falls back to this
machine's path when ROOT has no such file. So the root's ``/usr/lib/python3.11``, its libraries and
the files a vendor's Python layer probes (``/proc/device-tree/compatible``, ``/dev/dri/...``) are
the root's, while a board workdir (which only exists on this machine) is the host's. A file that
does not yet exist is created on the host side too, which is why the bytecode cache is a host
folder of its own (``PYTHONPYCACHEPREFIX``) rather than ``__pycache__`` next to the sources.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

__all__ = ["write_launcher"]


def write_launcher(
    path: Path, *, root: Path, qemu: str, pycache: Path, cpu: str | None = None
) -> Path:
    """Write an executable ``path`` that runs ``root``'s ``python3`` with the caller's arguments.

    The host's ``PYTHONPATH`` is dropped: it names trees of this machine the board's interpreter
    must not import from. ``PYTHONHOME=/usr`` makes the interpreter's own paths the board's
    (``/usr/lib/python3.11``, which qemu finds in the root) instead of paths derived from where
    the root lies on this machine, so module paths, tracebacks and the bytecode cache read as on a
    board, and are the same in every board made from one root. ``cpu`` is qemu's ``-cpu`` model
    (e.g. ``cortex-a76``).
    """
    cpu_args = f" -cpu {shlex.quote(cpu)}" if cpu else ""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(
        "#!/bin/sh\n"
        "# An emulated board's Python (written by npu-hil): the root's python3 under qemu-user.\n"
        "unset PYTHONPATH\n"
        "PYTHONHOME=/usr\n"
        "export PYTHONHOME\n"
        f"PYTHONPYCACHEPREFIX={shlex.quote(str(pycache))}\n"
        "export PYTHONPYCACHEPREFIX\n"
        f"exec {shlex.quote(qemu)}{cpu_args} -L {shlex.quote(str(root))} "
        f'{shlex.quote(str(root / "usr/bin/python3"))} "$@"\n',
        encoding="utf-8",
    )
    os.chmod(temporary, 0o755)
    temporary.replace(path)
    return path
