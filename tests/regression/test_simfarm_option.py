"""``--simfarm``: bad values are usage errors, the farm serves every xdist worker, and it is gone
when the run ends, even a run whose tests fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from simfarm_checks import leftovers, require_link

from npu_hil.harness.report.runs import RUN_ID_PATTERN

# End to end: real servers, boards or whole runs in subprocesses (README: test tiers).
pytestmark = pytest.mark.e2e

pytest.importorskip("xdist")

TESTS = """
import os

import numpy as np
import pytest

@pytest.mark.soc("rk3588")
@pytest.mark.parametrize("n", range(4))
def test_runs_over_ssh(board, run_model, n):
    x = np.arange(3 * 4 * 4, dtype=np.int8).reshape(1, 3, 4, 4)
    assert run_model("conv3x3", {"input": x}).ok
    with open(f"worker-{os.environ.get('PYTEST_XDIST_WORKER')}-{n}", "w") as f:
        f.write(board.transport_kind)

@pytest.mark.soc("rk3588")
def test_fails(board):
    assert board.transport_kind == "serial"
"""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--simfarm", "telnet"], "--simfarm 'telnet': expected ssh, serial or ssh,serial"),
        (["--simfarm", ""], "expected ssh, serial or ssh,serial"),
        (["--simfarm", "ssh", "--inventory", "x.yaml"], "leave out --inventory"),
    ],
)
def test_bad_simfarm_options_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess(*args, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_the_farm_serves_every_worker_and_is_gone_after_a_failing_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    require_link("ssh")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    pytester.makepyfile(TESTS)
    result = pytester.runpytest_subprocess(
        "--simfarm", "ssh", "--target", "rk3588", "-n", "2", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=4, failed=1)
    written = sorted(p.name for p in pytester.path.glob("worker-*"))
    assert len(written) == 4 and {n.split("-")[1] for n in written} == {"gw0", "gw1"}
    assert {p.read_text() for p in pytester.path.glob("worker-*")} == {"ssh"}
    (run,) = [p for p in (pytester.path / "reports").iterdir() if RUN_ID_PATTERN.match(p.name)]
    records = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
    assert {r["board"] for r in records} == {"rk3588-ssh-01"}
    assert not leftovers(tmp)
    assert not [p for p in tmp.iterdir() if p.name.startswith("npu-hil-simfarm-")]
