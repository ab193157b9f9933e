"""Fixtures of the history tests: pytester projects with one simulated board (the baseline's
plugin tests), and histories written the way a run leaves them, a measurements.json per run
folder and the index, through the store's own writers, with latency and accuracy series like a
simulated board's."""

from __future__ import annotations

import random
import textwrap
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

# Imported before pytester's first snapshot of sys.modules (see tests/plugin/conftest.py: a C
# extension imported inside one in-process run and again in the next aborts the interpreter).
import onnxruntime  # noqa: F401
import pytest

import npu_hil.harness.farm.farm
import npu_hil.harness.pipeline
import npu_hil.harness.report.writer
import npu_hil.harness.sim  # noqa: F401
from npu_hil.harness.history.model import CasePoint, RunEntry
from npu_hil.harness.history.store import update_index, write_measurements


def pytest_configure(config: pytest.Config) -> None:
    """Enable pytest's ``pytester`` plugin for these tests (as tests/plugin/conftest.py does)."""
    if config.pluginmanager.has_plugin("pytester"):
        return
    config.option.runpytest = getattr(config.option, "runpytest", "inprocess")
    config.option.lsof = getattr(config.option, "lsof", False)
    config.pluginmanager.import_plugin("pytester")


INVENTORY = """\
defaults:
  backend: sim
  fallback: sim
boards:
  - {name: rk3588-01, target: rk3588, backend: sim, transport: local}
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", inventory=INVENTORY)
    pytester.makeini(
        textwrap.dedent(
            """\
            [pytest]
            npu_hil_retry_backoff = 0.01
            """
        )
    )
    return pytester


START = datetime(2026, 11, 1, 2, 0, 0, tzinfo=timezone.utc)
NODE = "tests/hil/test_reference.py::test_reference_model[{name}-{board}]"


def run_id(index: int) -> str:
    stamp = START + timedelta(days=index)
    return f"{stamp:%Y%m%dT%H%M%SZ}-{index:06x}"


def nodeid(name: str, board: str) -> str:
    return NODE.format(name=name, board=board)


def latency(p50: float, runs: int = 20) -> dict[str, Any]:
    return {
        "runs": runs,
        "warmup": 2,
        "p50_ms": p50,
        "p90_ms": p50 * 1.05,
        "p99_ms": p50 * 1.1,
        "min_ms": p50 * 0.97,
        "max_ms": p50 * 1.12,
        "mean_ms": p50 * 1.01,
        "jitter_ms": p50 * 0.1,
        "source": "adapter",
    }


def write_history(
    root: Path,
    outcomes: Mapping[tuple[str, str], Sequence[str | None]],
    *,
    run_key: str = "key-nightly",
    first: int = 0,
    seed: int = 1,
    p50: Callable[[int], float] | None = None,
    snr: Callable[[int], float | str] | None = None,
) -> list[RunEntry]:
    """One run per position of the outcome lists (None: the case was not in that run); each
    point's p50 ~0.075 ms with a ±2 % spread and an SNR ~42 dB unless ``p50`` / ``snr`` (run
    index → value) say otherwise. Returns the index after the last run."""
    rng = random.Random(seed)
    length = max(len(v) for v in outcomes.values())
    kept: list[RunEntry] = []
    for index in range(length):
        rid = run_id(first + index)
        points = []
        for (board, node), trail in outcomes.items():
            outcome = trail[index] if index < len(trail) else None
            if outcome is None:
                continue
            ran = outcome in ("passed", "failed")
            value = p50(index) if p50 else 0.075 * (1 + rng.uniform(-0.02, 0.02))
            figure = snr(index) if snr else round(42 + rng.uniform(-0.2, 0.2), 3)
            points.append(
                CasePoint(
                    run_id=rid,
                    nodeid=node,
                    board=board,
                    target=board.rsplit("-", 1)[0],
                    outcome=outcome,
                    ran_on="sim" if ran else "",
                    latency=latency(value) if ran else None,
                    accuracy={"snr_db": figure, "cosine": 0.99998} if ran else None,
                )
            )
        counts: dict[str, int] = {}
        for point in points:
            counts[point.outcome] = counts.get(point.outcome, 0) + 1
        entry = RunEntry(
            run_id=rid,
            run_key=run_key,
            started=(START + timedelta(days=first + index)).timestamp(),
            complete=True,
            counts=counts,
            cases=len(points),
        )
        run_dir = root / rid
        run_dir.mkdir(parents=True, exist_ok=True)
        write_measurements(run_dir, entry, points)
        kept = update_index(root, entry)
    return kept


@pytest.fixture
def reports(tmp_path: Path) -> Path:
    root = tmp_path / "reports"
    root.mkdir()
    return root


WriteHistory = Callable[..., list[RunEntry]]


@pytest.fixture
def write(reports: Path) -> WriteHistory:
    """``write(outcomes, **options)``: :func:`write_history` into the ``reports`` folder."""

    def writer(outcomes: Mapping[tuple[str, str], Sequence[str | None]], **options: Any) -> Any:
        return write_history(reports, outcomes, **options)

    return writer
