"""The harness's exception hierarchy: a small set of typed errors, each with a message.

Outcomes follow the type: a LayoutError is raised before anything is sent to a board, a
TransportError is infrastructure (an *error* outcome in pytest, retried per policy), a DeviceError
is the board's runtime refusing or crashing. A buffer mismatch is not an exception at all: it is a
test failure carrying the diff as evidence.
"""

from __future__ import annotations

import errno as _errno
import importlib.util

from npu_hil.harness.redact import scrub


class NpuHilError(Exception):
    """Base of every error the harness raises on purpose."""

    def __init__(self, message: str, *, errno: int | None = None) -> None:
        # Error text ends up in records, reports and logs: never with key material in it.
        message = scrub(message)
        super().__init__(message)
        self.message = message
        # The board's OS error behind it, when there is one (ENOSPC: a full disk, EACCES...).
        self.errno = errno

    @property
    def errno_name(self) -> str | None:
        """The symbolic name of :attr:`errno` (``"ENOSPC"``), or None."""
        return None if self.errno is None else _errno.errorcode.get(self.errno)


class LayoutError(NpuHilError, ValueError):
    """A request a layout cannot serve: wrong rank, channel count, role, dtype, parameter or a
    combination the vendor's tables do not list. The message says what was expected, what came
    and where."""


class PreflightError(NpuHilError):
    """A model preflight could not read or analyse (not a rule violation)."""


class TransportError(NpuHilError):
    """Infrastructure failed: connection lost, timeout, checksum mismatch."""


class DeviceError(NpuHilError):
    """The runtime on the board refused the job or crashed (model load, unsupported op)."""


class AgentKilledError(DeviceError, TransportError):
    """The board agent was ended by a signal (SIGKILL from the OOM killer or an operator, a
    SIGSEGV in a vendor runtime): infrastructure, so an *error* of the test and retried like a
    lost link, never a test failure; still a DeviceError for code that catches those.
    ``signal`` is the signal's number."""

    def __init__(self, message: str, *, signal: int) -> None:
        super().__init__(message)
        self.signal = signal


class ProtocolError(NpuHilError):
    """The host and the board agent do not speak the same protocol: a job.json or result.json with
    an unknown major schema version, a malformed record, a job the agent refused as invalid."""


class UnsafeFolderError(NpuHilError):
    """A folder the harness would run code from or write into, on the host or on a board, is not
    one this user alone controls: a symlink, owned by another user, or writable by group or
    others. The message names the folder, its owner and its mode. Never retried and never a
    reason to fall back to a simulated board: another user's folder stays theirs."""


class CompatibilityError(NpuHilError):
    """A compiled model and a board that do not go together (the artifact was built for another
    target platform, the board's runtime refuses the model's file format), found before
    anything is deployed; or a compiled artifact that is not what its name claims. The message
    names the model, what it was built by and for, the board and what it runs; ``findings``
    holds the checks that refused it (plain dicts: ``check``, ``status``, ``message``,
    ``source``)."""

    def __init__(self, message: str, *, findings: tuple[dict[str, str], ...] = ()) -> None:
        super().__init__(message)
        self.findings = findings


class ArtifactError(CompatibilityError):
    """A compiled model file that is not what its suffix claims: the wrong magic, a header or
    model-info block cut short or out of bounds, a model-info block that is not the JSON the
    toolkit writes. The message names the file, what was expected and at which offset."""


class MissingTestSupportError(NpuHilError):
    """``npu-hil simfarm`` or ``--simfarm`` without the test support, which is a distribution of
    its own (npu-hil-testkit) so that the runtime package never ships it."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"{what} needs npu-hil's test support, a distribution of its own: "
            "pip install 'npu-hil[simfarm]' (from a clone: pip install ./testkit)"
        )


def has_test_support() -> bool:
    """Whether npu-hil-testkit (import name ``npu_hil_testkit``) is installed."""
    return importlib.util.find_spec("npu_hil_testkit") is not None
