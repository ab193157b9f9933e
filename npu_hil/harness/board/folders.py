"""Folders of our own: the rule for a folder the agent runs code from or writes into."""

from __future__ import annotations

import os
import stat

from .wire import JOBS_FOLDER


class UnsafeFolder(Exception):
    """A folder the agent would run code from or write into that another user could change."""


def folder_problem(path: str, st_mode: int, st_uid: int, euid: int) -> str | None:
    """Why ``path`` (its ``lstat`` mode and owner) is not a folder this user alone controls, or
    None when it is one: it must be a real folder (not a symlink), owned by ``euid`` and writable
    by nobody else. The host applies the same rule to its own folders and to a board's workdir,
    so there is one definition of a safe folder. The message names the owner and the mode."""
    owner = f"owner uid {st_uid}, mode {stat.S_IMODE(st_mode):04o}"
    if stat.S_ISLNK(st_mode):
        return f"{path} is a symbolic link ({owner}); expected a folder of uid {euid}'s own"
    if not stat.S_ISDIR(st_mode):
        return f"{path} is not a folder ({owner})"
    if st_uid != euid:
        return (
            f"{path} is owned by another user ({owner}), not by uid {euid}: "
            "they could change what runs from it; remove it or use another folder"
        )
    if st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (
            f"{path} is writable by group or others ({owner}): another user could change "
            "what runs from it; chmod 700 it or use another folder"
        )
    return None


def check_folder(path: str) -> None:
    """UnsafeFolder unless ``path`` is a folder of this user's own (see :func:`folder_problem`)."""
    info = os.lstat(path)
    problem = folder_problem(path, info.st_mode, info.st_uid, os.geteuid())
    if problem is not None:
        raise UnsafeFolder(problem)


def check_workdir(path: str) -> None:
    """The agent's working directory (the board workdir) and the ``jobs/`` folder in it, when
    there is one, must be this user's own: the host deploys code there and reads results back."""
    check_folder(path)
    jobs = os.path.join(path, JOBS_FOLDER)
    if os.path.lexists(jobs):
        check_folder(jobs)


def job_folder(value: object) -> str | None:
    """``value`` when it is exactly ``jobs/<name>`` of the workdir (a name, not ``.`` or ``..``,
    no NUL), else None: the one shape a request may name a job's folder by, so it can name
    nothing else on the board."""
    if not isinstance(value, str) or "\x00" in value:
        return None
    parts = value.split("/")
    if len(parts) == 2 and parts[0] == JOBS_FOLDER and parts[1] not in ("", ".", ".."):
        return value
    return None
