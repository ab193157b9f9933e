"""The board's OS errors by name: a full or read-only board disk said as such (``ENOSPC (No space
left on device)``), from an errno or read back from the C library's message in the board's text,
so it is never reported as a short transfer or a missing file."""

from __future__ import annotations

import errno as _errno
import os
import re

from npu_hil.harness.errors import TransportError

BOARD_ERRNOS: tuple[int, ...] = tuple(
    int(getattr(_errno, name))
    for name in (
        "ENOSPC",
        "EDQUOT",
        "EROFS",
        "EACCES",
        "EPERM",
        "EFBIG",
        "EIO",
        "EMFILE",
        "ENFILE",
        "ENAMETOOLONG",
        "ENOTDIR",
        "ENOENT",
    )
    if hasattr(_errno, name)
)
"""The errors a board's filesystem gives a transfer, most telling first (a missing file is
often only the consequence of one of the others)."""
_BRACKETED = re.compile(r"\[Errno (\d+)\]")


def describe_errno(number: int) -> str:
    """``ENOSPC (No space left on device)``."""
    return f"{_errno.errorcode.get(number, f'errno {number}')} ({os.strerror(number)})"


def errno_in_text(text: str | bytes) -> int | None:
    """The errno a board's error text names: Python's ``[Errno N]``, else the first of
    :data:`BOARD_ERRNOS` whose C library message appears in it; None when none does."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    found = _BRACKETED.search(text)
    if found is not None:
        return int(found.group(1))
    lowered = text.lower()
    for number in BOARD_ERRNOS:
        if os.strerror(number).lower() in lowered:
            return number
    return None


def board_os_error(what: str, number: int, detail: str = "") -> TransportError:
    """A TransportError for an OS error on the board, named and numbered."""
    extra = f" ({detail})" if detail else ""
    return TransportError(f"{what}: {describe_errno(number)} on the board{extra}", errno=number)
