"""``npu-hil`` run in the test's own process, answering like ``subprocess.run``.

Most CLI tests are about what a command prints and its exit code, not about the process: run
in-process they skip a Python start and the imports (a second or more each). The tests that are
about the process (a real exit status, a signal, a hang, the installed entry point) keep using
``subprocess``.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path

from npu_hil.harness.cli.main import main


class _Stream(io.TextIOWrapper):
    """A text stream with a ``buffer``, as ``sys.stdout`` has (binary output goes there)."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", errors="replace", write_through=True)

    def text(self) -> str:
        self.flush()
        raw = self.buffer
        assert isinstance(raw, io.BytesIO)
        return raw.getvalue().decode("utf-8", errors="replace")


@contextlib.contextmanager
def _environment(cwd: Path | None, env: Mapping[str, str] | None) -> Iterator[None]:
    old_cwd, old_env = Path.cwd(), dict(os.environ)
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(old_cwd)
        os.environ.clear()
        os.environ.update(old_env)


def run_cli(
    *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``npu-hil ARGS`` in this process: its exit code, stdout and stderr. An exception that
    escapes ``main`` is printed as Python would print it, with exit code 1, so a test that
    looks for a traceback still sees one."""
    out, err = _Stream(), _Stream()
    with _environment(cwd, env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's usage errors and --help
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if exc.code is not None and not isinstance(exc.code, int):
                print(exc.code, file=sys.stderr)
        except Exception:
            traceback.print_exc()
            code = 1
    return subprocess.CompletedProcess(["npu-hil", *args], code, out.text(), err.text())
