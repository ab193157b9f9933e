"""The agent's command line: serve requests on stdin/stdout, or listen on a socket
(``docs/runtime/agent.md``, The command line)."""

from __future__ import annotations

import argparse
import faulthandler
import logging
import os
import sys

from .agent import Agent, traceback_tail
from .folders import UnsafeFolder, check_workdir
from .job import MAX_JOB_INPUT_BYTES
from .loader import ADAPTERS_ENV, adapter_dirs_from
from .serve import listen, private_stdio, serve
from .wire import EXIT_FAILED, EXIT_OK

log = logging.getLogger("npu-hil-agent")


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="npu_hil_board", description="npu-hil board agent")
    parser.add_argument("--serve", action="store_true", help="serve framed jobs over stdin/stdout")
    parser.add_argument(
        "--listen",
        metavar="SOCKET",
        help="serve framed jobs on a Unix socket at this path, one connection at a time",
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=1800.0,
        metavar="S",
        help="with --listen: exit after this many seconds without a connection",
    )
    parser.add_argument(
        "--read-timeout",
        type=float,
        default=120.0,
        metavar="S",
        help="with --listen: drop a connection that sends no complete request for S seconds",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=8,
        metavar="N",
        help="with --listen: clients served at once (their requests take turns)",
    )
    parser.add_argument(
        "--max-job-bytes",
        type=int,
        default=MAX_JOB_INPUT_BYTES,
        metavar="N",
        help="the most a framed job's input buffers may add up to; a job past it is refused "
        "and the agent goes on",
    )
    parser.add_argument(
        "--root", required=True, help="the model cache: a job's model.path is relative to it"
    )
    parser.add_argument(
        "--adapters",
        action="append",
        default=[],
        metavar="DIR",
        help=f"extra adapter folder, searched first (repeatable; also ${ADAPTERS_ENV})",
    )
    parser.add_argument(
        "--model-cache", type=int, default=4, help="loaded models kept while the agent runs"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages to stderr")
    args = parser.parse_args(argv)
    if [bool(args.serve), args.listen is not None].count(True) != 1:
        parser.error("give one of --serve or --listen SOCKET")
    if not args.idle_timeout > 0:
        parser.error("--idle-timeout must be a positive number of seconds")
    if not args.read_timeout > 0:
        parser.error("--read-timeout must be a positive number of seconds")
    if not 0 < args.max_job_bytes <= MAX_JOB_INPUT_BYTES:
        parser.error(f"--max-job-bytes must be 1 to {MAX_JOB_INPUT_BYTES}")
    if args.max_connections < 1:
        parser.error("--max-connections must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="npu-hil-agent[%(process)d] %(levelname)s %(message)s",
    )
    # A segfault in a vendor library leaves a Python traceback in the board's log.
    faulthandler.enable(file=sys.stderr)
    stream = private_stdio(args.max_job_bytes) if args.serve else None
    if args.listen is not None:
        # Started in the background with stdout on /dev/null: what a vendor library prints
        # belongs in the log with the rest.
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    try:
        # The agent serves from its working directory, the board workdir.
        check_workdir(os.getcwd())
    except (OSError, UnsafeFolder) as exc:
        log.error("cannot start: %s", exc)
        return EXIT_FAILED
    try:
        agent = Agent(adapter_dirs_from(args.adapters), args.root, args.model_cache)
    except Exception as exc:
        log.error("cannot start: %s", traceback_tail(exc))
        return EXIT_FAILED
    if args.listen is not None:
        return listen(
            agent,
            args.listen,
            args.idle_timeout,
            args.read_timeout,
            args.max_connections,
            args.max_job_bytes,
        )
    assert stream is not None  # --serve
    status = serve(agent, stream)
    return EXIT_OK if status is None else status
