"""One simulated job through the real path, as a ratio to onnxruntime in-process, same run.

    python benchmarks/bench_agent.py [--jobs 20]

The job: the identity reference model (or ``--model conv3x3``) on a 1x3x224x224 uint8 input,
target rk3588, through
``AgentClient`` → ``LocalTransport`` → the board agent (a persistent session, its own process) →
the ``sim`` adapter, and back with every file checksummed. The baseline: onnxruntime running the
same model on the same input in this process. The breakdown says where the time goes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--model", choices=("identity", "conv3x3"), default="identity")
    args = parser.parse_args(argv)

    from npu_hil.harness.agent.client import AgentClient
    from npu_hil.harness.agent.protocol import InputSpec, JobSpec
    from npu_hil.harness.models import build, save
    from npu_hil.harness.models.reference import session
    from npu_hil.harness.transport.local import LocalTransport

    shape = (1, 3, 224, 224)
    tensor = np.random.default_rng(0).integers(0, 255, shape, endpoint=True).astype(np.uint8)
    with tempfile.TemporaryDirectory() as scratch:
        model_path = Path(scratch) / f"{args.model}.onnx"
        model = build(args.model, shape)
        save(model, model_path)
        runtime = session(model)
        feed = {runtime.get_inputs()[0].name: _as_model_input(runtime, tensor)}
        baseline = _median(lambda: runtime.run(None, feed), args.jobs)

        repo = str(Path(__file__).resolve().parents[1])
        env = {"PYTHONPATH": os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH")) if p)}
        transport = LocalTransport(Path(scratch) / "board", python=sys.executable, env=env)
        spec = JobSpec(
            job_id="bench",
            adapter="sim",
            model=model_path,
            inputs=(
                InputSpec(
                    name=runtime.get_inputs()[0].name, layout="NCHW", shape=shape, dtype="uint8"
                ),
            ),
            adapter_options={"target": "rk3588"},
        )
        with AgentClient(transport) as client:
            start = time.perf_counter()
            first = client.submit(spec, [tensor])
            first.raise_for_errors()
            cold = time.perf_counter() - start
            results = []

            def one() -> None:
                results.append(client.submit(spec, [tensor]))

            warm = _median(one, args.jobs)
        timings = results[-1].timings
    print(f"{args.model} {list(shape)} uint8 on simulated rk3588, {args.jobs} jobs (median)")
    print("| what | ms | ratio to onnxruntime in-process |")
    print("|---|---|---|")
    print(f"| onnxruntime in-process | {baseline * 1e3:.2f} | 1.00 |")
    print(f"| one job, warm session | {warm * 1e3:.2f} | {warm / baseline:.1f} |")
    print(f"| first job (starts the agent) | {cold * 1e3:.1f} | {cold / baseline:.0f} |")
    print(
        f"agent-side: run {timings.run_s * 1e3:.2f} ms, copy {timings.copy_s * 1e3:.2f} ms, "
        f"total {timings.total_s * 1e3:.2f} ms; the rest is job files, transfer and checks"
    )
    return 0


def _as_model_input(runtime: object, tensor: np.ndarray) -> np.ndarray:
    kind = runtime.get_inputs()[0].type  # type: ignore[attr-defined]
    return tensor.astype(np.float32) if "float" in kind else tensor


def _median(fn: object, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


if __name__ == "__main__":
    sys.exit(main())
