"""run_model checks a compiled artifact against the board before anything is deployed: a real
board (its agent replaced by a fake that records what it is sent and answers ``versions`` as
the rknn_native adapter does) refuses a model built for another platform or by a toolkit newer
than its runtime, with nothing sent; a simulated board checks the target platform of the
artifact its manifest lists, and runs its own runtime unchecked."""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.errors import CompatibilityError, DeviceError
from npu_hil.harness.farm import Farm
from npu_hil.harness.farm.session import BoardSession
from npu_hil.harness.pipeline import run_model

DATA = Path(__file__).resolve().parents[1] / "data" / "artifacts" / "rockchip"
RT_160 = {
    "library": "/usr/lib/librknnrt.so",
    "api_version": "1.6.0 (9a7b5d24c@2023-12-13T17:31:11)",
    "drv_version": "0.9.8",
}
RT_250 = {
    "library": "/usr/lib/librknnrt.so",
    "api_version": "2.5.0 (74ea630ce@2026-09-29)",
    "drv_version": "0.9.8",
}
INVENTORY = """\
manifest: m.json
boards:
  - {name: rk3566-01, target: rk3566, backend: sim, transport: local}
  - {name: rk3588-01, target: rk3588, backend: sim, transport: local}
"""


class Deployed(DeviceError):
    """What the fake agent raises once a job reached it: the check let the run through."""


class FakeAgent:
    """The board's agent as run_model sees it: ``versions`` answered as the adapter reports,
    every job recorded (and refused, so nothing runs)."""

    def __init__(self, versions: Mapping[str, str]) -> None:
        self.answer = dict(versions)
        self.asked: list[str] = []
        self.jobs: list[Any] = []

    def versions(self, adapter: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        self.asked.append(adapter)
        return dict(self.answer)

    def submit(self, spec: Any, arrays: Any) -> Any:
        self.jobs.append(spec)
        raise Deployed(f"deployed {spec.model.name}")

    def close(self, timeout: float = 30.0) -> None:
        pass


@pytest.fixture
def farm(tmp_path: Path) -> Iterator[Farm]:
    for name in ("probe-rk3566-i8.rknn", "probe-rk3588-i8.rknn", "probe.onnx"):
        shutil.copy(DATA / name, tmp_path / name)
    manifest = {
        "version": 1,
        "models": {
            # The rk3566 row lists the rk3588 build: a doctored manifest, as a copy-paste makes.
            "probe": {
                "onnx": "probe.onnx",
                "artifacts": {"rk3566": "probe-rk3588-i8.rknn", "rk3588": "probe-rk3588-i8.rknn"},
            },
            "conv3x3": {
                "onnx": "probe.onnx",
                "artifacts": {"rk3566": "probe-rk3588-i8.rknn", "rk3588": "probe-rk3588-i8.rknn"},
            },
        },
    }
    (tmp_path / "m.json").write_text(json.dumps(manifest))
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    with Farm(tmp_path / "inventory.yaml", workdir=tmp_path / "work") as opened:
        yield opened


def hardware(farm: Farm, board: str, versions: Mapping[str, str]) -> tuple[BoardSession, FakeAgent]:
    agent = FakeAgent(versions)
    session = dataclasses.replace(
        farm.session(board),
        simulated=False,
        adapter="rknn_native",
        adapter_options={},
        client=agent,
    )
    return session, agent


INPUT = {"input": np.zeros((1, 3, 4, 8), np.uint8)}


def test_a_model_for_another_platform_is_refused_before_deploying(
    farm: Farm,
) -> None:
    session, agent = hardware(farm, "rk3566-01", RT_160)
    with pytest.raises(CompatibilityError) as caught:
        run_model(session, "probe", INPUT)
    assert caught.value.message.startswith(
        "model probe-rk3588-i8.rknn built by toolkit 2.5.0 for rk3588; board rk3566-01 (rk3566) "
        "runtime 1.6.0: the target platform differs ("
    )
    assert agent.asked == ["rknn_native"] and agent.jobs == []  # nothing was sent
    assert session.breaker is not None and not session.breaker.failures  # not infrastructure


def test_an_older_runtime_alone_is_deployed_with_a_warning(farm: Farm) -> None:
    # Measured: librknnrt 1.6.0 loads rknn-toolkit2 2.5.0 models, so the pair is not refused.
    session, agent = hardware(farm, "rk3588-01", RT_160)
    with pytest.raises(Deployed, match=r"deployed probe-rk3588-i8\.rknn"):
        run_model(session, "probe", INPUT)
    assert [job.model.name for job in agent.jobs] == ["probe-rk3588-i8.rknn"]


def test_a_matching_pair_is_deployed(farm: Farm) -> None:
    session, agent = hardware(farm, "rk3588-01", RT_250)
    with pytest.raises(Deployed, match=r"deployed probe-rk3588-i8\.rknn"):
        run_model(session, "probe", INPUT)
    assert [job.model.name for job in agent.jobs] == ["probe-rk3588-i8.rknn"]


def test_a_runtime_that_says_its_version_only_after_a_load_is_not_refused(farm: Farm) -> None:
    # rknn_native knows api_version from the first load on: before it, only the library path.
    session, agent = hardware(farm, "rk3588-01", {"library": "/usr/lib/librknnrt.so"})
    with pytest.raises(Deployed):
        run_model(session, "probe", INPUT)
    assert len(agent.jobs) == 1


def test_a_damaged_artifact_is_refused_before_deploying(farm: Farm, tmp_path: Path) -> None:
    (tmp_path / "probe-rk3588-i8.rknn").write_bytes(b"RKNN" + bytes(10))
    session, agent = hardware(farm, "rk3588-01", RT_250)
    with pytest.raises(
        CompatibilityError, match=r"probe-rk3588-i8\.rknn: not a compiled RKNN model"
    ):
        run_model(session, "probe", INPUT)
    assert agent.jobs == []


@pytest.mark.slow
def test_a_simulated_board_checks_the_listed_artifacts_target_only(farm: Farm) -> None:
    x = {"input": np.random.default_rng(0).integers(0, 255, (1, 3, 4, 8)).astype(np.uint8)}
    ok = run_model(farm.session("rk3588-01"), "conv3x3", x)
    assert ok.ok and ok.simulated
    assert {f["check"]: f["status"] for f in ok.compatibility} == {
        "target-platform": "ok",
        "runtime": "skipped",
    }
    with pytest.raises(
        CompatibilityError, match=r"board rk3566-01 \(rk3566\): the target platform differs"
    ):
        run_model(farm.session("rk3566-01"), "conv3x3", x)


@pytest.mark.slow
def test_a_simulated_run_of_a_model_without_an_artifact_has_no_findings(farm: Farm) -> None:
    x = {"input": np.random.default_rng(0).integers(0, 255, (1, 3, 4, 8)).astype(np.uint8)}
    run = run_model(farm.session("rk3566-01"), "identity", x)
    assert run.ok and run.compatibility == ()


class SilentAgent(FakeAgent):
    """An adapter that cannot say its versions (the agent answers with a DeviceError)."""

    def versions(self, adapter: str, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        self.asked.append(adapter)
        raise DeviceError("rknn_native: librknnrt.so not found")


def test_an_adapter_that_cannot_say_its_versions_leaves_the_runtime_unknown(farm: Farm) -> None:
    agent = SilentAgent({})
    session = dataclasses.replace(
        farm.session("rk3588-01"), simulated=False, adapter="rknn_native", client=agent
    )
    with pytest.raises(Deployed):  # the target matches; the runtime is unknown, not refused
        run_model(session, "probe", INPUT)
    assert agent.asked == ["rknn_native"] and len(agent.jobs) == 1
