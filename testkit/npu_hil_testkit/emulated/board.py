"""One emulated board: a copy of a built root (hard links, so it costs almost nothing) with the
board's own files on top, and the launcher that is the board's ``python:`` in an inventory.

A board's own files are what makes it that board to the software on it: the platform files a
vendor's Python layer probes (``/proc/device-tree/compatible``, ``/dev/dri/renderD129``), the
runtime library it loads (``/usr/lib/librknnrt.so``), the vendor's wheels. Two boards of two SoCs
need two trees because ``qemu-user -L`` gives a process one root.

Folder layout::

    DIR/root           the board's tree
    DIR/launch-python  its python (see npu_hil_testkit.emulated.root.write_launcher)
    DIR/board.json     what was put on it, and the key of the root it was copied from
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from npu_hil_testkit.emulated.root import EmulatedRoot, EmulationError, write_launcher

__all__ = ["EmulatedBoard", "make_board"]

BOARD_FILE = "board.json"


@dataclass(frozen=True)
class EmulatedBoard:
    dir: Path
    key: str

    @property
    def root(self) -> Path:
        return self.dir / "root"

    @property
    def python(self) -> Path:
        """The board's ``python:`` for an inventory."""
        return self.dir / "launch-python"


def _copy_tree(source: Path, dest: Path) -> None:
    """Hard links where the file system allows (the root's files are never written in place:
    board files replace a path, they do not write through it), copies elsewhere."""
    try:
        shutil.copytree(source, dest, symlinks=True, copy_function=os.link)
    except (shutil.Error, OSError):
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(source, dest, symlinks=True)


def _inside(root: Path, path: str) -> Path:
    if not path.startswith("/") or ".." in Path(path).parts:
        raise EmulationError(f"board file {path!r}: expected an absolute path inside the board")
    return root / path.lstrip("/")


def _put(root: Path, path: str, content: bytes | Path) -> None:
    target = _inside(root, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() or target.is_symlink():
        target.unlink()  # never write through a hard link into the shared root
    data = content.read_bytes() if isinstance(content, Path) else content
    target.write_bytes(data)
    if isinstance(content, Path):
        shutil.copymode(content, target)


def _unpack_wheel(wheel: Path, site: Path) -> None:
    """A wheel is a zip of the files as they lie in site-packages (PEP 427): unpacking it there is
    what pip's install does for a wheel without scripts or data."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.infolist():
                name = member.filename
                if name.startswith("/") or ".." in Path(name).parts:
                    raise EmulationError(f"{wheel.name}: refusing the member {name!r}")
                if ".data/" in name.split("/", 1)[0] + "/":
                    raise EmulationError(f"{wheel.name}: a .data folder is not supported here")
                target = site / name
                if member.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(member))
                if member.external_attr >> 16 & 0o111:
                    target.chmod(0o755)
    except zipfile.BadZipFile as error:
        raise EmulationError(f"{wheel}: not a wheel: {error}") from None


def _digest(
    root: EmulatedRoot, files: Mapping[str, bytes | Path], wheels: Sequence[Path], cpu: str | None
) -> str:
    h = hashlib.sha256()
    h.update(str(root.dir).encode())
    h.update(json.dumps(root.recipe, sort_keys=True).encode())
    h.update(repr(cpu).encode())
    for path in sorted(files):
        content = files[path]
        h.update(path.encode())
        h.update(content.read_bytes() if isinstance(content, Path) else content)
    for wheel in wheels:
        h.update(wheel.name.encode())
        h.update(wheel.read_bytes())
    return h.hexdigest()[:16]


def make_board(
    root: EmulatedRoot,
    dest: Path,
    *,
    files: Mapping[str, bytes | Path] | None = None,
    wheels: Sequence[Path] = (),
    cpu: str | None = None,
) -> EmulatedBoard:
    """The board in ``dest``: reused when it was made from the same root, files and wheels,
    made anew otherwise. ``files`` maps absolute paths inside the board to their content (bytes,
    or a file of this machine to copy); ``wheels`` are unpacked into the root's site-packages;
    ``cpu`` is qemu's CPU model for the board (e.g. ``cortex-a76`` for an RK3588)."""
    files = dict(files or {})
    key = _digest(root, files, wheels, cpu)
    try:
        recorded = json.loads((dest / BOARD_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        recorded = {}
    board = EmulatedBoard(dest, key)
    if recorded.get("key") == key and board.python.exists():
        return board
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(mode=0o700, parents=True)
    _copy_tree(root.root, board.root)
    site = Path(str(root.site_packages).replace(str(root.root), str(board.root), 1))
    site.mkdir(parents=True, exist_ok=True)
    for wheel in wheels:
        _unpack_wheel(wheel, site)
    for path, content in files.items():
        _put(board.root, path, content)
    # The root's bytecode cache is shared: its entries are named by the path inside the board
    # (/usr/lib/python3.11/...), the same in every board made from this root.
    write_launcher(board.python, root=board.root, qemu=root.qemu, pycache=root.pycache, cpu=cpu)
    record = {
        "key": key,
        "root": str(root.dir),
        "files": sorted(files),
        "wheels": [w.name for w in wheels],
        "cpu": cpu,
    }
    (dest / BOARD_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return board
