"""The simulated boards' Python: the host's interpreter, with the harness importable.

A simulated board's NPU runtime is the ``sim`` adapter, which imports the harness. A login over
SSH or a serial console starts with a clean environment, so the board's ``python`` is a small
wrapper script that puts the checkout (the folder holding ``npu_hil/harness/`` and
``npu_hil/targets/``) on
``PYTHONPATH`` and runs this interpreter.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import npu_hil

__all__ = ["harness_root", "write_python_wrapper"]


def harness_root() -> Path:
    """The folder that holds the ``npu_hil`` package (a checkout, or site-packages when
    installed)."""
    return Path(npu_hil.__file__).resolve().parents[1]


def write_python_wrapper(
    path: Path, *, python: str | None = None, env: dict[str, str] | None = None
) -> Path:
    """Write an executable ``path`` that runs ``python`` (default: this interpreter) with the
    harness on ``PYTHONPATH``, ahead of whatever the caller's environment adds, and ``env``
    exported (a simulated board's own files, such as its kernel log)."""
    interpreter = python or sys.executable
    root = harness_root()
    path.parent.mkdir(parents=True, exist_ok=True)
    exports = "".join(f"{k}={shlex.quote(v)}\nexport {k}\n" for k, v in sorted((env or {}).items()))
    path.write_text(
        "#!/bin/sh\n"
        "# A simulated board's Python: the sim adapter imports the harness from here.\n"
        f"PYTHONPATH={shlex.quote(str(root))}${{PYTHONPATH:+:$PYTHONPATH}}\n"
        "export PYTHONPATH\n" + exports + f'exec {shlex.quote(interpreter)} "$@"\n',
        encoding="utf-8",
    )
    os.chmod(path, 0o755)
    return path
