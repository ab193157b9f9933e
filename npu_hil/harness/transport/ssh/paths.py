"""Keep remote paths inside the workdir on the board, symlinks followed, walked over SFTP (how
and why: docs/runtime/agent.md, "Transports")."""

from __future__ import annotations

import stat
import threading
from pathlib import PurePosixPath

import paramiko

from npu_hil.harness.transport.base import RemotePathError

__all__ = ["SymlinkGuard"]


class SymlinkGuard:
    """Refuses a remote path whose symlinks lead out of ``workdir`` (RemotePathError)."""

    def __init__(self, workdir: str) -> None:
        self._workdir = PurePosixPath(workdir)
        self._root: PurePosixPath | None = None  # the workdir as the board resolves it
        self._safe: set[PurePosixPath] = set()  # directories known to resolve inside
        self._lock = threading.Lock()

    def reset(self) -> None:
        """Forget everything: a new connection may be a rebooted board with other links."""
        with self._lock:
            self._root = None
            self._safe.clear()

    def forget(self, full: str) -> None:
        """Forget ``full`` and every directory below it (it was removed; it may come back as a
        link)."""
        gone = PurePosixPath(full)
        with self._lock:
            self._safe = {d for d in self._safe if not d.is_relative_to(gone)}

    def check(
        self, sftp: paramiko.SFTPClient, full: str, *, create_dirs: bool = False
    ) -> paramiko.SFTPAttributes | None:
        """Check ``full``: its directories, then itself; with ``create_dirs``, make the missing
        directories (``mkdir -p`` over SFTP, no exec channel). Returns the ``lstat`` of ``full``
        (None: missing); for a symlink that stays inside, the link's own attributes."""
        path = PurePosixPath(full)
        self._check_dirs(sftp, path, create=create_dirs)
        try:
            attrs = sftp.lstat(full)
        except FileNotFoundError:
            return None
        self._check_entry(sftp, path, attrs, path)
        return attrs

    # --- internals -------------------------------------------------------------------------------

    def _check_dirs(self, sftp: paramiko.SFTPClient, path: PurePosixPath, *, create: bool) -> None:
        current = self._workdir
        for part in path.parent.relative_to(self._workdir).parts:
            current = current / part
            with self._lock:
                if current in self._safe:
                    continue
            try:
                attrs = sftp.lstat(str(current))
            except FileNotFoundError:
                if not create:
                    return
                try:
                    sftp.mkdir(str(current))
                except OSError:
                    # A concurrent mkdir is fine; anything else shows in the lstat.
                    self._check_entry(sftp, current, sftp.lstat(str(current)), path)
            else:
                self._check_entry(sftp, current, attrs, path)
            with self._lock:
                self._safe.add(current)

    def _root_of(self, sftp: paramiko.SFTPClient) -> PurePosixPath:
        with self._lock:
            root = self._root
        if root is None:
            root = PurePosixPath(sftp.normalize(str(self._workdir)))
            with self._lock:
                self._root = root
        return root

    def _check_entry(
        self,
        sftp: paramiko.SFTPClient,
        path: PurePosixPath,
        attrs: paramiko.SFTPAttributes,
        requested: PurePosixPath,
    ) -> None:
        if not stat.S_ISLNK(attrs.st_mode or 0):
            return  # a real entry in a checked directory
        try:
            resolved = PurePosixPath(sftp.normalize(str(path)))
        except FileNotFoundError:
            # The link points into a directory that does not exist: nothing can be read through
            # it, and the transport never creates through a link (mkdir and rename act on the
            # link itself; rm -rf removes the link, not its target).
            return
        root = self._root_of(sftp)
        if not resolved.is_relative_to(root):
            asked = str(requested.relative_to(self._workdir))
            link = str(path.relative_to(self._workdir))
            raise RemotePathError(
                f"remote path {asked!r}: the symlink {link!r} leads to {resolved} on the board, "
                f"outside the workdir {self._workdir}"
            )
