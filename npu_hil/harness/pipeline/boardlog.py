"""The board's own logs of a job, classified by the target's log signatures
(:mod:`npu_hil.targets.log_signatures`), and the outcome their class gives: infrastructure a
retried :class:`BoardLogError`, compatibility and product failures never retried
(docs/model-developer/failures.md). Every line is scrubbed of secrets before it is kept."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from npu_hil.harness.agent.protocol import BoardLog, LogExcerpt, Result
from npu_hil.harness.errors import CompatibilityError, DeviceError, NpuHilError, TransportError
from npu_hil.harness.redact import scrub
from npu_hil.harness.report.records import BoardLogDocument, LogExcerptDocument
from npu_hil.targets.log_signatures import LogMatch, classify

__all__ = [
    "BoardLogCompatibilityError",
    "BoardLogError",
    "BoardLogProductError",
    "LogFinding",
    "judge_board_log",
]

EXCERPT_LINES = 40  # per log, the newest, in the record and the page


@dataclass(frozen=True)
class LogFinding:
    """The class of a job's logs ("" when no signature matched), what matched, and the excerpt
    (the newest lines of each log, and how each was read)."""

    log_class: str
    matches: tuple[LogMatch, ...] = ()
    kernel: LogExcerptDocument = field(default_factory=LogExcerptDocument)
    runtime: LogExcerptDocument = field(default_factory=LogExcerptDocument)
    # Of the model run's attempts (the first and each retry), those whose logs matched the same
    # signatures, numbered from 1 (empty: one attempt, or not known): a timeout the board logged
    # at every attempt is one finding that names its attempts, not one per retry.
    attempts: tuple[int, ...] = ()
    of_attempts: int = 0

    def signature_ids(self) -> tuple[str, ...]:
        return tuple(sorted({m.signature.id for m in self.matches}))

    def attempts_text(self) -> str:
        """``on attempts 1, 2 and 3 of 3``; "" for a finding of one attempt."""
        if self.of_attempts < 2:
            return ""
        numbers = [str(n) for n in self.attempts]
        listed = numbers[0] if len(numbers) == 1 else f"{', '.join(numbers[:-1])} and {numbers[-1]}"
        plural = "s" if len(numbers) != 1 else ""
        return f"on attempt{plural} {listed} of {self.of_attempts}"

    def to_dict(self) -> BoardLogDocument:
        found: BoardLogDocument = {
            "class": self.log_class,
            "matches": [m.to_dict() for m in self.matches],
            "kernel": self.kernel,
            "runtime": self.runtime,
        }
        if self.of_attempts > 1:
            found["attempts"] = list(self.attempts)
            found["of_attempts"] = self.of_attempts
        return found

    def headline(self) -> str:
        if not self.matches:
            return ""
        first = next(m for m in self.matches if m.signature.log_class == self.log_class)
        return (
            f"board log: {self.log_class} ({first.signature.id}: {first.signature.meaning}); "
            f"{first.log} log: {first.line}"
        )


class _WithLog:
    board_log: LogFinding


class BoardLogError(TransportError, _WithLog):
    """The board's logs say its NPU, driver or kernel failed: infrastructure."""


class BoardLogCompatibilityError(CompatibilityError, _WithLog):
    """The board's logs say the model cannot run on this board's runtime or memory."""


class BoardLogProductError(DeviceError, _WithLog):
    """The board's logs say what is tested failed on the device."""


_RAISE: dict[str, type[NpuHilError]] = {
    "infrastructure": BoardLogError,
    "compatibility": BoardLogCompatibilityError,
    "product": BoardLogProductError,
}


def finding_of(target: str, log: BoardLog | None) -> LogFinding | None:
    """The classified excerpt of a result's board log (None: the agent sent none)."""
    if log is None:
        return None
    kernel = [scrub(line) for line in log.kernel.lines]
    runtime = [scrub(line) for line in log.runtime.lines]
    verdict = classify(target, kernel=kernel, runtime=runtime)

    def excerpt(source: LogExcerpt, lines: list[str]) -> LogExcerptDocument:
        # the agent's excerpt, checked where its result was read (read_board_log)
        out = cast(LogExcerptDocument, source.to_dict())
        out["lines"] = lines[-EXCERPT_LINES:]
        if len(lines) > EXCERPT_LINES:
            out["dropped"] = out.get("dropped", 0) + len(lines) - EXCERPT_LINES
        return out

    return LogFinding(
        verdict.log_class,
        verdict.matches,
        excerpt(log.kernel, kernel),
        excerpt(log.runtime, runtime),
    )


def judge_board_log(target: str, result: Result, context: str) -> LogFinding | None:
    """Raise the class's error when the job's logs matched a signature (the agent's own error,
    if any, quoted after it); else the finding (None: no board log) for the run to keep."""
    finding = finding_of(target, result.board_log)
    if finding is None or not finding.log_class:
        return finding
    message = f"{context}{finding.headline()}"
    if result.errors:
        message += f"; the agent reported {result.errors[0]}"
    error = _RAISE[finding.log_class](message)
    error.board_log = finding  # type: ignore[attr-defined]
    raise error
