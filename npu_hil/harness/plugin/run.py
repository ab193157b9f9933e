"""The ``run_model`` fixture: one model run on the test's board, recorded for the report
(docs/model-developer/tests.md), and the markers that shape it: ``perf`` (a test's own run count
and latency thresholds, any ``_ms`` figure of :class:`~npu_hil.harness.latency.Latency`;
docs/model-developer/figures.md), ``accuracy`` and ``cross_api``. Retries after infrastructure
trouble are the farm's (:mod:`npu_hil.harness.farm.recovery`); this feature only records them."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pytest

from npu_hil.harness.plugin.history import check_run, fail_on
from npu_hil.harness.plugin.records import ItemInfo, heatmap_dir, heatmap_path, item_info

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np
    import onnx

    from npu_hil.harness.diff.accuracy import Thresholds
    from npu_hil.harness.farm.session import BoardSession
    from npu_hil.harness.latency import Latency
    from npu_hil.harness.pipeline import ModelRun

# The pipeline and its diff (numpy, onnx) are imported by the run_model fixture, where a test
# asks for a model run: every pytest run imports this module to declare the options.

PERF_MARKER = (
    "perf(runs=1, warmup=0, **thresholds_ms): time the runtime call `runs` times after `warmup` "
    "untimed runs; fail when a figure (p50_ms, p90_ms, p99_ms, max_ms, ...) exceeds its threshold"
)
THRESHOLDS = ("p50_ms", "p90_ms", "p99_ms", "min_ms", "max_ms", "mean_ms", "stdev_ms", "jitter_ms")
CROSS_API_MARKER = (
    "cross_api: run every model job of the test a second time through the vendor's other API "
    "path (zero-copy and the normal API) and fail an output the two disagree on (verdict "
    "'cross-api'); not applicable where the vendor has one path"
)
ACCURACY_MARKER = (
    "accuracy(cosine_min=None, snr_db_min=None, max_abs_err_max=None, max_rel_err_max=None): "
    "every output of the test's model runs must meet these figures against the float reference "
    "(over the manifest's thresholds for the model); a breach fails the test"
)


class LatencyExceeded(AssertionError):
    """A latency figure over the test's threshold: a failure of the test, not an error."""


@dataclasses.dataclass(frozen=True)
class PerfSpec:
    runs: int = 1
    warmup: int = 0
    thresholds_ms: dict[str, float] = dataclasses.field(default_factory=dict)
    pin_clocks: bool = False


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("npu-hil").addoption(
        "--pin-clocks",
        action="store_true",
        help="for perf tests, set the board's CPU, NPU and DDR governors to performance during "
        "the runs and restore them after",
    )
    parser.getgroup("npu-hil").addoption(
        "--stale-check",
        action="store_true",
        help="run every model twice, on the test's inputs and on inputs derived from them, and "
        "fail an output that did not change (verdict 'stale') unless the host's expectation "
        "did not change either",
    )
    parser.getgroup("npu-hil").addoption(
        "--cross-api",
        action="store_true",
        help="run every model job a second time through the vendor's other API path (zero-copy "
        "and the normal API, where the board's vendor has two) and fail an output whose values "
        "or attributes the two disagree on (verdict 'cross-api'); a vendor with one path is "
        "reported 'not applicable'",
    )
    parser.getgroup("npu-hil").addoption(
        "--runtime-log-level",
        type=int,
        metavar="N",
        help="the level every board's NPU runtime logs at in its jobs, on the runtime's own scale "
        "(written to the variable the runtime reads, e.g. 0..5 where 5 says most); the job's "
        "runtime log is in each test's record next to the kernel log",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", PERF_MARKER)
    config.addinivalue_line("markers", ACCURACY_MARKER)
    config.addinivalue_line("markers", CROSS_API_MARKER)


@dataclasses.dataclass
class RunModel:
    """Callable behind the ``run_model`` fixture (:func:`npu_hil.harness.pipeline.run_model`)."""

    session: BoardSession
    info: ItemInfo
    _: dataclasses.KW_ONLY
    reports_dir: Path
    config: pytest.Config
    accuracy: Thresholds | None = None
    perf: PerfSpec | None = None
    cross_api: bool = False
    runs: list[ModelRun] = dataclasses.field(default_factory=list)

    def __call__(
        self,
        model: str | os.PathLike[str] | onnx.ModelProto,
        inputs: Mapping[str, np.ndarray],
        *,
        output_layout: str | None = None,
        **options: Any,
    ) -> ModelRun:
        """Run ``model`` with ``inputs``; ``output_layout`` asks the board's runtime for that
        native output layout; other keywords go to ``npu_hil.harness.pipeline.run_model``
        (``accuracy``: over the ``accuracy`` marker's). The ``perf`` marker and the baselines
        judge every run (docs/model-developer/figures.md)."""
        from npu_hil.harness.diff.accuracy import thresholds_of
        from npu_hil.harness.errors import NpuHilError
        from npu_hil.harness.farm.breaker import BoardBrokenError
        from npu_hil.harness.farm.recovery import breaker_event
        from npu_hil.harness.pipeline import run_model

        session = self.session
        if output_layout is not None:
            adapter_options = {**session.adapter_options, "output_layout": output_layout}
            session = dataclasses.replace(session, adapter_options=adapter_options)
        record = self.info.record
        given = thresholds_of(options.pop("accuracy", None), "run_model: accuracy")
        limits = self.accuracy.merged(given) if self.accuracy is not None else given
        if limits is not None:
            options["accuracy"] = limits
        if self.perf is not None:
            options.setdefault("runs", self.perf.runs)
            options.setdefault("warmup", self.perf.warmup)
            options.setdefault("pin_clocks", self.perf.pin_clocks)
        if self.config.getoption("stale_check", False):
            options.setdefault("stale_check", True)
        if self.cross_api or self.config.getoption("cross_api", False):
            options.setdefault("cross_api", True)
        level = self.config.getoption("runtime_log_level", None)
        if level is not None:
            options.setdefault("runtime_log_level", level)
        try:
            run = run_model(
                session,
                model,
                inputs,
                reports_dir=self.reports_dir,
                on_retry=record.retried.append,
                **options,
            )
        except BoardBrokenError as exc:
            record.board_events.append(breaker_event(exc.message))
            raise
        except NpuHilError as exc:
            # A class the board's logs gave decided this error: its excerpt goes with it.
            finding = getattr(exc, "board_log", None)
            if finding is not None:
                record.board_log = finding.to_dict()
            raise
        self._record(run)
        # Every figure against its baseline first, so the record has the findings even when a
        # threshold below fails the test.
        findings = check_run(
            self.config,
            self.info,
            perf=self.perf is not None,
            accuracy_thresholds=limits is not None,
        )
        if self.perf is not None:
            check_latency(run.latency, self.perf, f"{run.model} on {run.board}")
        fail_on(findings)
        return run

    def _record(self, run: ModelRun) -> None:
        from npu_hil.harness.history.model import subject_after
        from npu_hil.harness.report.records import TensorFinding

        self.runs.append(run)
        record = self.info.record
        record.simulated = record.simulated or run.simulated
        if run.simulated:
            record.ran_on = "sim"
        if not record.layout:
            record.layout = "+".join(dict.fromkeys(t.layout.name for t in run.tensors))
        record.runtime_versions.update({str(k): str(v) for k, v in run.versions.items()})
        record.artifact_hashes.update(run.artifact_hashes)
        record.subject = subject_after(record.subject, run.artifact_hashes, run.input_digest)
        if run.board_log is not None:
            record.board_log = run.board_log.to_dict()
        if run.preprocessing:
            # How the vendor took the declared pixels: a JUnit property and a report line.
            record.preprocessing = _lines_with(record.preprocessing, *run.preprocessing)
        if run.latency is not None:
            record.latency = run.latency.to_dict()
            record.board_state = dict(run.board_state)
        if run.cross_api is not None:
            # One line per check (a test may run several models), as a JUnit property too.
            record.cross_api = _lines_with(record.cross_api, run.cross_api.summary())
        # The stale check's second run is recorded too, its tensors named apart.
        second = run.stale_check.tensors if run.stale_check is not None else ()
        named = [(t, t.name) for t in run.tensors] + [
            (t, f"{t.name} (stale check)") for t in second
        ]
        for tensor, name in named:
            record.tensors.append(
                TensorFinding(
                    name=name,
                    role=tensor.role,
                    verdict=tensor.verdict,
                    summary=tensor.summary(),
                    heatmap=(
                        heatmap_path(self.config, tensor.heatmap)
                        if tensor.heatmap is not None
                        else None
                    ),
                    attribute_findings=[f.message for f in tensor.disagreements],
                    accuracy=None if tensor.accuracy is None else dict(tensor.accuracy.to_dict()),
                    accuracy_breaches=list(tensor.accuracy_breaches),
                    accuracy_note=tensor.accuracy_note,
                )
            )


@pytest.fixture
def run_model(request: pytest.FixtureRequest, board: BoardSession) -> RunModel:
    """Run a model on the test's board: pack → deploy → run → fetch → expect → diff, in one call.

    Returns the :class:`~npu_hil.harness.pipeline.ModelRun`; check it with :func:`assert_run_ok`.
    A TransportError or timeout is retried ``--hil-retries`` times with backoff, the board's
    agent restarted in between (the farm's retry policy); after that it is the test's error. A
    board whose circuit breaker opened (``--hil-breaker`` infrastructure failures in a row) is
    not retried.
    """
    return RunModel(
        board,
        item_info(request.node),
        reports_dir=heatmap_dir(request.config),
        config=request.config,
        accuracy=_marker_thresholds(request.node),
        perf=perf_spec(request.node),
        cross_api=request.node.get_closest_marker("cross_api") is not None,
    )


def _lines_with(text: str, *lines: str) -> str:
    """``text``'s lines and then ``lines``, each once."""
    return "\n".join(dict.fromkeys([*(x for x in text.split("\n") if x), *lines]))


def _marker_thresholds(item: pytest.Item) -> Thresholds | None:
    """The test's ``accuracy`` marker as thresholds (a usage error when they make no sense)."""
    marker = item.get_closest_marker("accuracy")
    if marker is None:
        return None
    from npu_hil.harness.diff.accuracy import AccuracyError, thresholds_of

    if marker.args:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.accuracy takes keywords only")
    try:
        return thresholds_of(dict(marker.kwargs), f"{item.nodeid}: @pytest.mark.accuracy")
    except AccuracyError as exc:
        raise pytest.UsageError(str(exc)) from None


def _count(value: object, name: str, low: int, high: int, where: str) -> int:
    from npu_hil.harness.errors import LayoutError

    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise LayoutError(
            f"{where}: perf({name}=...) expects an integer in [{low}, {high}], got {value!r}"
        )
    return value


def perf_spec(item: pytest.Item) -> PerfSpec | None:
    """The test's ``perf`` marker, checked (a bad one is a LayoutError naming the test)."""
    marker = item.get_closest_marker("perf")
    if marker is None:
        return None
    # Where a test has the marker: every run asks (the job's bounds, the harness's errors).
    from npu_hil.harness.board.job import MAX_RUNS, MAX_WARMUP
    from npu_hil.harness.errors import LayoutError

    where = item.nodeid
    if marker.args:
        raise LayoutError(f"{where}: perf() takes keyword arguments only, got {marker.args!r}")
    kwargs = dict(marker.kwargs)
    runs = _count(kwargs.pop("runs", 1), "runs", 1, MAX_RUNS, where)
    warmup = _count(kwargs.pop("warmup", 0), "warmup", 0, MAX_WARMUP, where)
    thresholds: dict[str, float] = {}
    for name, value in kwargs.items():
        if name not in THRESHOLDS:
            raise LayoutError(
                f"{where}: perf({name}=...) is not a figure; thresholds are {', '.join(THRESHOLDS)}"
            )
        if (
            not isinstance(value, (int, float))
            or isinstance(value, bool)
            or not math.isfinite(value)
            or value <= 0
        ):
            raise LayoutError(f"{where}: perf({name}={value!r}) expects milliseconds > 0")
        thresholds[name] = float(value)
    pin = bool(item.config.getoption("pin_clocks", False))
    return PerfSpec(runs, warmup, thresholds, pin)


def check_latency(latency: Latency | None, spec: PerfSpec, what: str) -> None:
    """Raise :class:`LatencyExceeded` naming every figure over its threshold."""
    if not spec.thresholds_ms:
        return
    if latency is None:
        raise LatencyExceeded(f"{what}: the board reported no per-run durations to check")
    figures = latency.to_dict()
    over = [
        f"{name} {float(figures[name]):.3f} ms > threshold {limit:g} ms"
        for name, limit in spec.thresholds_ms.items()
        if float(figures[name]) > limit
    ]
    if over:
        raise LatencyExceeded(
            f"{what}: latency over threshold: {'; '.join(over)} ({latency.summary()})"
        )
