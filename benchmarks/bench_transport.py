"""SshTransport against OpenSSH's own tools, same sshd, same run.

    python benchmarks/bench_transport.py [--mb 64] [--repeat 3]

Starts a real OpenSSH ``sshd`` on 127.0.0.1 (as the SSH tests do) and measures, best of
``--repeat``:
- SFTP upload and download of ``--mb`` MB through ``SshTransport.put``/``get`` (with and without
  the size + sha256 check) as a ratio of throughput to OpenSSH ``scp`` on the same file (target at
  least 0.8);
- a cached redeploy of the agent bundle (``AgentClient.deploy`` when the board already has it) as
  a fraction of the first deploy (target at most 5%);
- recovery after the TCP connection is cut (a proxy resets it): the time of the next small ``put``
  (reconnect included) against a normal small ``put``.
"""

from __future__ import annotations

import argparse
import os
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    from harness.agent.client import AgentClient
    from harness.transport.ssh import SshTransport
    from tests.transport.conftest import start_sshd, stop_sshd
    from tests.transport.faultproxy import FaultProxy

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

            def transport(port: int, verify: bool = True) -> SshTransport:
                return SshTransport(
                    "127.0.0.1",
                    port,
                    sshd.user,
                    workdir=str(board),
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

            t_scp_up = best(args.repeat, lambda: run([*scp, str(src), f"{remote}/scp.bin"]))
            t_scp_down = best(args.repeat, lambda: run([*scp, f"{remote}/scp.bin", str(back)]))
            t_put = best(args.repeat, lambda: ssh.put(src, "sftp.bin"))
            t_get = best(args.repeat, lambda: ssh.get("sftp.bin", back))
            t_put_raw = best(args.repeat, lambda: raw.put(src, "raw.bin"))
            t_get_raw = best(args.repeat, lambda: raw.get("raw.bin", back))

            # Deploy: a fresh board directory each time for the first deploy.
            first_times, cached_times = [], []
            for i in range(args.repeat):
                fresh = transport(sshd.port)
                fresh._workdir = str(scratch / f"deploy{i}")  # a board that has nothing yet
                fresh.exists("x")  # connect (and create the workdir) outside the clock
                started = time.perf_counter()
                AgentClient(fresh, scratch=scratch / "jobs").deploy()
                first_times.append(time.perf_counter() - started)
                started = time.perf_counter()
                AgentClient(fresh, scratch=scratch / "jobs").deploy()
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
    print(f"SshTransport vs OpenSSH on 127.0.0.1, {mb} MB, best of {args.repeat}")
    print("| what | time | MB/s | ratio | target |")
    print("|---|---|---|---|---|")
    print(f"| scp upload | {t_scp_up:.3f} s | {mb / t_scp_up:.0f} | 1.00 | |")
    print(f"| scp download | {t_scp_down:.3f} s | {mb / t_scp_down:.0f} | 1.00 | |")
    for name, t, base in (
        ("SFTP put (size+sha256 checked)", t_put, t_scp_up),
        ("SFTP put (unchecked)", t_put_raw, t_scp_up),
        ("SFTP get (size+sha256 checked)", t_get, t_scp_down),
        ("SFTP get (unchecked)", t_get_raw, t_scp_down),
    ):
        print(f"| {name} | {t:.3f} s | {mb / t:.0f} | {base / t:.2f} x scp | >= 0.8 |")
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
