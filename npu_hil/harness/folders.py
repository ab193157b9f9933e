"""Folders of this user's own, where the harness runs code from and writes into: created private
(0700), and an existing one used only when it is a real folder, ours and writable by nobody else
(another user's folder would let them run their code as us). The rule is the agent's own,
:func:`npu_hil.harness.board.folders.folder_problem`, so host and board agree on it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from npu_hil.harness.board.folders import folder_problem
from npu_hil.harness.errors import UnsafeFolderError

__all__ = ["check_private_dir", "default_workdir", "file_problem", "private_dir", "user_folder"]


def check_private_dir(path: str | os.PathLike[str], *, check_above: bool = True) -> Path:
    """``path`` as a Path when it is a folder of this user's own; UnsafeFolderError otherwise
    (FileNotFoundError when it does not exist). A folder above it that anyone may rename
    entries of (writable by group or others without the sticky bit, unlike ``/tmp``) is
    refused too (unless ``check_above`` is False): whoever can write there can swap the folder for
    theirs."""
    folder = Path(path)
    info = os.lstat(folder)
    problem = folder_problem(str(folder), info.st_mode, info.st_uid, os.geteuid())
    if problem is not None:
        raise UnsafeFolderError(problem)
    if not check_above:
        return folder
    for parent in Path(os.path.abspath(folder)).parents:
        above = os.stat(parent)
        if above.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not above.st_mode & stat.S_ISVTX:
            raise UnsafeFolderError(
                f"{folder}: the folder above it, {parent}, is writable by group or others "
                f"without the sticky bit (owner uid {above.st_uid}, mode "
                f"{stat.S_IMODE(above.st_mode):04o}): another user could replace it"
            )
    return folder


def file_problem(path: str | os.PathLike[str], info: os.stat_result) -> str | None:
    """Why a file of state (``info`` its lstat) is not to be believed, or None: it is another
    user's or others may write it, so whoever that is decides what it says."""
    if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (
            f"not trusted: {path} is owned by uid {info.st_uid} with mode "
            f"{stat.S_IMODE(info.st_mode):04o} (expected uid {os.geteuid()}, writable by "
            "no one else)"
        )
    return None


def private_dir(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` and its missing parents with mode 0700 and return it, after checking it is
    a folder of this user's own (:func:`check_private_dir`) whether it was just made or was
    already there."""
    folder = Path(path)
    missing: list[Path] = []
    probe = Path(os.path.abspath(folder))
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for component in reversed(missing):
        # Made meanwhile by someone: the check below says whether it is ours.
        with contextlib.suppress(FileExistsError):
            os.mkdir(component, 0o700)
    return check_private_dir(folder)


def user_folder() -> Path:
    """This user's own base folder for the harness's state: ``$XDG_RUNTIME_DIR`` when it is set
    and is ours and private (as a login session's is), else ``$XDG_CACHE_HOME`` or
    ``~/.cache``. Never a predictable name in a folder every user can write (``/tmp``)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        try:
            info = os.lstat(runtime)
        except OSError:
            info = None
        if (
            info is not None
            and stat.S_ISDIR(info.st_mode)
            and info.st_uid == os.geteuid()
            and not info.st_mode & 0o077
        ):
            return Path(runtime)
    cache = os.environ.get("XDG_CACHE_HOME")
    if cache and os.path.isabs(cache):
        return Path(cache)
    return Path.home() / ".cache"


def default_workdir() -> Path:
    """The farm's default workdir, ``<user folder>/npu-hil``: shared by every process of one
    user (pytest-xdist workers find the same lock files) and by no other user."""
    return user_folder() / "npu-hil"
