"""A job document the agent must refuse: each case is sent as a framed job (the document and its
input buffers in one bulk frame) to the real agent in a subprocess, which must answer status 2
with a result holding one ``JobError`` record naming the field, carry no buffer back, end its
session normally at the shutdown, and touch nothing on disk: not outside its workdir, and not in
it either (a refused job writes no file)."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.agent.protocol import InputSpec, JobSpec, ModelRef, frame_job
from npu_hil.harness.board import job as board_job
from npu_hil.harness.board import wire as board
from npu_hil.harness.errors import ProtocolError, TransportError
from tests.agent.jobs import FAKE_ADAPTERS, OneShot, RawSession, cache_model, run_once

# Seconds a test (README: test tiers).
pytestmark = pytest.mark.slow

A = np.zeros((1, 2, 3, 4), np.float32)  # 96 bytes
B = np.ones((1, 4, 4, 8), np.int8)  # 128 bytes
OUTSIDE = b"\x7f" * 128  # beside the workdir, the size of input b: never to be read or written


@dataclass(frozen=True)
class Case:
    """A valid job (checked by the first test) for the cases to spoil: its spec, its inputs, the
    board's workdir (its model already in the cache) and the folder around it."""

    root: Path
    workdir: Path
    spec: JobSpec
    model: ModelRef

    @property
    def cache(self) -> Path:
        return self.workdir / "cache"

    def inputs(self) -> dict[str, np.ndarray]:
        return {"a": A, "b": B}

    def buffers(self) -> list[memoryview]:
        """The input buffers as the job's frame carries them."""
        return frame_job(self.spec, self.inputs(), self.model)[1]


@pytest.fixture
def case(tmp_path: Path) -> Case:
    model = tmp_path / "model.bin"
    model.write_bytes(b"model bytes")
    (tmp_path / "outside.bin").write_bytes(OUTSIDE)
    spec = JobSpec(
        job_id="hostile",
        adapter="echo",
        model=model,
        inputs=(
            InputSpec("a", "NCHW", (1, 2, 3, 4), "float32"),
            InputSpec("b", "NHWC", (1, 4, 4, 8), "int8"),
        ),
        load_timeout_s=10,
        run_timeout_s=10,
    )
    workdir = tmp_path / "board"
    workdir.mkdir(mode=0o700)
    return Case(tmp_path, workdir, spec, cache_model(workdir, model))


def changed(change: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
    """An ``edit`` for :func:`run_once` that changes the document in place and sends it."""

    def edit(document: dict[str, Any]) -> dict[str, Any]:
        change(document)
        return document

    return edit


def tree(root: Path, cached: Path) -> dict[str, tuple[Any, ...]]:
    """Everything under ``root`` as it is on disk: each entry's kind, its content (a file's
    sha256, a link's target) and, but for the model copy the test itself writes into the cache
    before each run, a file's mtime."""
    found: dict[str, tuple[Any, ...]] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                found[str(path.relative_to(root))] = ("link", os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                mtime = None if path == cached else info.st_mtime_ns
                found[str(path.relative_to(root))] = ("file", digest, mtime, info.st_mode)
            else:
                found[str(path.relative_to(root))] = ("other", stat.S_IFMT(info.st_mode))
    return found


def run(case: Case, args: tuple[str, ...] = (), **options: Any) -> OneShot:
    """The job run by a one-shot agent; ``args`` go on its command line."""
    return run_once(case.workdir, case.spec, case.inputs(), *args, **options)


def refused(case: Case, field: str, *phrases: str, **options: Any) -> dict[str, Any]:
    """Send the job (``options`` go to :func:`run`: ``edit``, ``buffers``, ``args``) and check the
    refusal: status 2, one JobError naming ``field`` at validation, no buffer back, the session
    ended by its shutdown, and not a file on disk changed or added."""
    cached = case.cache / case.model.path
    before = tree(case.root, cached)
    shot = run(case, **options)
    assert shot.returncode == 0, shot.stderr
    assert shot.status == board.EXIT_REFUSED, shot.stderr
    assert [frame["op"] for frame in shot.frames] == ["hello", "job", "shutdown"]
    assert shot.response is not None and shot.response["restart"] is False
    result = shot.response["result"]
    assert result["schema"] == board.RESULT_SCHEMA
    assert result["ok"] is False and result["outputs"] == [] and result["inputs"] == []
    assert shot.answer is None  # a plain frame: no buffer came back
    (record,) = shot.errors
    assert record["type"] == "JobError" and record["stage"] == "validate"
    assert record["field"] == field
    assert record["message"].startswith(field + ": "), record["message"]
    for phrase in phrases:
        assert phrase in record["message"], record["message"]
    assert tree(case.root, cached) == before
    return dict(record)


def test_the_unspoilt_job_runs(case: Case) -> None:
    shot = run(case)
    assert shot.returncode == 0 and shot.status == board.EXIT_OK, shot.stderr
    result = shot.result("hostile")
    assert result.ok
    assert result.output("a_out").data.tobytes() == A.tobytes()
    assert result.output("b_out").data.tobytes() == B.tobytes()
    # Neither the base classes nor a package marker is offered as an adapter.
    adapters = shot.frames[0]["adapters"]
    assert "echo" in adapters and "base" not in adapters and "__init__" not in adapters
    # A job leaves nothing on the board's disk: the workdir holds the cache alone.
    assert [p.name for p in case.workdir.iterdir()] == ["cache"]


# --- the model's path in the cache ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "phrase"),
    [
        ("../model.bin", "'../model.bin' leaves the model cache"),
        ("sub/../../outside.bin", "leaves the model cache"),
        ("..", "leaves the model cache"),
        ("", "expected a relative file path"),
        ("model\x00.bin", "contains a NUL byte"),
    ],
)
def test_a_model_path_that_leaves_the_cache(case: Case, path: str, phrase: str) -> None:
    refused(case, "model.path", phrase, edit=changed(lambda d: d["model"].update(path=path)))


def test_an_absolute_model_path(case: Case) -> None:
    target = str(case.root / "model.bin")  # the very model, but outside the cache
    edit = changed(lambda d: d["model"].update(path=target))
    refused(
        case, "model.path", "is an absolute path; paths are relative to the model cache", edit=edit
    )


def test_a_model_symlink_escaping_the_cache(case: Case) -> None:
    (case.cache / "model.lnk").symlink_to(case.root / "model.bin")
    edit = changed(lambda d: d["model"].update(path="model.lnk"))
    refused(case, "model.path", "leaves the model cache through a symlink", edit=edit)


def test_a_symlinked_directory_escaping_the_cache(case: Case) -> None:
    (case.cache / "up").symlink_to(case.root)
    edit = changed(lambda d: d["model"].update(path="up/model.bin"))
    refused(case, "model.path", "through a symlink", edit=edit)


def test_a_dangling_model_symlink(case: Case) -> None:
    (case.cache / "gone.lnk").symlink_to(case.root / "nowhere.bin")
    edit = changed(lambda d: d["model"].update(path="gone.lnk"))
    refused(case, "model.path", "through a symlink", edit=edit)


def test_a_symlink_inside_the_cache_is_fine(case: Case) -> None:
    (case.cache / "alias.bin").symlink_to(case.model.path)
    shot = run(case, edit=changed(lambda d: d["model"].update(path="alias.bin")))
    assert shot.status == board.EXIT_OK, shot.errors
    assert shot.result().ok


def test_a_model_missing_from_the_cache(case: Case) -> None:
    edit = changed(lambda d: d["model"].update(path=f"{case.model.sha256}/other.bin"))
    refused(case, "model.path", "does not exist in the model cache", edit=edit)


def test_a_model_that_is_a_directory(case: Case) -> None:
    edit = changed(lambda d: d["model"].update(path=case.model.sha256))
    refused(case, "model.path", "is not a regular file", edit=edit)


def test_a_model_in_another_cache_is_missing(case: Case) -> None:
    """The model is looked up in the agent's ``--root`` alone: another cache that lacks it (the
    last ``--root`` given wins) does not find it in this one."""
    other = case.workdir / "other"
    other.mkdir()
    refused(case, "model.path", "does not exist in the model cache", args=("--root", "other"))


def test_without_a_cache_every_job_is_refused(case: Case) -> None:
    """An agent started without ``--root`` has nowhere to find a model (validated in-process:
    the one-shot agent always gets a cache)."""
    document, _ = frame_job(case.spec, case.inputs(), case.model)
    with pytest.raises(board_job.JobRefused, match=r"model cache \(--root\)") as caught:
        board_job.validate_job(document, None, [str(FAKE_ADAPTERS)])
    assert caught.value.field == "model.path"


# --- the input buffers ---------------------------------------------------------------------------


@pytest.mark.parametrize("nbytes", [-1, True, "96", None, 2.5])
def test_a_bad_byte_count(case: Case, nbytes: Any) -> None:
    edit = changed(lambda d: d["inputs"][0].update(nbytes=nbytes))
    refused(case, "inputs[0].nbytes", f"expected a byte count, got {nbytes!r}", edit=edit)


def test_a_byte_count_that_does_not_match_the_shape(case: Case) -> None:
    edit = changed(lambda d: d["inputs"][0].update(shape=[1, 2, 3, 5]))
    record = refused(
        case,
        "inputs[0].nbytes",
        "the buffer holds 96 bytes; shape [1, 2, 3, 5] float32 needs 120",
        edit=edit,
    )
    assert record["reason"] == "size"


def test_a_buffer_shorter_than_announced(case: Case) -> None:
    first, second = case.buffers()
    record = refused(
        case,
        "inputs[1].nbytes",
        "the frame's buffer holds 127 bytes; the input announces 128",
        buffers=[first, second[:127]],
    )
    assert record["reason"] == "size"


@pytest.mark.parametrize("count", [0, 1, 3])
def test_a_frame_with_another_number_of_buffers(case: Case, count: int) -> None:
    buffers = (case.buffers() * 2)[:count]
    record = refused(
        case, "inputs", f"the frame carries {count} buffers for 2 inputs", buffers=buffers
    )
    assert record["reason"] == "size"


def test_a_huge_pass_through_input_is_refused_by_its_announced_size(case: Case) -> None:
    """A pass-through buffer announcing more than the cap is refused from the document: the
    size is checked before the buffer is used (here the frame carries only 96 bytes)."""
    huge = board_job.MAX_INPUT_BYTES + 1
    edit = changed(lambda d: d["inputs"][0].update(nbytes=huge, pass_through=True))
    record = refused(
        case,
        "inputs[0].nbytes",
        f"holds {huge} bytes",
        f"cap {board_job.MAX_INPUT_BYTES}",
        edit=edit,
    )
    assert record["reason"] == "size"


def test_a_pass_through_buffer_shorter_than_announced(case: Case) -> None:
    edit = changed(lambda d: d["inputs"][0].update(nbytes=100, pass_through=True))
    refused(case, "inputs[0].nbytes", "holds 96 bytes; the input announces 100", edit=edit)


@pytest.mark.parametrize("file", ["../outside.bin", "ABSOLUTE"])
def test_a_file_an_input_names_is_never_read(case: Case, file: str) -> None:
    """An input's bytes are the frame's buffer: a ``file`` in the document (the folder job's
    field) is no path the agent opens, inside the workdir or out of it."""
    name = str(case.root / "outside.bin") if file == "ABSOLUTE" else file
    shot = run(case, edit=changed(lambda d: d["inputs"][1].update(file=name)))
    assert shot.status == board.EXIT_OK, shot.errors
    got = shot.result().output("b_out").data.tobytes()
    assert got == B.tobytes() and got != OUTSIDE


# --- shapes, dtypes, sizes -----------------------------------------------------------------------


def test_huge_shape(case: Case) -> None:
    edit = changed(lambda d: d["inputs"][0].update(shape=[1 << 20, 1 << 20, 1 << 20]))
    refused(case, "inputs[0].shape", f"more than {board_job.MAX_ELEMENTS} elements", edit=edit)


def test_huge_shape_by_many_dims(case: Case) -> None:
    refused(
        case,
        "inputs[0].shape",
        "more than",
        edit=changed(lambda d: d["inputs"][0].update(shape=[2**31, 2])),
    )


def test_rank_cap(case: Case) -> None:
    edit = changed(lambda d: d["inputs"][0].update(shape=[1] * 1000))
    refused(
        case, "inputs[0].shape", f"rank 1000 exceeds the cap of {board_job.MAX_RANK}", edit=edit
    )


@pytest.mark.parametrize("dim", [-1, 2.5, True, "3", None])
def test_bad_dimension(case: Case, dim: Any) -> None:
    edit = changed(lambda d: d["inputs"][0].update(shape=[1, dim, 3, 4]))
    refused(case, "inputs[0].shape", "dimension 1 is", edit=edit)


def test_unknown_dtype(case: Case) -> None:
    edit = changed(lambda d: d["inputs"][1].update(dtype="object"))
    refused(case, "inputs[1].dtype", "'object' is not one of", edit=edit)


def test_duplicate_input_names(case: Case) -> None:
    refused(
        case,
        "inputs[1].name",
        "'a' appears twice",
        edit=changed(lambda d: d["inputs"][1].update(name="a")),
    )


def test_a_shape_is_bounded_by_bytes_not_elements(case: Case) -> None:
    """2**28 float64 elements pass the element cap but need 2 GiB: refused by bytes, before
    any buffer is looked at."""
    edit = changed(lambda d: d["inputs"][0].update(shape=[1, 2**28], dtype="float64"))
    refused(
        case,
        "inputs[0].shape",
        "needs 2147483648 bytes",
        f"cap {board_job.MAX_INPUT_BYTES}",
        edit=edit,
    )


# --- checksums and identities --------------------------------------------------------------------


def test_wrong_model_sha256(case: Case) -> None:
    shot_edit = changed(lambda d: d["model"].update(sha256="0" * 64))
    record = refused(
        case, "model.sha256", "the model file hashes to", "the job says 0000", edit=shot_edit
    )
    assert record["reason"] == "checksum"
    # On the host that is a damaged transfer, not a protocol disagreement.
    assert isinstance(run(case, edit=shot_edit).result().error(), TransportError)


def test_malformed_sha256(case: Case) -> None:
    edit = changed(lambda d: d["model"].update(sha256="../../etc"))
    refused(case, "model.sha256", "is not 64 hex digits", edit=edit)


def test_unknown_adapter(case: Case) -> None:
    edit = changed(lambda d: d.update(adapter="tensorrt"))
    refused(case, "adapter", "'tensorrt' is not an adapter on this board", "echo", edit=edit)
    assert isinstance(run(case, edit=edit).result().error(), ProtocolError)


@pytest.mark.parametrize("name", ["../echo", "Echo", "echo.py", "os.path", "", "base", "__init__"])
def test_adapter_names_are_plain(case: Case, name: str) -> None:
    """``base`` (the adapters' base classes) and ``__init__`` (the adapter package's marker, a
    file in the board's own adapter folder) are modules of an adapter folder but no adapters."""
    edit = changed(lambda d: d.update(adapter=name))
    refused(case, "adapter", f"{name!r} is not an adapter name", edit=edit)


# --- the document itself -------------------------------------------------------------------------


@pytest.mark.parametrize("document", [[1, 2, 3], None, "job.json", 7])
def test_not_an_object(case: Case, document: Any) -> None:
    refused(case, "job", f"expected a job document, got {document!r}", edit=lambda _: document)


def test_a_job_request_without_its_document(case: Case) -> None:
    """``{"op": "job"}`` with no ``job``: refused naming it, and the session goes on."""
    raw = RawSession(case.workdir, "--root", "cache")
    assert raw.read()["op"] == "hello"
    raw.send({"op": "job"})
    answer = raw.read()
    assert answer["op"] == "job" and "result" not in answer
    record = answer["error"]
    assert (record["type"], record["stage"], record["field"]) == ("JobError", "validate", "job")
    assert "carries its document in 'job'" in record["message"]
    raw.send({"op": "ping"})
    assert raw.read()["jobs"] == 0  # nothing ran
    raw.send({"op": "shutdown"})
    raw.read()
    assert raw.finish()[0] == 0
    assert [p.name for p in case.workdir.iterdir()] == ["cache"]


def test_a_deeply_nested_document_is_answered_and_the_session_goes_on(case: Case) -> None:
    """A job document nested past the frame's depth cap is no request at all: the whole frame
    is answered with a ``ProtocolError`` (its buffers read past), and the shutdown after it
    still ends the session cleanly."""
    deep: Any = []
    for _ in range(board.MAX_JSON_DEPTH):
        deep = [deep]
    shot = run(case, edit=changed(lambda d: d.update(x=deep)))
    assert shot.returncode == 0, shot.stderr
    assert [frame["op"] for frame in shot.frames] == ["hello", "error", "shutdown"]
    (record,) = shot.errors
    assert record["type"] == "ProtocolError" and "nested deeper than" in record["message"]
    assert "Traceback" not in shot.stderr


def test_wrong_schema_major(case: Case) -> None:
    edit = changed(lambda d: d.update(schema="npu-hil-job/2"))
    record = refused(
        case, "schema", "has major version 2; this agent speaks npu-hil-job/1", edit=edit
    )
    assert record["reason"] == "schema"


def test_newer_minor_schema_runs(case: Case) -> None:
    shot = run(
        case, edit=changed(lambda d: d.update(schema="npu-hil-job/1.7", added_later={"x": 1}))
    )
    assert shot.status == board.EXIT_OK, shot.errors
    assert shot.result().ok


@pytest.mark.parametrize("schema", [None, "npu-hil-result/1", "npu-hil-job", 1])
def test_foreign_schema(case: Case, schema: Any) -> None:
    refused(
        case, "schema", "expected 'npu-hil-job/1'", edit=changed(lambda d: d.update(schema=schema))
    )


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d.pop("job_id"), "job_id"),
        (lambda d: d.update(job_id=7), "job_id"),
        (lambda d: d.update(job_id=""), "job_id"),
        (lambda d: d.pop("model"), "model"),
        (lambda d: d["model"].pop("path"), "model.path"),
        (lambda d: d["model"].pop("sha256"), "model.sha256"),
        (lambda d: d.update(inputs={"a": 1}), "inputs"),
        (lambda d: d["inputs"].__setitem__(0, "input_0.bin"), "inputs[0]"),
        (lambda d: d["inputs"][0].pop("nbytes"), "inputs[0].nbytes"),
        (lambda d: d["inputs"][0].update(pass_through="yes"), "inputs[0].pass_through"),
        (lambda d: d.update(outputs="all"), "outputs"),
        (lambda d: d.update(adapter_options=[1]), "adapter_options"),
        (lambda d: d.update(timeouts={"run": -1}), "timeouts.run"),
        (lambda d: d.update(timeouts={"load": float("inf")}), "timeouts.load"),
    ],
)
def test_fields_of_the_wrong_kind(
    case: Case, change: Callable[[dict[str, Any]], Any], field: str
) -> None:
    refused(case, field, edit=changed(change))
