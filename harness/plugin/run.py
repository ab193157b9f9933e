"""The ``run_model`` fixture: one model run on the test's board, retried after infrastructure
trouble, recorded for the report; and :func:`assert_run_ok`, the failure with the diff in it.

    @pytest.mark.soc("rk3588", "rv1106")
    def test_detector_head_layout(run_model):
        result = run_model("detector.onnx", inputs={"images": frame})
        assert_run_ok(result)          # or: assert result.ok, result.summary()
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from npu_hil.harness.errors import TransportError
from npu_hil.harness.plugin.assertion import assert_run_ok
from npu_hil.harness.plugin.farm import breaker_event
from npu_hil.harness.plugin.records import ItemInfo, artifact_path, item_info, staging_dir
from npu_hil.harness.report.records import TensorFinding

if TYPE_CHECKING:
    import numpy as np
    import onnx

    from npu_hil.harness.farm.runner import ModelRun
    from npu_hil.harness.farm.session import BoardSession

__all__ = ["RunModel", "assert_run_ok", "run_model"]

RETRYABLE: tuple[type[BaseException], ...] = (TransportError, TimeoutError)


class RunModel:
    """Callable behind the ``run_model`` fixture (see :func:`harness.farm.runner.run_model`)."""

    def __init__(
        self,
        session: BoardSession,
        info: ItemInfo,
        *,
        retries: int,
        backoff_s: float,
        reports_dir: Path,
        config: pytest.Config,
    ) -> None:
        self.session = session
        self.info = info
        self.retries = retries
        self.backoff_s = backoff_s
        self.reports_dir = reports_dir
        self.config = config
        self.runs: list[ModelRun] = []

    def __call__(
        self,
        model: str | os.PathLike[str] | onnx.ModelProto,
        inputs: Mapping[str, np.ndarray],
        *,
        output_layout: str | None = None,
        **options: Any,
    ) -> ModelRun:
        """Run ``model`` with ``inputs``; ``output_layout`` asks the board's runtime for that
        native output layout; other keyword arguments go to ``harness.farm.runner.run_model``
        (``outputs``, ``tolerance``, ``padding``, ``input_layout``, ``faults``)."""
        from npu_hil.harness.farm.breaker import BoardBrokenError
        from npu_hil.harness.farm.runner import run_model

        session = self.session
        if output_layout is not None:
            adapter_options = {**session.adapter_options, "output_layout": output_layout}
            session = dataclasses.replace(session, adapter_options=adapter_options)
        attempt = 0
        while True:
            try:
                run = run_model(session, model, inputs, reports_dir=self.reports_dir, **options)
            except RETRYABLE as exc:
                if isinstance(exc, BoardBrokenError):
                    # Opened by this failure or an earlier one: no retry is paid for it.
                    self.info.board_events.append(breaker_event(exc.message))
                    raise
                if attempt >= self.retries:
                    raise
                message = getattr(exc, "message", None) or str(exc)
                self.info.retries.append(f"{type(exc).__name__}: {message}")
                time.sleep(self.backoff_s * 2**attempt)
                attempt += 1
                self.session.restart()
                continue
            self._record(run)
            return run

    def _record(self, run: ModelRun) -> None:
        self.runs.append(run)
        info = self.info
        info.simulated = info.simulated or run.simulated
        if run.simulated:
            info.ran_on = "sim"
        if not info.layout:
            info.layout = "+".join(dict.fromkeys(t.layout.name for t in run.tensors))
        info.runtime_versions.update({str(k): str(v) for k, v in run.versions.items()})
        info.artifact_hashes.update(run.artifact_hashes)
        for tensor in run.tensors:
            info.tensors.append(
                TensorFinding(
                    name=tensor.name,
                    role=tensor.role,
                    verdict=tensor.diff.verdict,
                    summary=tensor.diff.summary(),
                    heatmap=(
                        artifact_path(self.config, tensor.heatmap)
                        if tensor.heatmap is not None
                        else None
                    ),
                    attribute_findings=[f.message for f in tensor.disagreements],
                )
            )


def _backoff(config: pytest.Config) -> float:
    text = str(config.getini("npu_hil_retry_backoff"))
    try:
        value = float(text)
    except ValueError:
        raise pytest.UsageError(f"npu_hil_retry_backoff: expected seconds, got {text!r}") from None
    return max(value, 0.0)


@pytest.fixture
def run_model(request: pytest.FixtureRequest, board: BoardSession) -> RunModel:
    """Run a model on the test's board: pack → deploy → run → fetch → diff, in one call.

    Returns the :class:`~harness.farm.runner.ModelRun`; check it with :func:`assert_run_ok`.
    A TransportError or timeout is retried ``--hil-retries`` times with backoff, the board's
    agent restarted in between; after that it is the test's error. A board whose circuit
    breaker opened (``--hil-breaker`` infrastructure failures in a row) is not retried.
    """
    config = request.config
    return RunModel(
        board,
        item_info(request.node),
        retries=int(config.getoption("hil_retries")),
        backoff_s=_backoff(config),
        reports_dir=staging_dir(config),
        config=config,
    )
