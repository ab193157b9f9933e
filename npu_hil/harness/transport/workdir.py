"""The board workdir, checked before anything is deployed into it (docs/runtime/agent.md): made
private when missing, refused unless ours alone, by the rule of
:func:`npu_hil.harness.board.folders.folder_problem`."""

from __future__ import annotations

import shlex
import stat

from npu_hil.harness.board.folders import folder_problem
from npu_hil.harness.errors import TransportError, UnsafeFolderError

_KINDS = {
    "d": stat.S_IFDIR,
    "l": stat.S_IFLNK,
    "-": stat.S_IFREG,
    "p": stat.S_IFIFO,
    "s": stat.S_IFSOCK,
    "c": stat.S_IFCHR,
    "b": stat.S_IFBLK,
}
_BITS = (0o400, 0o200, 0o100, 0o040, 0o020, 0o010, 0o004, 0o002, 0o001)


def workdir_probe(workdir: str) -> str:
    """The shell command: make the workdir (0700, parents as the umask says) when missing, then
    print our uid and the workdir's own ``ls -ldn`` line (a symlink shown as one)."""
    quoted = shlex.quote(workdir)
    return f"mkdir -p -m 700 -- {quoted} 2>/dev/null; id -u && ls -ldn -- {quoted}"


def mode_from_ls(field: str) -> int:
    """The ``st_mode`` an ``ls -l`` mode field (``drwxrwxrwt``) stands for; ValueError when it
    is not one."""
    if len(field) < 10 or field[0] not in _KINDS:
        raise ValueError(f"{field!r} is not an ls -l mode field")
    mode = _KINDS[field[0]]
    for char, bit in zip(field[1:10], _BITS, strict=True):
        if char in "rwxst":
            mode |= bit
        elif char not in "-ST":
            raise ValueError(f"{field!r} is not an ls -l mode field")
    mode |= stat.S_ISUID if field[3] in "sS" else 0
    mode |= stat.S_ISGID if field[6] in "sS" else 0
    mode |= stat.S_ISVTX if field[9] in "tT" else 0
    return mode


def check_workdir_probe(workdir: str, output: bytes, where: str) -> None:
    """Judge what :func:`workdir_probe` printed: UnsafeFolderError naming owner and mode when
    the workdir is not ours alone, TransportError when the answer cannot be read."""
    lines = [line for line in output.decode("utf-8", "replace").splitlines() if line.strip()]
    try:
        euid = int(lines[-2].strip())
        fields = lines[-1].split()
        mode, owner = mode_from_ls(fields[0]), int(fields[2])
    except (IndexError, ValueError):
        raise TransportError(
            f"{where}: cannot tell who owns the workdir {workdir} (the board answered "
            f"{output[-300:]!r})"
        ) from None
    problem = folder_problem(workdir, mode, owner, euid)
    if problem is not None:
        raise UnsafeFolderError(f"{where}: board workdir {problem}")
