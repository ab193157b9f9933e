"""Bad inputs for every ``npu-hil`` subcommand, and a runner that tells a typed refusal from a
traceback or a hang.

Each case runs ``npu_hil.harness.cli.main.main(argv)`` in a child forked from a fork server
(cheap: the modules are already imported there) with its stderr on a pipe, an address-space
limit (an allocation the input asked for fails fast instead of eating the machine) and a timeout
(a FIFO or ``/dev/zero`` read without a bound shows as a hang, and the child is killed). The
promise under test: exit 2 and exactly one non-empty line on stderr, no ``Traceback``.

Run as a script for the figures of the closing note (inputs tried, tracebacks, hangs)::

    python tests/cli/cli_bad_inputs.py            # prints the counts, exit 1 when any case broke
    python tests/cli/cli_bad_inputs.py --verbose  # and every broken case with its stderr
    python tests/cli/cli_bad_inputs.py --match pack-npy   # only the cases whose id holds this
"""

from __future__ import annotations

import gzip
import json
import multiprocessing
import multiprocessing.forkserver
import os
import resource
import select
import signal
import sys
import time
import traceback
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np

CASE_TIMEOUT = 10.0
"""Seconds a case may take: a refusal takes milliseconds, model analysis well under a second."""
CHILD_ADDRESS_SPACE = 3 << 30
"""The child's RLIMIT_AS: the interpreter, numpy and onnx need a few hundred MiB; an input that
makes the CLI allocate gigabytes hits this and dies as a MemoryError (a traceback)."""

# The cases fork from a server process that has one thread and the modules already imported:
# cheap, and free of what a fork of a threaded process (a pytest-xdist worker) may inherit, such
# as a lock another thread held.
FORK_SERVER = multiprocessing.get_context("forkserver")
PRELOAD = ["cli_warm", __name__]

KL730 = ["--target", "kl730", "--layout", "1W16C8B"]
ONE_GROUP = [*KL730, "--shape", "1,16,1,1", "--dtype", "int8"]


@dataclass(frozen=True)
class Outcome:
    """What one case did: its exit status (None when killed as a hang) and its stderr."""

    code: int | None
    stderr: str
    seconds: float

    @property
    def hung(self) -> bool:
        return self.code is None

    @property
    def traceback(self) -> bool:
        return "Traceback" in self.stderr

    @property
    def lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]

    @property
    def typed(self) -> bool:
        """The promise: exit 2, one line, no traceback."""
        return self.code == 2 and len(self.lines) == 1 and not self.traceback


def _child(argv: list[str], cwd: str, env: dict[str, str], stderr: Connection) -> None:
    """One case, in a child of the fork server: never returns."""
    code = 1
    try:
        os.setsid()
        os.dup2(stderr.fileno(), 2)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        sys.stdin = open(0)  # noqa: SIM115 - the child ends with os._exit
        sys.stdout = open(1, "w")  # noqa: SIM115
        sys.stderr = open(2, "w")  # noqa: SIM115
        os.environ.clear()  # the caller's environment now, not the server's when it started
        os.environ.update(env)
        resource.setrlimit(resource.RLIMIT_AS, (CHILD_ADDRESS_SPACE, CHILD_ADDRESS_SPACE))
        os.chdir(cwd)
        from npu_hil.harness.cli.main import main

        code = int(main(argv))
    except SystemExit as exc:
        # as the interpreter ends on it: None is 0, a number its status, anything else printed
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stderr.flush()
        finally:
            os._exit(code)


def run_case(argv: list[str], *, cwd: Path, timeout: float = CASE_TIMEOUT) -> Outcome:
    """``main(argv)`` in a child of the fork server, as the console script would run it."""
    started = time.monotonic()
    reader, writer = FORK_SERVER.Pipe(duplex=False)
    child = FORK_SERVER.Process(target=_child, args=(argv, str(cwd), dict(os.environ), writer))
    child.start()
    writer.close()  # the child's copy is the only write end left: its exit is the end of stderr
    chunks: list[bytes] = []
    deadline = started + timeout
    hung = False
    with reader:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                hung = True
                break
            ready, _, _ = select.select([reader.fileno()], [], [], left)
            if not ready:
                continue
            chunk = os.read(reader.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
        if hung:
            # The child leads its own session: its group goes too (nothing else is in it), or
            # the child alone if it has not come as far as its setsid.
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                child.kill()
        child.join()
    code = None if hung else child.exitcode
    child.close()
    return Outcome(
        code, b"".join(chunks).decode("utf-8", errors="replace"), time.monotonic() - started
    )


# ----------------------------------------------------------------------------- the inputs


def _npy_header(shape: tuple[int, ...], descr: str = "|i1", fortran: bool = False) -> bytes:
    header = repr({"descr": descr, "fortran_order": fortran, "shape": shape})
    body = header.encode("latin1")
    pad = 64 - (10 + len(body) + 1) % 64
    body += b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little") + body


def _write_npy_files(root: Path) -> dict[str, Path]:
    """Bad .npy files, by name. Every one is refused for a 1x16x1x1 int8 tensor."""
    npy = root / "npy"
    npy.mkdir()
    files: dict[str, bytes] = {
        "empty": b"",
        "magic-only": b"\x93NUMPY",
        "bad-magic": b"\x93NUMPZ\x01\x00" + b"\x00" * 120,
        "version-9": b"\x93NUMPY\x09\x00\x10\x00" + b" " * 16,
        "header-len-huge": b"\x93NUMPY\x01\x00\xff\xff" + b"{" * 100,
        "header-not-dict": b"\x93NUMPY\x01\x00\x10\x00[1, 2, 3]      \n",
        "header-garbage": b"\x93NUMPY\x01\x00\x10\x00{'descr': )    \n",
        "header-no-shape": _npy_header((1,)).replace(b"'shape'", b"'shapx'"),
        "huge-shape": _npy_header((1, 3, 100000, 100000)),
        "huge-shape-f8": _npy_header((1, 16, 100000, 100000), "<f8"),
        "truncated": _npy_header((1, 16, 1, 1)) + b"\x01" * 8,
        "too-long": _npy_header((1, 16, 1, 1)) + b"\x01" * 17,
        "negative-dim": _npy_header((1, -16, 1, 1)),
        "float-dim": _npy_header((1, 16.0, 1, 1)),  # type: ignore[arg-type]
        "object": _npy_header((1, 16, 1, 1), "|O") + b"\x00" * 128,
        "pickle-object": b"",
        "structured": b"",
        "subarray": b"",
        "unicode": _npy_header((1, 16, 1, 1), "<U1") + b"\x00" * 64,
        "bytes": _npy_header((1, 16, 1, 1), "|S1") + b"\x00" * 16,
        "void": _npy_header((1, 16, 1, 1), "|V1") + b"\x00" * 16,
        "datetime": _npy_header((1, 16, 1, 1), "<M8[s]") + b"\x00" * 128,
        "bad-descr": _npy_header((1, 16, 1, 1), "<q9"),
        "zero-dim": _npy_header((1, 0, 1, 1)),
        "scalar": _npy_header(()) + b"\x01",
        "rank-9": _npy_header((1,) * 9) + b"\x01",
        "gzip": gzip.compress(np.zeros((1, 16, 1, 1), np.int8).tobytes()),
        "text": b"1 2 3 4\n",
    }
    paths = {}
    for name, data in files.items():
        path = npy / f"{name}.npy"
        path.write_bytes(data)
        paths[name] = path
    with (npy / "pickle-object.npy").open("wb") as handle:
        np.save(handle, np.array([{"a": 1}] * 16, dtype=object), allow_pickle=True)
    np.save(npy / "structured.npy", np.zeros((1, 16, 1, 1), dtype=[("a", "i1"), ("b", "f4")]))
    np.save(npy / "subarray.npy", np.zeros((1, 16, 1, 1), dtype=("i1", (2,))))
    return paths


def _write_kinds(root: Path) -> dict[str, Path]:
    """Paths that are not regular files (or not there): each must be refused by name, read
    never, blocked on never."""
    kinds = root / "kinds"
    kinds.mkdir()
    fifo = kinds / "fifo"
    os.mkfifo(fifo)
    os.mkfifo(kinds / "fifo.npy")
    (kinds / "folder").mkdir()
    (kinds / "folder.npy").mkdir()
    (kinds / "loop-a").symlink_to(kinds / "loop-b")
    (kinds / "loop-b").symlink_to(kinds / "loop-a")
    (kinds / "dangling").symlink_to(kinds / "nowhere")
    (kinds / "fifo-link").symlink_to(fifo)
    unreadable = kinds / "unreadable"
    unreadable.write_bytes(b"x")
    unreadable.chmod(0)
    sparse = kinds / "sparse"
    with sparse.open("wb") as handle:
        handle.truncate(20 << 30)  # 20 GiB of nothing: only a bound stops a read of it
    paths = {
        "fifo": fifo,
        "fifo-link": kinds / "fifo-link",
        "dev-zero": Path("/dev/zero"),
        "dev-urandom": Path("/dev/urandom"),
        "dev-null": Path("/dev/null"),
        "folder": kinds / "folder",
        "missing": kinds / "missing",
        "loop": kinds / "loop-a",
        "dangling": kinds / "dangling",
        "sparse-20g": sparse,
        "nul-in-name": Path(str(kinds / "nul") + "\x00x"),
        "not-a-dir-parent": unreadable / "child",
    }
    if os.geteuid() != 0:  # root reads a mode-0 file anyway
        paths["unreadable"] = unreadable
    return paths


def _write_onnx_files(root: Path) -> dict[str, Path]:
    """Models preflight cannot analyse: each is exit 2 (bad input), never 1 (a rule)."""
    import onnx
    from onnx import TensorProto, helper

    models = root / "onnx"
    models.mkdir()

    def conv_model(
        *, inputs: list[str] | None = None, in_type: int = TensorProto.FLOAT, **attrs: object
    ) -> onnx.ModelProto:
        x = helper.make_tensor_value_info("x", in_type, [1, 3, 8, 8])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
        w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3], [0.0] * 108)
        node = helper.make_node(
            "Conv", inputs if inputs is not None else ["x", "w"], ["y"], name="conv", **attrs
        )
        graph = helper.make_graph([node], "g", [x], [y], initializer=[w])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

    protos: dict[str, onnx.ModelProto] = {
        "conv-no-inputs": conv_model(inputs=[]),
        "conv-missing-weight": conv_model(inputs=["x", "nothere"]),
        "conv-dilations-1": conv_model(dilations=[2]),
        "conv-dilations-str": conv_model(dilations="ab"),
        "conv-group-str": conv_model(group="x"),
        "input-undefined-type": conv_model(in_type=TensorProto.UNDEFINED),
        "input-string-type": conv_model(in_type=TensorProto.STRING),
        "input-no-type": conv_model(),
        "no-graph-input": conv_model(),
    }
    protos["input-no-type"].graph.input[0].ClearField("type")
    del protos["no-graph-input"].graph.input[:]
    paths = {}
    for name, proto in protos.items():
        path = models / f"{name}.onnx"
        path.write_bytes(proto.SerializeToString())
        paths[name] = path
    raw = {
        "empty": b"",
        "garbage": b"\x00\x01not a protobuf\xff\xfe" * 10,
        "text": b"ir_version: 8\n",
        "truncated": conv_model().SerializeToString()[:40],
    }
    for name, data in raw.items():
        path = models / f"{name}.onnx"
        path.write_bytes(data)
        paths[name] = path
    return paths


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _write_json_files(root: Path, kind: str, texts: dict[str, str | bytes]) -> dict[str, Path]:
    folder = root / kind
    folder.mkdir()
    paths = {}
    for name, text in texts.items():
        path = folder / f"{name}.json"
        path.write_bytes(text.encode() if isinstance(text, str) else text)
        paths[name] = path
    return paths


OBSERVED_TEXTS: dict[str, str | bytes] = {
    "empty": "",
    "not-json": "{nope",
    "object": "{}",
    "number": "1e999",
    "deep": _deep(100000),
    "deep-object": '{"a":' * 100000 + "1" + "}" * 100000,
    "list-of-numbers": "[1, 2, 3]",
    "list-of-lists": "[[1], [2]]",
    "record-no-runtime": '[{"platform": "rk3588"}]',
    "record-runtime-list": '[{"platform": "rk3588", "runtime": []}]',
    "record-bad-dims": '[{"platform": "rk3588", "runtime": {"OUTPUT_ATTR": {"dims": "x"}}}]',
    "gzip-garbage": b"\x1f\x8b\x08\x00garbage",
    "gzip-bomb": b"",  # written by write_inputs: 300 MiB of spaces in 300 KiB
    "utf16": '[{"a": 1}]'.encode("utf-16"),
    "latin1": b'[{"\xff": 1}]',
}


def _state(**change: object) -> str:
    state: dict[str, object] = {
        "format": 1,
        "dir": "/nonexistent",
        "inventory": "/nonexistent/inventory.yaml",
        "user": "nobody",
        "started": "2026-01-01T00:00:00+00:00",
        "complete": True,
        "boards": [],
        "processes": [],
        "ports": {},
    }
    state.update(change)
    return json.dumps(state)


STATE_TEXTS: dict[str, str | bytes] = {
    "empty": "",
    "not-json": "{",
    "list": "[]",
    "null": "null",
    "deep": _deep(100000),
    "no-format": "{}",
    "format-list": _state(format=[1]),
    "boards-not-list": _state(boards=5),
    "boards-of-strings": _state(boards=["x"]),
    "boards-of-lists": _state(boards=[[1, 2]]),
    "board-extra-key": _state(
        boards=[
            {"name": "a", "target": "b", "transport": "c", "address": "d", "workdir": "e", "x": 1}
        ]
    ),
    "processes-of-strings": _state(processes=["x"]),
    "processes-not-list": _state(processes={"a": 1}),
    "process-pid-minus-1": _state(
        processes=[{"name": "a", "pid": -1, "argv": ["x"], "start_time": 1}]
    ),
    "process-pid-huge": _state(
        processes=[{"name": "a", "pid": 10**30, "argv": ["x"], "start_time": 1}]
    ),
    "process-pid-float": _state(
        processes=[{"name": "a", "pid": 1e300, "argv": ["x"], "start_time": 1}]
    ),
    "process-argv-str": _state(processes=[{"name": "a", "pid": 2, "argv": 5, "start_time": 1}]),
    "ports-list": _state(ports=[1, 2]),
    "ports-bad-value": _state(ports={"a": "b"}),
    "ports-huge": _state(ports={"a": 10**30}),
    "dir-list": _state(dir=[1]),
    "dir-nul": _state(dir="a\x00b"),
    "latin1": b'{"format": "\xff"}',
}


@dataclass(frozen=True)
class Case:
    """One bad input: ``argv`` with ``{root}`` for the folder the inputs were written to."""

    id: str
    argv: tuple[str, ...]

    def args(self, root: Path) -> list[str]:
        return [a.replace("{root}", str(root)) for a in self.argv]


def _file_kinds_per_argument() -> Iterator[Case]:
    """Every file argument of every subcommand, with every kind of non-file."""
    kinds = [
        "fifo",
        "fifo-link",
        "dev-zero",
        "dev-urandom",
        "dev-null",
        "folder",
        "missing",
        "loop",
        "dangling",
        "sparse-20g",
        "nul-in-name",
        "not-a-dir-parent",
    ]
    if os.geteuid() != 0:  # root reads a mode-0 file anyway
        kinds.append("unreadable")
    ok_npy = "{root}/ok.npy"
    ok_bin = "{root}/ok.bin"
    out = "{root}/out/x"
    uses: dict[str, list[str]] = {
        "pack-in": ["codec", "pack", *KL730, "--in", "@", "--out", out],
        "unpack-in": ["codec", "unpack", *ONE_GROUP, "--in", "@", "--out", out],
        "diff-expected": ["diff", *ONE_GROUP, "--expected", "@", "--device", ok_bin],
        "diff-expected-bin": ["diff", *ONE_GROUP, "--expected-bin", "@", "--device", ok_bin],
        "diff-device": ["diff", *ONE_GROUP, "--expected", ok_npy, "--device", "@"],
        "preflight-model": ["preflight", "--target", "rk3588", "@"],
        "observed-file": ["targets", "observed", "@"],
        "history-reports": ["history", "--reports", "@"],
        "health-inventory": ["health", "--inventory", "@"],
        "nightly-inventory": [
            "nightly",
            "--suite",
            "{root}",
            "--reports",
            "{root}/reports",
            "--inventory",
            "@",
        ],
        "models-file": ["models", "build", "@", "--target", "rv1106", "--out", "{root}/build"],
        "models-dataset": [
            "models",
            "build",
            "--target",
            "rk3588",
            "--models",
            "mobilenet_v2",
            "--out",
            "{root}/build",
            "--dataset",
            "@",
        ],
    }
    for use, argv in uses.items():
        for kind in kinds:
            path = "{root}/kinds/" + kind
            if kind.startswith("dev-"):
                path = "/dev/" + kind[4:]
            elif kind == "nul-in-name":
                path = "{root}/kinds/nul\x00x"
            elif kind == "not-a-dir-parent":
                path = "{root}/kinds/unreadable/child"
            yield Case(f"{use}[{kind}]", tuple(path if a == "@" else a for a in argv))


def _output_cases() -> Iterator[Case]:
    """Outputs that are no regular file: refused, never blocked on (a FIFO nobody reads) or
    written through (a device)."""
    outputs = {
        "fifo": "{root}/kinds/fifo",
        "folder": "{root}/kinds/folder",
        "dev-full": "/dev/full",
        "missing-parent": "{root}/kinds/missing/x.npy",
    }
    for kind, path in outputs.items():
        yield Case(
            f"pack-out[{kind}]",
            ("codec", "pack", *KL730, "--in", "{root}/ok.npy", "--out", path),
        )
        if kind == "dev-full":
            continue  # np.save would add .npy: /dev/full.npy is a new file, not a device
        # unpack names its output as np.save does (.npy added): these already end in .npy
        path = path if path.endswith(".npy") else f"{path}.npy"
        yield Case(
            f"unpack-out[{kind}]",
            ("codec", "unpack", *ONE_GROUP, "--in", "{root}/ok.bin", "--out", path),
        )


def _npy_cases(names: list[str]) -> Iterator[Case]:
    for name in names:
        path = "{root}/npy/" + name + ".npy"
        yield Case(
            f"pack-npy[{name}]",
            ("codec", "pack", *KL730, "--in", path, "--out", "{root}/out/p.bin"),
        )
        yield Case(
            f"diff-expected-npy[{name}]",
            ("diff", *ONE_GROUP, "--expected", path, "--device", "{root}/ok.bin"),
        )


PARAM_CASES: dict[str, tuple[list[str], list[str]]] = {
    # name: (layout arguments, --param values); each value alone is one case
    "rknn-out-nc1hwc2": (
        [
            "--target",
            "rk3588",
            "--layout",
            "NC1HWC2",
            "--role",
            "output",
            "--shape",
            "1,16,4,4",
            "--dtype",
            "int8",
        ],
        [
            "c2=3",
            "c2=0",
            "c2=-16",
            "c2=100000000",
            "c2=1e300",
            "c2=2.5",
            "c2=true",
            "c2=[16]",
            "c2=nan",
            "size=1e300",
            "size=100000000000",
            "size=-1",
            "size=1e20",
            "size=[1]",
            "hw_align=0",
            "hw_align=1000000000",
            "hw_align=-4",
            "native_dims=[1,1,100000,100000,16]",
            "native_dims=[1,1,1,16,100000000000]",
            "native_dims=[1,100000000,1,16,16]",
            "native_dims=[1,1,1,1e300,16]",
            "native_dims=[1,2,4,4,-16]",
            "native_dims=[1,2,4,4]",
            'native_dims="x"',
            "native_dims={}",
            "last_op=[1]",
            "nope=1",
        ],
    ),
    "rknn-out-nhwc": (
        [
            "--target",
            "rk3588",
            "--layout",
            "NHWC",
            "--role",
            "output",
            "--shape",
            "1,16,4,4",
            "--dtype",
            "int8",
        ],
        [
            "native_dims=[1,4,4,100000000000]",
            "native_dims=[1,4,4,1e300]",
            "size=1e300",
            "size=100000000000",
            "native_dims=[1,4,4,-1]",
        ],
    ),
    "rknn-out-nchw": (
        [
            "--target",
            "rk3588",
            "--layout",
            "NCHW",
            "--role",
            "output",
            "--shape",
            "1,16,4,4",
            "--dtype",
            "int8",
        ],
        ["size=99999999999", "size=1e300", "size=-5"],
    ),
    "rknn-in-nhwc": (
        [
            "--target",
            "rk3588",
            "--layout",
            "NHWC",
            "--role",
            "input",
            "--shape",
            "1,3,4,4",
            "--dtype",
            "uint8",
        ],
        [
            "w_stride=100000000000",
            "w_stride=1e300",
            "w_stride=-5",
            "size_with_stride=1e12",
            "size_with_stride=1e300",
            "first_layer=[1]",
            "first_layer=int4",
        ],
    ),
    "rknn-in-nc1hwc2": (
        [
            "--target",
            "rk3588",
            "--layout",
            "NC1HWC2",
            "--role",
            "input",
            "--shape",
            "1,16,4,4",
            "--dtype",
            "int8",
        ],
        ["c2=3", "c2=1000000", "native_dims=[1,1,100000,100000,16]", "size_with_stride=1e300"],
    ),
    "horizon-strided": (
        ["--target", "rdk-x5", "--layout", "strided", "--shape", "1,16,4,4", "--dtype", "int8"],
        [
            "aligned_byte_size=-1",
            "aligned_byte_size=1e15",
            "aligned_byte_size=1e300",
            "stride=[1e12,1,1,1]",
            "stride=[1000000000000,64,16,1]",
            "stride=[-1,-1,-1,-1]",
            "stride=[256,16,4,1,1]",
            "stride=[1e300,1e200,1e100,1]",
            "aligned_shape=[1,16,100000,100000]",
            "aligned_shape=[1,16,4,1e300]",
            "aligned_shape=[1,16,4]",
            "tensor_layout=XYZW",
        ],
    ),
    "horizon-nv12": (
        ["--target", "rdk-x5", "--layout", "NV12", "--shape", "1,6,4", "--dtype", "uint8"],
        ["stride=100000000000", "stride=1e300", "aligned_byte_size=-1", "aligned_byte_size=1e300"],
    ),
    "kl730-16bit": (
        ["--target", "kl730", "--layout", "1W16C8BHL", "--shape", "1,16,4,4", "--dtype", "int16"],
        [
            "value_bits=99999999",
            "value_bits=0",
            "value_bits=-1",
            "value_bits=1e300",
            "stride_npu=[1,1,100000000,1000000000000]",
            "stride_npu=[-1,1,1,1]",
            "stride_npu=[1e300,1,1,1]",
            "stride_npu=[1,1,1]",
        ],
    ),
    "kl730-8bit": (
        ["--target", "kl730", "--layout", "1W16C8B", "--shape", "1,16,4,4", "--dtype", "int8"],
        ["value_bits=99999999", "stride_npu=[1,1,100000000,1000000000000]", "stride_npu=[0,0,0,0]"],
    ),
}


def _param_cases() -> Iterator[Case]:
    """Every nonsense parameter through the subcommands that build a layout and then use it:
    describe (sizes only), pack (allocates nbytes), diff (packs the expectation)."""
    for group, (layout, values) in PARAM_CASES.items():
        shape = layout[layout.index("--shape") + 1]
        dtype = layout[layout.index("--dtype") + 1]
        target_layout = [a for a in layout if a not in ("--shape", shape, "--dtype", dtype)]
        tensor = "{root}/tensors/" + f"{shape.replace(',', 'x')}-{dtype}.npy"
        for value in values:
            yield Case(
                f"describe[{group}:{value}]", ("codec", "describe", *layout, "--param", value)
            )
            yield Case(
                f"pack[{group}:{value}]",
                (
                    "codec",
                    "pack",
                    *target_layout,
                    "--param",
                    value,
                    "--in",
                    tensor,
                    "--out",
                    "{root}/out/p.bin",
                ),
            )
            yield Case(
                f"diff[{group}:{value}]",
                (
                    "diff",
                    *layout,
                    "--param",
                    value,
                    "--expected",
                    tensor,
                    "--device",
                    "{root}/ok.bin",
                ),
            )


SHAPES = [
    "",
    "x",
    "1,,",
    "-1",
    "0",
    "1,-16,1,1",
    "1e9",
    "1.5,16",
    "1,16,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1",
    "100000,100000,100000,100000",
    "9" * 5000,
    "1,16,1," + "1" * 400,
]
DTYPES = [
    "",
    "int9",
    "object",
    "O",
    "V8",
    "U4",
    "S1",
    "M8",
    "[('a','i1')]",
    "i1,f4",
    "<i2",
    ">i2",
    "float128",
    "complex64",
    "bool",
]


def _shape_dtype_cases() -> Iterator[Case]:
    for shape in SHAPES:
        for action in ("describe", "locate", "unpack"):
            extra = {
                "describe": [],
                "locate": ["--offset", "0"],
                "unpack": ["--in", "{root}/ok.bin", "--out", "{root}/out/u.npy"],
            }[action]
            yield Case(
                f"{action}-shape[{shape[:24]}]",
                ("codec", action, *KL730, "--shape", shape, "--dtype", "int8", *extra),
            )
    for dtype in DTYPES:
        for action in ("describe", "unpack"):
            extra = (
                []
                if action == "describe"
                else ["--in", "{root}/ok.bin", "--out", "{root}/out/u.npy"]
            )
            yield Case(
                f"{action}-dtype[{dtype}]",
                ("codec", action, *KL730, "--shape", "1,16,1,1", "--dtype", dtype, *extra),
            )
    for offset in ["-1", "16", "99999999999999999999", "1e3", "x"]:
        yield Case(f"locate-offset[{offset}]", ("codec", "locate", *ONE_GROUP, "--offset", offset))
    for tolerance in ["-1", "nan", "x"]:
        yield Case(
            f"diff-tolerance[{tolerance}]",
            (
                "diff",
                *ONE_GROUP,
                "--expected",
                "{root}/ok.npy",
                "--device",
                "{root}/ok.bin",
                "--tolerance",
                tolerance,
            ),
        )


def _other_cases() -> Iterator[Case]:
    for name in ONNX_NAMES:
        path = "{root}/onnx/" + name + ".onnx"
        for target in ("rk3588", "rv1106", "rdk-x5"):
            extra = ["--input-type", "nv12"] if target == "rdk-x5" else []
            yield Case(
                f"preflight[{name}:{target}]", ("preflight", "--target", target, path, *extra)
            )
    for name in OBSERVED_TEXTS:
        yield Case(
            f"observed[{name}]", ("targets", "observed", "{root}/observed/" + name + ".json")
        )
    for name in STATE_TEXTS:
        # Never ``up``: a state that loads would start a farm.
        for action in ("status", "down"):
            yield Case(
                f"simfarm-{action}-state[{name}]",
                ("simfarm", action, "--dir", "{root}/farms/" + f"{action}-{name}"),
            )
    # Only counts that fail before anything starts on main too (a million boards would start an
    # sshd there and then take minutes over the boards' folders).
    for boards in ["100000000000000000000", "1e20", "0", "-1", "x", "1_000"]:
        yield Case(
            f"simfarm-up-boards[{boards}]",
            ("simfarm", "up", "--dir", "{root}/farm-up", "--boards", boards, "--targets", "rk3588"),
        )
    for timeout in ["-1", "nan", "inf", "1e300"]:
        yield Case(
            f"simfarm-down-timeout[{timeout}]",
            ("simfarm", "down", "--dir", "{root}/farm-up", "--timeout", timeout),
        )
    for name, extra in [
        ("mean-alone", ("--mean", "1,2,3")),
        ("std-alone", ("--std", "1,2,3")),
        ("mean-not-numbers", ("--mean", "a,b", "--std", "1,1")),
        ("mean-std-lengths", ("--mean", "1,2,3", "--std", "1,2")),
        ("std-zero", ("--mean", "1", "--std", "0")),
        ("mean-nan", ("--mean", "nan", "--std", "1")),
    ]:
        yield Case(
            f"models-normalize[{name}]",
            ("models", "build", "--target", "rk3588", "--out", "{root}/build", *extra),
        )
    for jobs in ["0", "-1", "100000000000"]:
        yield Case(
            f"models-jobs[{jobs}]",
            (
                "models",
                "build",
                "--target",
                "rk3588",
                "--models",
                "mobilenet_v2",
                "--out",
                "{root}/build",
                "-j",
                jobs,
            ),
        )


NUMBERS = ["inf", "-inf", "nan", "-1", "0", "1e400", "1" + "0" * 400, "x"]
"""What every numeric option is tried with: non-finite, negative, zero, overflowing, 401 digits."""
SOAK = ("soak", "--board", "rk3588-01", "--reports", "{root}/soak-reports")


def _soak_cases() -> Iterator[Case]:
    # Each refused before a farm starts: a soak that ran would take its --seconds.
    for option in ("--hours", "--minutes", "--seconds", "--iterations"):
        for value in [*NUMBERS, "10000000000"]:
            yield Case(f"soak{option}[{value[:12]}]", (*SOAK, option, value))
    for option in ("--contexts", "--sample-every"):
        for value in [*NUMBERS, "100000000"]:
            yield Case(f"soak{option}[{value[:12]}]", (*SOAK, "--seconds", "1", option, value))
    for option in ("--max-leak-kib-per-1k", "--max-leak-kib-per-hour", "--max-error-rate"):
        for value in ["inf", "nan", "-1", "1e400", "x"]:
            yield Case(f"soak{option}[{value}]", (*SOAK, "--seconds", "1", option, value))
    for value in ["inf", "nan", "-1", "1", "1e400"]:
        yield Case(
            f"soak--warmup-share[{value}]", (*SOAK, "--seconds", "1", "--warmup-share", value)
        )
    for shape in ["100000,100000,100", "1,0,3", "1,-3,3", "1,3,8,x", "", "1" + "0" * 400]:
        yield Case(f"soak--shape[{shape[:20]}]", (*SOAK, "--seconds", "1", "--shape", shape))


NPY_NAMES = [
    "empty",
    "magic-only",
    "bad-magic",
    "version-9",
    "header-len-huge",
    "header-not-dict",
    "header-garbage",
    "header-no-shape",
    "huge-shape",
    "huge-shape-f8",
    "truncated",
    "too-long",
    "negative-dim",
    "float-dim",
    "object",
    "pickle-object",
    "structured",
    "subarray",
    "unicode",
    "bytes",
    "void",
    "datetime",
    "bad-descr",
    "zero-dim",
    "scalar",
    "rank-9",
    "gzip",
    "text",
]
ONNX_NAMES = [
    "conv-no-inputs",
    "conv-missing-weight",
    "conv-dilations-1",
    "conv-dilations-str",
    "conv-group-str",
    "input-undefined-type",
    "input-string-type",
    "input-no-type",
    "no-graph-input",
    "empty",
    "garbage",
    "text",
    "truncated",
]


def all_cases() -> list[Case]:
    cases = [
        *_file_kinds_per_argument(),
        *_npy_cases(NPY_NAMES),
        *_output_cases(),
        *_param_cases(),
        *_shape_dtype_cases(),
        *_other_cases(),
        *_soak_cases(),
    ]
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    return cases


def write_inputs(root: Path) -> Path:
    """Every file the cases name, under ``root``."""
    root.mkdir(mode=0o700, parents=True)
    (root / "out").mkdir()
    np.save(root / "ok.npy", np.arange(16, dtype=np.int8).reshape(1, 16, 1, 1))
    (root / "ok.bin").write_bytes(bytes(16))
    tensors = root / "tensors"
    tensors.mkdir()
    for layout, _ in PARAM_CASES.values():
        shape = layout[layout.index("--shape") + 1]
        dtype = layout[layout.index("--dtype") + 1]
        dims = tuple(int(v) for v in shape.split(","))
        np.save(tensors / f"{shape.replace(',', 'x')}-{dtype}.npy", np.zeros(dims, dtype))
    _write_npy_files(root)
    _write_kinds(root)
    _write_onnx_files(root)
    observed = _write_json_files(root, "observed", OBSERVED_TEXTS)
    with observed["gzip-bomb"].open("wb") as handle:
        deflate = zlib.compressobj(1, zlib.DEFLATED, 31)
        block = b" " * (1 << 20)
        for _ in range(300):
            handle.write(deflate.compress(block))
        handle.write(deflate.flush())
    farms = root / "farms"
    farms.mkdir(mode=0o700)
    for name, text in STATE_TEXTS.items():
        for action in ("status", "down"):
            folder = farms / f"{action}-{name}"
            folder.mkdir(mode=0o700)
            data = text.encode() if isinstance(text, str) else text
            (folder / "state.json").write_bytes(data)
    (root / "farm-up").mkdir(mode=0o700)
    return root


def preload() -> None:
    """Have the fork server import what the subcommands import lazily, once, before its
    children fork (a no-op once it runs)."""
    FORK_SERVER.set_forkserver_preload(PRELOAD)
    # The server ignores the sys.path it is handed (Python 3.12) and drops a failed preload
    # import silently: this folder reaches it through its environment, set while it starts.
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parent), previous]))
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        if previous is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = previous


def sweep(root: Path, *, verbose: bool = False, match: str = "") -> dict[str, int]:
    """Run every case (whose id holds ``match``); the counts of the closing note."""
    preload()
    counts = {"tried": 0, "typed": 0, "tracebacks": 0, "hangs": 0, "other": 0}
    for case in all_cases():
        if match not in case.id:
            continue
        outcome = run_case(case.args(root), cwd=root)
        counts["tried"] += 1
        if outcome.typed:
            counts["typed"] += 1
            continue
        kind = "hangs" if outcome.hung else "tracebacks" if outcome.traceback else "other"
        counts[kind] += 1
        if verbose:
            last = outcome.lines[-1] if outcome.lines else ""
            print(
                f"{kind:<10} {case.id}: exit {outcome.code}, {len(outcome.lines)} lines: "
                f"{last[:160]}"
            )
    return counts


def _main(argv: list[str]) -> int:
    import tempfile

    verbose = "--verbose" in argv
    match = argv[argv.index("--match") + 1] if "--match" in argv else ""
    with tempfile.TemporaryDirectory(prefix="npu-hil-bad-inputs-") as tmp:
        root = write_inputs(Path(tmp) / "inputs")
        started = time.monotonic()
        counts = sweep(root, verbose=verbose, match=match)
        (root / "kinds" / "unreadable").chmod(0o600)
    elapsed = time.monotonic() - started
    print(
        f"{counts['tried']} bad inputs tried in {elapsed:.0f} s: {counts['typed']} typed "
        f"(exit 2, one line), {counts['tracebacks']} tracebacks, {counts['hangs']} hangs, "
        f"{counts['other']} other (wrong exit code or not one line)"
    )
    return 0 if counts["typed"] == counts["tried"] else 1


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
