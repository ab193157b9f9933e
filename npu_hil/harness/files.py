"""Input files read safely: regular files only (a FIFO blocks forever, ``/dev/zero`` never ends),
with a bound (a sparse 20 GiB file), and ``.npy`` headers checked against the file before anything
is allocated. Every refusal is an :class:`InputFileError` naming the path and what was expected.
"""

from __future__ import annotations

import ast
import errno
import json
import os
import re
import stat
from math import prod
from pathlib import Path
from typing import Any

import numpy as np

from npu_hil.harness.board.wire import nested_deeper
from npu_hil.harness.errors import NpuHilError

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_MODEL_BYTES",
    "MAX_TENSOR_BYTES",
    "InputFileError",
    "check_regular",
    "json_document",
    "load_npy",
    "npy_bytes",
    "read_json",
    "read_regular",
]

MAX_TENSOR_BYTES = 16 << 30
"""The largest tensor file read: more than any NPU board's memory holds."""
MAX_MODEL_BYTES = 2 << 30
"""An ONNX model: protobuf's own limit for one message."""
MAX_JSON_BYTES = 256 << 20
"""A manifest, a state file, a file of observations."""
MAX_JSON_DEPTH = 64
"""How deep a document the harness writes nests, with room to spare: a deeper one is damage or
an attack (100,000 levels overflow the parser's stack)."""
MAX_NPY_HEADER = 10000
"""numpy's own bound on an ``.npy`` header (``max_header_size``)."""
NPY_KINDS = "biufc"
"""The element kinds a tensor file may hold: bool, integers, floats, complex. Never objects
(a pickle), never structured, string or date records."""

_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


class InputFileError(NpuHilError, ValueError):
    """An input file that cannot be used: not there, not a regular file, too large, or not the
    format expected. The message names the path and what was expected."""


def _open(
    path: str | os.PathLike[str], what: str, limit: int, *, follow: bool = True
) -> tuple[int, os.stat_result]:
    """An open descriptor on a regular file of at most ``limit`` bytes. O_NONBLOCK: opening a
    FIFO never waits for a writer (the fstat that follows refuses it). ``follow=False``: a
    symlink as the last component is refused (a file the harness itself wrote is never one)."""
    name = os.fspath(path)
    if "\0" in str(name):
        raise InputFileError(f"{name!r}: expected {what}, got a path with a NUL character")
    try:
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
        fd = os.open(name, flags if follow else flags | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise InputFileError(f"{name}: expected {what}, no such file") from None
    except OSError as exc:
        reason = {
            errno.ELOOP: "a symlink loop" if follow else "a symlink",
            errno.ENOTDIR: "a path through something that is not a folder",
            errno.EACCES: "permission denied",
            errno.ENAMETOOLONG: "a name too long",
        }.get(exc.errno or 0, exc.strerror or str(exc))
        raise InputFileError(f"{name}: expected {what}, got {reason}") from None
    info = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(info.st_mode):
        kind = _KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
        problem = f"{name}: expected {what} (a regular file), got {kind}"
    elif info.st_size > limit:
        problem = f"{name}: expected {what} of at most {limit} bytes, the file has {info.st_size}"
    if problem is not None:
        os.close(fd)
        raise InputFileError(problem)
    return fd, info


def check_regular(path: str | os.PathLike[str], what: str, limit: int = MAX_JSON_BYTES) -> Path:
    """``path`` when it names a regular file of at most ``limit`` bytes this process can open;
    else InputFileError. For paths a library then reads by name (the inventory)."""
    os.close(_open(path, what, limit)[0])
    return Path(path)


def read_regular(
    path: str | os.PathLike[str], what: str, limit: int, *, follow: bool = True
) -> bytearray:
    """The bytes of a regular file of at most ``limit`` bytes (checked before reading, and
    again while reading: a file that grows is cut at the bound and refused)."""
    fd, info = _open(path, what, limit, follow=follow)
    try:
        os.set_blocking(fd, True)
        data = bytearray(info.st_size)
        view = memoryview(data)
        got = 0
        while got < len(data):
            n = os.readv(fd, [view[got:]])
            if n == 0:
                break
            got += n
        del view
        if got < len(data):
            del data[got:]
        elif os.read(fd, 1):
            raise InputFileError(f"{os.fspath(path)}: expected {what}; it grew while read")
        return data
    finally:
        os.close(fd)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"a non-finite number ({name})")


# A float literal can overflow only with an exponent of three digits or more (1e400) or with
# more than 300 digits before it (the largest finite double is about 1.8e308).
_MAY_OVERFLOW = re.compile(r"[eE][+-]?\d{3}|\d{300}")


def _finite_float(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"a number too large for a float ({text[:40]})")
    return value


def json_document(
    text: str | bytes | bytearray, source: str, max_depth: int = MAX_JSON_DEPTH
) -> Any:
    """The JSON document ``text`` holds, or InputFileError naming ``source``: not UTF-8, not
    JSON, nested deeper than ``max_depth``, or holding a number that is not finite
    (``NaN``, ``Infinity``, ``1e400``) or an integer of more digits than Python converts."""
    try:
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8")
        # Each float through a Python check costs a 12,000-case history file half its read: it
        # is needed only where a number could overflow to infinity.
        checked = _finite_float if _MAY_OVERFLOW.search(text) else float
        document = json.loads(text, parse_constant=_refuse_constant, parse_float=checked)
    except RecursionError:
        raise InputFileError(
            f"{source}: expected JSON nested at most {max_depth} levels, got deeper"
        ) from None
    except UnicodeDecodeError as exc:
        raise InputFileError(
            f"{source}: expected UTF-8 JSON, got {exc.reason} at byte {exc.start}"
        ) from None
    except ValueError as exc:
        # JSONDecodeError, the refusals above, and int() past sys.get_int_max_str_digits.
        raise InputFileError(f"{source}: expected JSON, got {str(exc)[:200]}") from None
    if nested_deeper(document, max_depth):
        raise InputFileError(
            f"{source}: expected JSON nested at most {max_depth} levels, got deeper"
        )
    return document


def read_json(
    path: str | os.PathLike[str],
    what: str,
    limit: int = MAX_JSON_BYTES,
    max_depth: int = MAX_JSON_DEPTH,
    *,
    follow: bool = True,
) -> Any:
    """The JSON document in a regular file of at most ``limit`` bytes (:func:`read_regular`,
    :func:`json_document`): every refusal an InputFileError naming the path."""
    data = read_regular(path, what, limit, follow=follow)
    return json_document(data, os.fspath(path), max_depth)


def _npy_error(path: str, reason: str) -> InputFileError:
    return InputFileError(f"{path}: expected a .npy tensor file, {reason}")


def npy_bytes(data: bytes | bytearray, source: str) -> np.ndarray:
    """The array an ``.npy`` file's bytes hold, the header checked first: format version 1-3,
    a plain numeric dtype (no pickle, ever), and exactly the bytes its shape needs."""
    if len(data) < 10 or bytes(data[:6]) != b"\x93NUMPY":
        raise _npy_error(source, "got a file without the .npy magic (\\x93NUMPY)")
    major = data[6]
    if major == 1:
        header_len, start = int.from_bytes(data[8:10], "little"), 10
    elif major in (2, 3):
        if len(data) < 12:
            raise _npy_error(source, "got a truncated header")
        header_len, start = int.from_bytes(data[8:12], "little"), 12
    else:
        raise _npy_error(source, f"got format version {major}.{data[7]} (numpy writes 1 to 3)")
    if header_len > MAX_NPY_HEADER or start + header_len > len(data):
        raise _npy_error(source, f"got a header of {header_len} bytes in a {len(data)}-byte file")
    encoding = "utf8" if major == 3 else "latin1"
    try:
        header = ast.literal_eval(bytes(data[start : start + header_len]).decode(encoding))
    except (ValueError, SyntaxError, UnicodeDecodeError, MemoryError, RecursionError):
        raise _npy_error(source, "got a header that is not a Python literal") from None
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
        raise _npy_error(source, "got a header without exactly descr, fortran_order and shape")
    shape, fortran, descr = header["shape"], header["fortran_order"], header["descr"]
    if (
        not isinstance(shape, tuple)
        or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
        or not isinstance(fortran, bool)
    ):
        raise _npy_error(source, f"got shape {shape!r}, fortran_order {fortran!r}")
    if not isinstance(descr, str):
        raise _npy_error(source, f"got dtype {descr!r}: structured records are not tensors")
    try:
        dtype = np.dtype(descr)
    except (TypeError, ValueError):
        raise _npy_error(source, f"got an unknown dtype {descr!r}") from None
    if dtype.kind not in NPY_KINDS or dtype.hasobject or dtype.fields or dtype.subdtype:
        raise _npy_error(
            source,
            f"got dtype {dtype.str} ({dtype.name}): expected numbers (bool, integers, floats); "
            "object arrays (a pickle), records, strings and dates are refused",
        )
    need = prod(shape) * dtype.itemsize
    body = len(data) - start - header_len
    if body != need:
        raise _npy_error(
            source,
            f"its header says {dtype.name} {list(shape)} ({need} bytes) but {body} bytes follow it",
        )
    array = np.frombuffer(data, dtype=dtype, count=prod(shape), offset=start + header_len)
    return array.reshape(shape, order="F" if fortran else "C")


def load_npy(path: str | os.PathLike[str], limit: int = MAX_TENSOR_BYTES) -> np.ndarray:
    """An ``.npy`` tensor file, read with a bound and checked (see :func:`npy_bytes`)."""
    data = read_regular(path, "a .npy tensor file", limit)
    return npy_bytes(data, os.fspath(path))


def write_regular(path: str | os.PathLike[str], data: bytes | memoryview, what: str) -> None:
    """Write ``data`` to a regular file (created, or truncated): an output named as a FIFO or a
    device is refused, never blocked on or written through."""
    name = os.fspath(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    try:
        fd = os.open(name, flags, 0o666)
    except OSError as exc:
        reason = "a FIFO nobody reads" if exc.errno == errno.ENXIO else exc.strerror or str(exc)
        raise InputFileError(f"{name}: cannot write {what} there: {reason}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = _KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
            raise InputFileError(f"{name}: cannot write {what} there: it is {kind}")
        os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
