"""SshTransport against OpenSSH's own tools, same sshd, same run.

    python benchmarks/bench_transport.py [--mb 64] [--repeat 3] [--board-hasher auto|sha256sum]

Starts a real OpenSSH ``sshd`` on 127.0.0.1 (as the SSH tests do) and measures, best of
``--repeat``:
- upload and download of ``--mb`` MB through ``SshTransport.put``/``get`` (with and without the
  size + sha256 check; files that large are streamed over an exec channel) as a ratio of
  throughput to OpenSSH ``scp`` on the same file (target at least 0.8). The transfers run in
  rounds, each round every case once in turn, so a change in the machine's load hits them alike;
  the ratio is of the best times, and the range is of the ratios within each round;
- a model sent into the board's cache in the agent's stream (``AgentClient.deploy_model``: chunked
  frames to a resident agent, which writes each chunk and hashes the whole once it is there),
  the way every model now travels, as the same ratio to ``scp``;
- a cached redeploy of the agent bundle (``AgentClient.deploy`` when the board already has it) as
  a fraction of the first deploy (target at most 5%);
- ``--board-hasher sha256sum``: the board hashes with ``sha256sum`` even where it has openssl,
  as a board without openssl would (busybox's and coreutils' sha256sum use no SHA instructions);
- recovery after the TCP connection is cut (a proxy resets it): the time of the next small ``put``
  (reconnect included) against a normal small ``put``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def best(repeat: int, action: Callable[[], None]) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return min(times)


def rounds(repeat: int, cases: dict[str, Callable[[], None]]) -> dict[str, list[float]]:
    """The times of every case, ``repeat`` rounds of each case once in turn."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, action in cases.items():
            started = time.perf_counter()
            action()
            times[name].append(time.perf_counter() - started)
    return times


def ratio_row(name: str, mb: int, times: list[float], base: list[float]) -> str:
    """A table row: the best time, its throughput, the ratio of throughput to the baseline's
    best, and the range of that ratio round by round."""
    per_round = [b / t for t, b in zip(times, base, strict=True)]
    t = min(times)
    return (
        f"| {name} | {t:.3f} s | {mb / t:.0f} | {min(base) / t:.2f} x scp "
        f"({min(per_round):.2f}-{max(per_round):.2f}) | >= 0.8 |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--board-hasher", choices=["auto", "sha256sum"], default="auto")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    from npu_hil.harness.agent.client import CACHE_DIR, AgentClient
    from npu_hil.harness.transport.ssh import SshTransport
    from npu_hil.harness.transport.ssh import files as ssh_stream
    from tests.transport.conftest import start_sshd, stop_sshd
    from tests.transport.faultproxy import FaultProxy

    if args.board_hasher == "sha256sum":
        ssh_stream.BOARD_SHA256 = "sha256() { sha256sum; }; "
    with tempfile.TemporaryDirectory(prefix="bench-transport-") as scratch_name:
        scratch = Path(scratch_name)
        try:
            process, sshd = start_sshd(scratch / "sshd")
        except BaseException as exc:  # pytest.skip outside pytest: sshd missing
            print(f"skipped: {exc}")
            return 0
        proxy = FaultProxy(sshd.port)
        try:
            known = scratch / "known_hosts"
            known.write_text(
                sshd.known_hosts_line() + f"[127.0.0.1]:{proxy.port} {sshd.host_pub}\n"
            )
            board = scratch / "board"

            def transport(port: int, verify: bool = True, workdir: Path = board) -> SshTransport:
                return SshTransport(
                    "127.0.0.1",
                    port,
                    sshd.user,
                    workdir=str(workdir),
                    python=sys.executable,
                    key_file=sshd.client_key,
                    known_hosts=known,
                    user_known_hosts=None,
                    verify=verify,
                    retries=5,
                    backoff_s=0.05,
                )

            ssh = transport(sshd.port)
            raw = transport(sshd.port, verify=False)
            src = scratch / "payload.bin"
            src.write_bytes(os.urandom(args.mb << 20))
            back = scratch / "back.bin"
            ssh.put(src, "warm.bin")  # connect outside the clock
            raw.put(src, "warm.bin")
            scp = [
                "scp",
                "-q",
                "-B",
                "-i",
                str(sshd.client_key),
                "-P",
                str(sshd.port),
                "-o",
                f"UserKnownHostsFile={known}",
                "-o",
                "StrictHostKeyChecking=yes",
                "-o",
                "ControlMaster=no",
            ]
            remote = f"{sshd.user}@127.0.0.1:{board}"

            def run(cmd: list[str]) -> None:
                subprocess.run(cmd, check=True, timeout=600)

            # A resident agent, started outside the clock; each round sends the model afresh
            # (the board's copy and the client's memory of it, the file's sha256 included,
            # are forgotten after each send).
            agent = AgentClient(ssh)
            agent.ping()

            def send_model() -> None:
                agent.deploy_model(src)
                agent._deployed_models.clear()
                agent._model_shas.clear()
                shutil.rmtree(board / CACHE_DIR)

            up = rounds(
                args.repeat,
                {
                    "scp": lambda: run([*scp, str(src), f"{remote}/scp.bin"]),
                    "checked": lambda: ssh.put(src, "put.bin"),
                    "unchecked": lambda: raw.put(src, "raw.bin"),
                    "model": send_model,
                },
            )
            agent.close()
            down = rounds(
                args.repeat,
                {
                    "scp": lambda: run([*scp, f"{remote}/scp.bin", str(back)]),
                    "checked": lambda: ssh.get("put.bin", back),
                    "unchecked": lambda: raw.get("raw.bin", back),
                },
            )

            # Deploy: a fresh board directory each time for the first deploy.
            first_times, cached_times = [], []
            for i in range(args.repeat):
                fresh = transport(sshd.port, workdir=scratch / f"deploy{i}")  # has nothing yet
                fresh.exists("x")  # connect (and create the workdir) outside the clock
                started = time.perf_counter()
                AgentClient(fresh).deploy()
                first_times.append(time.perf_counter() - started)
                started = time.perf_counter()
                AgentClient(fresh).deploy()
                cached_times.append(time.perf_counter() - started)
                fresh.close()
            t_first, t_cached = min(first_times), min(cached_times)

            # Recovery after a cut.
            small = scratch / "small.bin"
            small.write_bytes(os.urandom(4096))
            cut = transport(proxy.port)
            cut.put(small, "s.bin")
            t_small = best(args.repeat, lambda: cut.put(small, "s.bin"))
            recoveries = []
            for _ in range(args.repeat):
                proxy.cut_now()
                started = time.perf_counter()
                cut.put(small, "s.bin")
                recoveries.append(time.perf_counter() - started)
            t_recover = min(recoveries)
            for t in (ssh, raw, cut):
                t.close()
        finally:
            proxy.close()
            stop_sshd(process)

    mb = args.mb
    print(
        f"SshTransport vs OpenSSH on 127.0.0.1, {mb} MB, best of {args.repeat}, "
        f"board hasher {args.board_hasher}"
    )
    print("| what | time | MB/s | ratio | target |")
    print("|---|---|---|---|---|")
    for direction, cases in (("upload", up), ("download", down)):
        t_scp = min(cases["scp"])
        print(f"| scp {direction} | {t_scp:.3f} s | {mb / t_scp:.0f} | 1.00 | |")
    for name, times, base in (
        ("put (size+sha256 checked)", up["checked"], up["scp"]),
        ("put (unchecked)", up["unchecked"], up["scp"]),
        ("model in the agent's stream", up["model"], up["scp"]),
        ("get (size+sha256 checked)", down["checked"], down["scp"]),
        ("get (unchecked)", down["unchecked"], down["scp"]),
    ):
        print(ratio_row(name, mb, times, base))
    print(f"| first agent deploy | {t_first * 1e3:.1f} ms | | 1.00 | |")
    print(
        f"| cached redeploy | {t_cached * 1e3:.1f} ms | | {t_cached / t_first:.1%} of first "
        "| <= 5% |"
    )
    print(f"| small put, connected | {t_small * 1e3:.1f} ms | | 1.00 | |")
    print(
        f"| small put after a cut (reconnect) | {t_recover * 1e3:.1f} ms | | "
        f"{t_recover / t_small:.1f} x | |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
