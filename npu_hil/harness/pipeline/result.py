"""What a model run found: every device buffer with its diff, its reported attributes and the
layout it was read with, and the run's provenance (board, simulated or not, versions, hashes)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from npu_hil.harness.codec import BlockedLayout
from npu_hil.harness.diff import DiffReport
from npu_hil.harness.diff.accuracy import Accuracy
from npu_hil.harness.diff.attributes import AttributeFinding, disagreements
from npu_hil.harness.diff.report import VERDICT_CROSS_API, VERDICT_STALE
from npu_hil.harness.latency import Latency
from npu_hil.harness.pipeline.boardlog import LogFinding

if TYPE_CHECKING:
    from npu_hil.harness.pipeline.crossapi import CrossApi

__all__ = ["ModelRun", "TensorRun"]


@dataclass(frozen=True)
class TensorRun:
    """One device buffer of a run and its verdict."""

    name: str
    role: str
    diff: DiffReport
    attributes: tuple[AttributeFinding, ...]
    data: np.ndarray = field(repr=False)
    reported: Mapping[str, Any]
    layout: BlockedLayout = field(repr=False)
    heatmap: Path | None = None
    accuracy: Accuracy | None = None
    """An output's figures against the float reference (None for an input, or when the buffer
    could not be dequantized: ``accuracy_note`` says why)."""
    accuracy_note: str = ""
    accuracy_breaches: tuple[str, ...] = ()
    """The accuracy thresholds the output failed; only thresholds a test or the model's
    manifest entry set are checked, so without them this is empty and the figures are
    reported only."""
    stale: str = ""
    """The stale-result check's finding: the output did not change between two runs on
    different inputs although the host's expectation did ("" when it changed, or unchecked)."""
    stale_note: str = ""
    """Why the stale-result check could not judge this output (it cannot depend on the input)."""
    cross_api: str = ""
    """The cross-API check's finding: two of the vendor's API paths disagree on this output's
    values (naming both paths and the first differing element) or on an attribute both report
    ("" when they agree, or unchecked)."""
    cross_api_note: str = ""
    """Why the cross-API check could not compare this output's values."""

    @property
    def ok(self) -> bool:
        """The byte diff's verdict, the stale-result check's and the cross-API check's
        (accuracy is :attr:`accurate`)."""
        return self.diff.ok and not self.stale and not self.cross_api

    @property
    def verdict(self) -> str:
        """``stale`` when the stale-result check flagged the output, ``cross-api`` when the
        cross-API check did, else the byte diff's (``equal``, ``equal within tolerance``,
        ``unwritten``, ``different``)."""
        if self.stale:
            return VERDICT_STALE
        return VERDICT_CROSS_API if self.cross_api else self.diff.verdict

    def summary(self) -> str:
        """The byte diff's lines, with the stale-result and cross-API checks' findings or
        notes."""
        text = self.diff.summary()
        found = [
            (VERDICT_STALE, "stale", self.stale),
            (VERDICT_CROSS_API, "cross-api", self.cross_api),
        ]
        for verdict, key, finding in found:
            if finding and verdict == self.verdict:
                head, _, rest = text.partition("\n")
                head = head.rsplit(": ", 1)[0] + f": {verdict} (byte diff: {self.diff.verdict})"
                text = "\n".join(x for x in (head, f"  {key}: {finding}", rest) if x)
            elif finding:
                text += f"\n  {key}: {finding}"
        if self.stale_note and not self.stale:
            text += f"\n  stale check: {self.stale_note}"
        if self.cross_api_note:
            text += f"\n  cross-api check: {self.cross_api_note}"
        return text

    @property
    def accurate(self) -> bool:
        """No accuracy threshold failed."""
        return not self.accuracy_breaches

    @property
    def disagreements(self) -> list[AttributeFinding]:
        """Attributes the device reported differently from the codec's prediction."""
        return disagreements(list(self.attributes))


@dataclass(frozen=True)
class ModelRun:
    """A model run on one board: every input and output buffer diffed, with provenance."""

    simulated: bool
    board: str
    target: str
    model: str
    adapter: str
    inputs: tuple[TensorRun, ...]
    outputs: tuple[TensorRun, ...]
    versions: Mapping[str, Any]
    artifact_hashes: Mapping[str, str]
    fallback_reason: str | None = None
    timings: Mapping[str, float] = field(default_factory=dict)
    # The timed runs' figures (None when the agent reported no per-run durations) and the
    # board's state before and after them, as the agent read it.
    latency: Latency | None = None
    board_state: Mapping[str, Any] = field(default_factory=dict)
    compatibility: tuple[Mapping[str, str], ...] = ()
    """The compiled artifact's compatibility findings (``check``, ``status``, ``message``,
    ``source``; :mod:`npu_hil.harness.pipeline.compat`): empty when the run deployed none."""
    stale_check: ModelRun | None = None
    """The stale-result check's second run (on inputs derived from these), checked like this
    one; None without the check."""
    cross_api: CrossApi | None = None
    """The cross-API check (``npu_hil.harness.pipeline.crossapi``): the two paths compared, or why
    it does not apply; None without the check."""
    board_log: LogFinding | None = None
    """The board's own logs in the job's window, classified
    (:mod:`npu_hil.harness.pipeline.boardlog`); None when the agent sent none. A run that returns
    has no class: a class raises."""
    preprocessing: tuple[str, ...] = ()
    """How the board took each input declared as pixels (``run_model(preprocessing=...)``):
    the vendor's way, one line per input."""
    input_digest: str = ""
    """What the test fed the model (:func:`npu_hil.harness.pipeline.model.input_digest`, before
    any preprocessing): with ``artifact_hashes``, what the run's figures are figures of."""

    @property
    def ok(self) -> bool:
        """Every buffer matched, and every output met the accuracy thresholds set (none set:
        the bytes alone), in this run and the stale-result check's second run: derived from
        the tensors, never stored beside them."""
        second = self.stale_check is None or self.stale_check.ok
        paths = self.cross_api is None or not self.cross_api.findings
        return second and paths and all(t.ok and t.accurate for t in self.tensors)

    @property
    def tensors(self) -> tuple[TensorRun, ...]:
        return self.inputs + self.outputs

    def tensor(self, name: str, role: str | None = None) -> TensorRun:
        for tensor in self.tensors:
            if tensor.name == name and role in (None, tensor.role):
                return tensor
        names = [t.name for t in self.tensors if role in (None, t.role)]
        kind = f"{role} " if role else ""
        raise KeyError(f"no {kind}tensor {name!r}; the run has {names}")

    def output(self, name: str, *, dequantize: bool = False) -> np.ndarray:
        """The model output ``name`` as a tensor: the device buffer unpacked with the layout the
        run used (the stored integers of a quantized model), or with ``dequantize=True`` the
        float values by the quantization the runtime reported. :attr:`outputs` keeps the raw
        buffers, attributes and diffs as evidence."""
        return self._decoded(name, "output", dequantize)

    def input(self, name: str, *, dequantize: bool = False) -> np.ndarray:
        """The model input ``name`` as the device held it (read back from its input buffer),
        decoded the way :meth:`output` decodes an output."""
        return self._decoded(name, "input", dequantize)

    def _decoded(self, name: str, role: str, dequantize: bool) -> np.ndarray:
        from npu_hil.harness.farm.decode import dequantize as to_float

        tensor = self.tensor(name, role)
        values = np.asarray(tensor.layout.unpack(tensor.data))
        if not dequantize:
            return values
        return to_float(values, tensor.reported, f"{self.board} {role} {name!r}")

    def summary(self) -> str:
        """A few lines: the first failing tensor's diff summary first, then the verdict line."""
        where = "simulated" if self.simulated else "hardware"
        if self.fallback_reason:
            where += f", fallback: {self.fallback_reason}"
        head = (
            f"{self.model} on {self.board} ({self.target}, {where}): "
            f"{'ok' if self.ok else 'FAILED'}"
        )
        failing = [t for t in self.tensors if not t.ok]
        lines = [failing[0].summary(), head] if failing else [head]
        if self.latency is not None:
            lines.append(f"  latency: {self.latency.summary()}")
        for found in self.compatibility:
            if found.get("status") in ("warn", "unknown"):
                lines.append(f"  compatibility ({found['status']}): {found['message']}")
        for tensor in failing[1:]:
            lines.append(f"  also different: {tensor.role} {tensor.name} ({tensor.verdict})")
        if self.stale_check is not None:
            second = self.stale_check
            bad = ", ".join(f"{t.role} {t.name} ({t.verdict})" for t in second.tensors if not t.ok)
            lines.append(
                f"  stale check: second run on derived inputs {f'FAILED: {bad}' if bad else 'ok'}"
            )
        if self.cross_api is not None:
            lines.append(f"  {self.cross_api.summary()}")
            lines.extend(f"  cross-api: {found}" for found in self.cross_api.findings)
        for tensor in self.tensors:
            for breach in tensor.accuracy_breaches:
                lines.append(f"  accuracy {tensor.role} {tensor.name}: {breach}")
            for finding in tensor.disagreements:
                lines.append(f"  attribute {tensor.role} {tensor.name}: {finding.message}")
            if tensor.heatmap is not None:
                lines.append(f"  heatmap: {tensor.heatmap}")
        return "\n".join(lines)
