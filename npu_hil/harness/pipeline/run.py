"""``run_model``: one model on one board, every device buffer checked, retried per the session's
retry policy, each attempt feeding the board's circuit breaker
(:mod:`npu_hil.harness.farm.breaker`). Errors are not caught here: the caller maps them."""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from npu_hil.harness.agent.protocol import InputSpec, JobSpec, Result
from npu_hil.harness.board.job import canary_for
from npu_hil.harness.codec import get_layout
from npu_hil.harness.diff.accuracy import Thresholds, thresholds_of
from npu_hil.harness.errors import LayoutError, NpuHilError, ProtocolError
from npu_hil.harness.farm.breaker import INFRA_FAILURES, BoardBrokenError, CircuitBreaker
from npu_hil.harness.farm.session import BoardSession
from npu_hil.harness.latency import Latency, latency
from npu_hil.harness.models.preprocessing import Preprocessing
from npu_hil.harness.pipeline.boardlog import LogFinding, finding_of, judge_board_log
from npu_hil.harness.pipeline.check import check_result
from npu_hil.harness.pipeline.compat import check_after_run, check_before_deploy
from npu_hil.harness.pipeline.crossapi import judge_cross_api, other_path
from npu_hil.harness.pipeline.model import input_digest, model_to_run, sha256
from npu_hil.harness.pipeline.result import ModelRun
from npu_hil.harness.pipeline.stale import derived_inputs, judge_stale
from npu_hil.targets.registry import pass_through_adapters, unit_named

__all__ = ["RunOptions", "run_model", "run_once"]


@dataclass(frozen=True)
class RunOptions:
    """How one model run goes: :func:`run_model`'s keywords (its docstring says each), checked
    and converted once, then handed whole to each step."""

    outputs: tuple[str, ...] | None = None
    tolerance: float = 0.0
    padding: str = "zero"
    input_layout: str | Mapping[str, str] | None = None
    faults: tuple[Any, ...] = ()
    reports_dir: Path | None = None
    runs: int = 1
    warmup: int = 0
    pin_clocks: bool = False
    accuracy: Thresholds | None = None
    stale_check: bool = False
    cross_api: bool = False
    runtime_log_level: int | None = None
    preprocessing: Preprocessing | Mapping[str, Preprocessing] | None = None


def run_model(
    session: BoardSession,
    model: str | os.PathLike[str] | onnx.ModelProto,
    inputs: Mapping[str, np.ndarray],
    *,
    outputs: Sequence[str] | None = None,
    tolerance: float | None = None,
    padding: str = "zero",
    input_layout: str | Mapping[str, str] | None = None,
    faults: Sequence[Any] | None = None,
    reports_dir: str | os.PathLike[str] | None = None,
    on_retry: Callable[[str], None] | None = None,
    runs: int = 1,
    warmup: int = 0,
    pin_clocks: bool = False,
    accuracy: Thresholds | Mapping[str, float] | None = None,
    stale_check: bool = False,
    cross_api: bool = False,
    runtime_log_level: int | None = None,
    preprocessing: Preprocessing | Mapping[str, Preprocessing] | None = None,
) -> ModelRun:
    """Run ``model`` on the session's board with ``inputs`` (name → logical NCHW array).

    ``model``: a reference-model name (built for the first input's shape), an ONNX path or an
    ``onnx.ModelProto``; on real hardware the compiled artifact comes from the manifest.
    ``tolerance`` (quantized units) and ``padding`` are the diff's; ``input_layout`` names the
    native input layout (one for all inputs, or per input); ``faults`` go to a simulated board
    (``{"name": "dirty-padding"}``); ``reports_dir`` receives a heatmap per failing tensor.
    An infrastructure failure is retried per ``session.retry`` with a fresh agent;
    ``on_retry`` hears each error a retry was paid for (``"TransportError: ..."``).
    ``accuracy`` (``{"cosine_min": 0.99, "snr_db_min": 30}``) holds every output to those
    figures against the float reference, over what the model's manifest entry sets; without
    thresholds the figures are reported only. ``runs`` timed runs follow ``warmup`` untimed
    ones (:attr:`ModelRun.latency`; the buffers checked are the last run's); ``pin_clocks`` sets
    the board's CPU, NPU and DDR governors to ``performance`` for the runs and restores them
    (``board_state["pinned"]``; a simulated board is never pinned).

    The checks, each in docs/model-developer/failures.md: every job carries a canary (unwritten
    bytes are the diff's ``unwritten`` finding); ``stale_check`` runs the model again on derived
    inputs (:attr:`ModelRun.stale_check`), ``cross_api`` through the vendor's other API path
    (:attr:`ModelRun.cross_api`); the board's kernel log and the runtime's, at
    ``runtime_log_level`` (the runtime's own scale), come back with every job and a known
    signature decides the outcome (:attr:`ModelRun.board_log`, or the raised error's).
    ``preprocessing`` declares what the inputs are, one declaration or one per input
    (:mod:`npu_hil.harness.models.preprocessing`).
    """
    options = RunOptions(
        outputs=None if outputs is None else tuple(outputs),
        tolerance=tolerance or 0.0,
        padding=padding,
        input_layout=input_layout,
        faults=tuple(faults or ()),
        reports_dir=None if reports_dir is None else Path(reports_dir),
        runs=runs,
        warmup=warmup,
        pin_clocks=pin_clocks,
        accuracy=thresholds_of(accuracy, "run_model: accuracy"),
        stale_check=stale_check,
        cross_api=cross_api,
        runtime_log_level=runtime_log_level,
        preprocessing=preprocessing,
    )

    def attempt() -> ModelRun:
        first = run_once(session, model, inputs, options)
        if options.stale_check:
            # Both runs in one attempt: a retry repeats the pair, so the two are always
            # adjacent jobs of one agent.
            first = judge_stale(first, run_once(session, model, derived_inputs(inputs), options))
        if options.cross_api:
            first = _cross_api(session, model, inputs, first, options)
        return first

    logged = _LoggedAttempts(attempt, on_retry)
    try:
        return session.retry.run(logged.attempt, restart=session.restart, on_retry=logged.retried)
    except NpuHilError as exc:
        logged.name_attempts(exc)
        raise


class _LoggedAttempts:
    """What the board's logs said at each attempt of one model run: a signature the logs matched
    at every attempt is one finding naming its attempts (``on attempts 1 and 2 of 2``), on the
    error that ends the run, and each retry paid for it is said in one short line."""

    def __init__(self, attempt: Callable[[], ModelRun], on_retry: Callable[[str], None] | None):
        self._attempt = attempt
        self._on_retry = on_retry
        self._findings: list[LogFinding | None] = []  # per attempt that failed

    def attempt(self) -> ModelRun:
        try:
            return self._attempt()
        except BaseException as exc:
            self._findings.append(getattr(exc, "board_log", None))
            raise

    def retried(self, text: str) -> None:
        if self._on_retry is None:
            return
        finding = self._findings[-1] if self._findings else None
        if finding is not None and finding.matches:
            # The signature and its first line; the whole excerpt is the final error's.
            text = f"{text.split(':', 1)[0]}: attempt {len(self._findings)}: {finding.headline()}"
        self._on_retry(text)

    def name_attempts(self, exc: NpuHilError) -> None:
        """The ending error's finding given the attempts whose logs matched its signatures."""
        finding = getattr(exc, "board_log", None)
        if not isinstance(finding, LogFinding) or not finding.matches or len(self._findings) < 2:
            return
        ids = finding.signature_ids()
        same = tuple(
            number
            for number, seen in enumerate(self._findings, start=1)
            if seen is not None and seen.signature_ids() == ids
        )
        named = dataclasses.replace(finding, attempts=same, of_attempts=len(self._findings))
        exc.board_log = named  # type: ignore[attr-defined]
        exc.message = f"{exc.message} ({named.attempts_text()})"
        exc.args = (exc.message,)


def run_once(
    session: BoardSession,
    model: str | os.PathLike[str] | onnx.ModelProto,
    inputs: Mapping[str, np.ndarray],
    options: RunOptions = RunOptions(),
) -> ModelRun:
    """One attempt of :func:`run_model`, without retries."""
    if not inputs:
        raise LayoutError("run_model: no inputs given")
    if options.faults and not session.simulated:
        raise LayoutError(
            f"run_model: {session.name} is real hardware; faults can only be injected into a "
            "simulated board"
        )
    given = {name: np.ascontiguousarray(value) for name, value in inputs.items()}
    fed = input_digest(given)
    reference, deployed, label, given, notes = model_to_run(
        session, model, given, options.preprocessing
    )
    # Before anything is sent: a model built for another platform, or by a toolkit newer than
    # the board's runtime, is a CompatibilityError naming both.
    artifact, compatibility = check_before_deploy(session, model, deployed)
    spec, arrays = _job(session, deployed, label, given, options)
    job_id = spec.job_id
    result = _submit(session, spec, arrays)
    if result.canary is not None and result.canary.pattern != spec.canary:
        raise ProtocolError(
            f"job {job_id}: the agent filled the buffers with canary {result.canary.pattern.hex()}"
            f", the job gave {canary_for(job_id).hex()} (a result of another job?)"
        )
    compatibility = check_after_run(session, artifact, result.versions) or compatibility
    checked_in, checked_out = check_result(
        session.target,
        reference,
        given,
        result,
        tolerance=options.tolerance,
        padding=options.padding,
        reports_dir=options.reports_dir,
        job_id=spec.job_id,
        accuracy=_thresholds(session, label, options.accuracy),
    )
    hashes = {deployed.name: sha256(deployed)}
    if deployed != reference:
        hashes[reference.name] = sha256(reference)
    return ModelRun(
        simulated=session.simulated,
        board=session.name,
        target=session.target,
        model=label,
        adapter=session.adapter,
        inputs=tuple(checked_in),
        outputs=tuple(checked_out),
        versions=dict(result.versions),
        artifact_hashes=hashes,
        fallback_reason=session.fallback_reason,
        timings={k: getattr(result.timings, k) for k in ("load_s", "run_s", "copy_s", "total_s")},
        latency=_latency(result),
        board_state=dict(result.board_state),
        compatibility=compatibility,
        board_log=finding_of(session.target, result.board_log),
        preprocessing=notes,
        input_digest=fed,
    )


def _job(
    session: BoardSession,
    deployed: Path,
    label: str,
    given: Mapping[str, np.ndarray],
    options: RunOptions,
) -> tuple[JobSpec, dict[str, np.ndarray]]:
    """The job for the session's board and adapter, and its input arrays (packed by the host
    codec where the adapter takes native bytes)."""
    adapter_options = dict(session.adapter_options)
    if options.faults:
        # after the board's own (--sim-fault): those rig every job of the board
        adapter_options["faults"] = [*adapter_options.get("faults", ()), *options.faults]
    specs, arrays = job_inputs(session, given, options.input_layout)
    job_id = f"{session.name}-{label}-{uuid.uuid4().hex[:8]}"
    spec = JobSpec(
        job_id=job_id,
        adapter=session.adapter,
        model=deployed,
        inputs=specs,
        outputs=options.outputs,
        adapter_options=adapter_options,
        load_timeout_s=session.board.timeouts.load,
        run_timeout_s=session.board.timeouts.run,
        runs=options.runs,
        warmup=options.warmup,
        # A simulated board's agent runs on this machine: its governors are not the board's
        # to change.
        pin_clocks=options.pin_clocks and not session.simulated,
        canary=canary_for(job_id),
        runtime_log_level=options.runtime_log_level,
    )
    return spec, arrays


def job_inputs(
    session: BoardSession,
    given: Mapping[str, np.ndarray],
    input_layout: str | Mapping[str, str] | None,
) -> tuple[tuple[InputSpec, ...], dict[str, np.ndarray]]:
    """The job's inputs: logical tensors where the runtime converts them, buffers packed by the
    host codec where the runtime takes only its native layout."""
    # Adapters whose runtime takes only native buffers: the host packs inputs with the codec.
    pass_through = session.adapter in pass_through_adapters()
    specs: list[InputSpec] = []
    arrays: dict[str, np.ndarray] = {}
    for name, value in given.items():
        wanted = input_layout.get(name) if isinstance(input_layout, Mapping) else input_layout
        if pass_through:
            layout_name = wanted or _default_input_layout(session.board.vendor, value.shape)
            layout = get_layout(session.target, layout_name, value.shape, value.dtype, role="input")
            arrays[name] = layout.pack(value)
        else:
            # "NCHW" asks the runtime for its default native layout.
            layout_name = wanted or "NCHW"
            arrays[name] = value
        specs.append(
            InputSpec(name, layout_name, tuple(value.shape), value.dtype.name, pass_through)
        )
    return tuple(specs), arrays


def _default_input_layout(vendor: str, shape: tuple[int, ...]) -> str:
    """The native input layout packed for a pass-through runtime when the caller names none."""
    default = unit_named(vendor).default_input_layout
    if default is None:
        raise LayoutError(f"vendor {vendor}: no default native input layout; name one")
    return default(shape)


def _cross_api(
    session: BoardSession,
    model: str | os.PathLike[str] | onnx.ModelProto,
    inputs: Mapping[str, np.ndarray],
    first: ModelRun,
    options: RunOptions,
) -> ModelRun:
    """``first`` judged against the same job through the vendor's other API path."""
    other, mine, path, check = other_path(session)
    if other is None or path is None:
        # Said of every output, so the report shows it beside each one: never a silent pass.
        noted = tuple(dataclasses.replace(t, cross_api_note=check.note) for t in first.outputs)
        return dataclasses.replace(first, outputs=noted, cross_api=check)
    given = {name: np.ascontiguousarray(value) for name, value in inputs.items()}
    _, deployed, label, given, _ = model_to_run(other, model, given, options.preprocessing)
    # Every output by name, in model order: a normal API that does not name its outputs
    # (RKNNLite) takes the job's names, so both paths' outputs pair up.
    named = options.outputs
    if named is None:
        named = tuple(t.name for t in first.outputs)
    # The same job as the first path's but for its outputs: one timed run, no warm-up, no
    # clocks pinned, the runtime's own log level.
    job = RunOptions(outputs=named, input_layout=options.input_layout, faults=options.faults)
    spec, arrays = _job(other, deployed, label, given, job)
    result = _submit(other, spec, arrays)
    return judge_cross_api(first, result, path, check, tolerance=options.tolerance, mine=mine)


def _thresholds(session: BoardSession, label: str, given: Thresholds | None) -> Thresholds | None:
    """The test's accuracy thresholds over the manifest entry's for the model, if it has one
    (checked when the manifest was read)."""
    manifest = session.manifest
    entry = manifest.models.get(label) if manifest is not None else None
    if entry is None or not entry.accuracy:
        return given
    return Thresholds(**entry.accuracy).merged(given)


def _submit(session: BoardSession, spec: JobSpec, arrays: Mapping[str, np.ndarray]) -> Result:
    """Deploy, run and fetch through the board's agent, the board's breaker told how it went."""
    breaker = session.breaker
    if breaker is not None:
        breaker.check()  # a board marked unhealthy costs nothing more
    try:
        result = session.client.submit(spec, arrays)
        # The board's own logs first: their class decides over the agent's error type.
        judge_board_log(session.target, result, f"job {spec.job_id}: ")
        result.raise_for_errors()
    except Exception as exc:
        if breaker is not None:
            _feed_breaker(breaker, session.name, exc)
        raise
    if breaker is not None:
        breaker.succeeded()
    return result


def _feed_breaker(breaker: CircuitBreaker, board: str, exc: Exception) -> None:
    """Count an infrastructure failure (BoardBrokenError from it when it opened the breaker);
    any other error came from a board that answered, which ends a run of failures."""
    if not isinstance(exc, INFRA_FAILURES):
        breaker.succeeded()
    elif breaker.failed(exc):
        raise BoardBrokenError(
            breaker.opened or "", board=board, cause=breaker.failures[-1]
        ) from exc


def _latency(result: Result) -> Latency | None:
    """The adapter's own per-run figures when it gave one for every run (they leave its copies
    out), else the agent's wall time around each runtime call."""
    t = result.timings
    if t.adapter_runs_s:
        # A simulated board's figures are its target's model (its timings say "modeled").
        source = "modeled" if t.adapter.get("modeled") else "adapter"
        return latency(t.adapter_runs_s, warmup=t.warmup, source=source)
    if t.runs_s:
        return latency(t.runs_s, warmup=t.warmup, source="agent")
    return None
