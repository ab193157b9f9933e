"""Recovery without pytest: a plain script using ``Farm`` and ``run_model`` gets what a pytest run
gets (DESIGN: recovery is the farm's). The board here is a simulated runtime behind a real local
link whose interpreter fails the first time it is started (the health check sees a dead board,
the power cycle brings it back) and whose agent is killed under the first model run (the run is
retried with backoff and a fresh agent, and passes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from npu_hil.harness.errors import NpuHilError
from npu_hil.harness.farm import NO_RETRY, BoardBrokenError, RetryPolicy

ROOT = Path(__file__).resolve().parents[2]

# The board's python: dead on its first start (the board "fails once"), the real interpreter
# from the second on. Written out so the script below runs with nothing but the library.
FLAKY_PYTHON = """\
#!/bin/sh
count_file="$(dirname "$0")/starts"
count=$(cat "$count_file" 2>/dev/null || echo 0)
echo $((count + 1)) > "$count_file"
if [ "$count" -eq 0 ]; then
    echo "board not up yet" >&2
    exit 3
fi
PYTHONPATH="{root}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{python}" "$@"
"""

INVENTORY = """\
boards:
  - name: flaky-01
    target: rk3588
    backend: hw
    fallback: none
    adapter: sim
    python: {python}
    transport: local
    power: {{command: {{cycle: [true]}}}}
"""

SCRIPT = """\
import json, os, signal, sys, threading
import numpy as np
from npu_hil.harness.farm import Farm, RetryPolicy
from npu_hil.harness.pipeline import run_model

inventory, workdir = sys.argv[1], sys.argv[2]
retried = []
with Farm(inventory, workdir=workdir, retry=RetryPolicy(retries=1, backoff_s=0.2)) as farm:
    session = farm.ready("flaky-01")  # health checked, power-cycled once, checked again
    condition = farm.condition("flaky-01")
    session.client.ping()
    # Killed under the first attempt only: its hang outlasts the kill, the retry's does not.
    threading.Timer(0.5, os.kill, (session.client.agent_pid, signal.SIGKILL)).start()
    x = {"input": np.zeros((1, 3, 2, 2), dtype=np.uint8)}
    run = run_model(session, "identity", x, faults=[{"name": "hang", "seconds": 2}],
                    on_retry=retried.append)
    print(json.dumps({"ok": run.ok, "simulated": run.simulated, "events": condition.events,
                      "problem": condition.problem, "retried": retried,
                      "breaker_failures": farm.breaker("flaky-01").failures}))
"""


@pytest.mark.slow
def test_a_script_gets_the_health_check_power_cycle_and_retries(tmp_path: Path) -> None:
    python = tmp_path / "board" / "python"
    python.parent.mkdir()
    python.write_text(FLAKY_PYTHON.format(root=ROOT, python=sys.executable))
    python.chmod(0o755)
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(INVENTORY.format(python=python))
    script = tmp_path / "nightly.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    done = subprocess.run(
        [sys.executable, str(script), str(inventory), str(tmp_path / "farm")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    # The dead board was power-cycled and came back: what a pytest run's report shows.
    assert found["problem"] is None
    (event,) = found["events"]
    assert event.startswith("power cycled: ") and event.endswith("; healthy again")
    assert "did not start" in event and "board not up yet" in event
    # The killed agent cost one retry, paid after backoff with a fresh agent; the run passed.
    assert found["ok"] and found["simulated"]
    (retry,) = found["retried"]
    assert retry.startswith("AgentKilledError: ") and "SIGKILL" in retry
    # The breaker counted the failure; the run that answered ended the run of failures.
    assert found["breaker_failures"] == []
    assert (python.parent / "starts").read_text().strip() == "3"  # dead, cycled, retried


def test_the_policy_retries_only_infrastructure_with_doubling_backoff() -> None:
    assert [RetryPolicy(backoff_s=0.5).delay(n) for n in range(3)] == [0.5, 1.0, 2.0]
    attempts: list[int] = []
    heard: list[str] = []
    restarts: list[int] = []

    def flaky() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise TimeoutError("no answer")
        return "done"

    policy = RetryPolicy(retries=2, backoff_s=0.0)
    assert policy.run(flaky, restart=lambda: restarts.append(1), on_retry=heard.append) == "done"
    assert heard == ["TimeoutError: no answer"] * 2 and len(restarts) == 2

    def refused() -> str:
        raise NpuHilError("not infrastructure")

    with pytest.raises(NpuHilError, match="not infrastructure"):
        policy.run(refused, restart=lambda: pytest.fail("no restart for a refusal"))

    def broken() -> str:
        raise BoardBrokenError("open", board="b", cause="TransportError: gone")

    with pytest.raises(BoardBrokenError):
        policy.run(broken, restart=lambda: pytest.fail("an open breaker is not retried"))
    attempts.clear()
    with pytest.raises(TimeoutError):
        NO_RETRY.run(flaky, restart=lambda: pytest.fail("no retries left"))
    assert len(attempts) == 1


def test_negative_policies_are_refused() -> None:
    with pytest.raises(NpuHilError, match="retries must be 0 or more"):
        RetryPolicy(retries=-1)
    with pytest.raises(NpuHilError, match="backoff_s must be 0 or more"):
        RetryPolicy(backoff_s=-0.5)
