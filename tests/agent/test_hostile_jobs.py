"""A job.json the agent must refuse: each case is run by the real agent in a subprocess, which must
exit 2, write a result with one ``JobError`` record naming the field, and touch nothing outside the
job directory."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.agent.protocol import InputSpec, JobSpec, read_result, write_job
from npu_hil.harness.board import job as board_job
from npu_hil.harness.board import wire as board
from npu_hil.harness.errors import ProtocolError, TransportError
from tests.agent.jobs import BOARD_PACKAGE, FAKE_ADAPTERS

# Seconds a test (README: test tiers).
pytestmark = pytest.mark.slow

AGENT = BOARD_PACKAGE


def run_agent(job_dir: Path, *extra: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, str(AGENT), str(job_dir), "--adapters", str(FAKE_ADAPTERS), *extra],
        capture_output=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def job_dir(tmp_path: Path) -> Path:
    """A valid job (checked by the first test) for the cases to spoil."""
    model = tmp_path / "model.bin"
    model.write_bytes(b"model bytes")
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
    inputs = {"a": np.zeros((1, 2, 3, 4), np.float32), "b": np.ones((1, 4, 4, 8), np.int8)}
    directory = tmp_path / "job"
    write_job(directory, spec, inputs)
    (tmp_path / "outside.bin").write_bytes(b"\x00" * 96)
    return directory


def edit(job_dir: Path, change: Callable[[dict[str, Any]], Any]) -> None:
    path = job_dir / "job.json"
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


def refused(job_dir: Path, field: str, *phrases: str) -> dict[str, Any]:
    """Run the agent and check the refusal: exit 2, one JobError naming ``field``."""
    done = run_agent(job_dir)
    assert done.returncode == board.EXIT_REFUSED, done.stderr.decode()
    result = json.loads((job_dir / "result.json").read_text())
    assert result["schema"] == board.RESULT_SCHEMA
    assert result["ok"] is False and result["outputs"] == [] and result["inputs"] == []
    (record,) = result["errors"]
    assert record["type"] == "JobError" and record["stage"] == "validate"
    assert record["field"] == field
    assert record["message"].startswith(field + ": "), record["message"]
    for phrase in phrases:
        assert phrase in record["message"], record["message"]
    assert not list(job_dir.glob("out_*.bin"))
    return dict(record)


def test_the_unspoilt_job_runs(job_dir: Path) -> None:
    assert run_agent(job_dir).returncode == 0
    assert read_result(job_dir).ok


# --- paths ---------------------------------------------------------------------------------------


def test_input_path_with_dotdot(job_dir: Path) -> None:
    edit(job_dir, lambda d: d["inputs"][1].update(file="../outside.bin"))
    refused(job_dir, "inputs[1].file", "'../outside.bin' leaves the job directory")


def test_input_path_with_dotdot_in_the_middle(job_dir: Path) -> None:
    edit(job_dir, lambda d: d["inputs"][0].update(file="sub/../../outside.bin"))
    refused(job_dir, "inputs[0].file", "leaves the job directory")


def test_absolute_input_path(job_dir: Path) -> None:
    target = str(job_dir.parent / "outside.bin")
    edit(job_dir, lambda d: d["inputs"][0].update(file=target))
    refused(job_dir, "inputs[0].file", "is an absolute path")


def test_symlink_escaping_the_job_dir(job_dir: Path) -> None:
    os.symlink(job_dir.parent / "outside.bin", job_dir / "link.bin")
    edit(job_dir, lambda d: d["inputs"][0].update(file="link.bin"))
    refused(job_dir, "inputs[0].file", "leaves the job directory through a symlink")


def test_symlinked_directory_escaping_the_job_dir(job_dir: Path) -> None:
    os.symlink(job_dir.parent, job_dir / "up")
    edit(job_dir, lambda d: d["inputs"][0].update(file="up/outside.bin"))
    refused(job_dir, "inputs[0].file", "through a symlink")


def test_symlink_inside_the_job_dir_is_fine(job_dir: Path) -> None:
    os.symlink("input_0.bin", job_dir / "alias.bin")
    edit(job_dir, lambda d: d["inputs"][0].update(file="alias.bin"))
    assert run_agent(job_dir).returncode == 0


def test_model_outside_the_job_dir(job_dir: Path) -> None:
    edit(job_dir, lambda d: d["model"].update(path="../model.bin"))
    refused(job_dir, "model.path", "leaves the job directory")


def test_model_symlink_escaping(job_dir: Path) -> None:
    os.symlink(job_dir.parent / "model.bin", job_dir / "model.lnk")
    edit(job_dir, lambda d: d["model"].update(path="model.lnk"))
    refused(job_dir, "model.path", "through a symlink")


def test_model_may_live_in_the_cache_root(job_dir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "ab").mkdir(parents=True)
    (cache / "ab" / "m.bin").write_bytes(b"cached model")
    sha = hashlib.sha256(b"cached model").hexdigest()
    edit(job_dir, lambda d: d.update(model={"path": "ab/m.bin", "sha256": sha}))
    assert run_agent(job_dir, "--root", str(cache)).returncode == 0
    for blob in job_dir.glob("*_?.bin"):
        if not blob.name.startswith("input_"):
            blob.unlink()
    # ... but only with --root: otherwise it is a missing file.
    refused(job_dir, "model.path", "does not exist in the job directory")


def test_missing_input_file(job_dir: Path) -> None:
    (job_dir / "input_1.bin").unlink()
    refused(job_dir, "inputs[1].file", "'input_1.bin' does not exist")


def test_input_that_is_a_directory(job_dir: Path) -> None:
    (job_dir / "dir.bin").mkdir()
    edit(job_dir, lambda d: d["inputs"][0].update(file="dir.bin"))
    refused(job_dir, "inputs[0].file", "is not a regular file")


# --- shapes, dtypes, sizes -----------------------------------------------------------------------


def test_huge_shape(job_dir: Path) -> None:
    edit(job_dir, lambda d: d["inputs"][0].update(shape=[1 << 20, 1 << 20, 1 << 20]))
    refused(job_dir, "inputs[0].shape", f"more than {board_job.MAX_ELEMENTS} elements")


def test_huge_shape_by_many_dims(job_dir: Path) -> None:
    edit(job_dir, lambda d: d["inputs"][0].update(shape=[2**31, 2]))
    refused(job_dir, "inputs[0].shape", "more than")


def test_rank_cap(job_dir: Path) -> None:
    edit(job_dir, lambda d: d["inputs"][0].update(shape=[1] * 1000))
    refused(job_dir, "inputs[0].shape", f"rank 1000 exceeds the cap of {board_job.MAX_RANK}")


@pytest.mark.parametrize("dim", [-1, 2.5, True, "3", None])
def test_bad_dimension(job_dir: Path, dim: Any) -> None:
    edit(job_dir, lambda d: d["inputs"][0].update(shape=[1, dim, 3, 4]))
    refused(job_dir, "inputs[0].shape", "dimension 1 is")


def test_unknown_dtype(job_dir: Path) -> None:
    edit(job_dir, lambda d: d["inputs"][1].update(dtype="object"))
    refused(job_dir, "inputs[1].dtype", "'object' is not one of")


def test_input_size_does_not_match_shape(job_dir: Path) -> None:
    edit(job_dir, lambda d: d["inputs"][0].update(shape=[1, 2, 3, 5]))
    record = refused(
        job_dir, "inputs[0].file", "holds 96 bytes; shape [1, 2, 3, 5] float32 needs 120"
    )
    assert record["reason"] == "size"


def test_duplicate_input_names(job_dir: Path) -> None:
    edit(job_dir, lambda d: d["inputs"][1].update(name="a"))
    refused(job_dir, "inputs[1].name", "'a' appears twice")


# --- checksums and identities --------------------------------------------------------------------


def test_wrong_model_sha256(job_dir: Path) -> None:
    edit(job_dir, lambda d: d["model"].update(sha256="0" * 64))
    record = refused(job_dir, "model.sha256", "the model file hashes to", "the job says 0000")
    assert record["reason"] == "checksum"
    # On the host that is a damaged transfer, not a protocol disagreement.
    assert isinstance(read_result(job_dir).error(), TransportError)


def test_malformed_sha256(job_dir: Path) -> None:
    edit(job_dir, lambda d: d["model"].update(sha256="../../etc"))
    refused(job_dir, "model.sha256", "is not 64 hex digits")


def test_unknown_adapter(job_dir: Path) -> None:
    edit(job_dir, lambda d: d.update(adapter="tensorrt"))
    refused(job_dir, "adapter", "'tensorrt' is not an adapter on this board", "echo")
    assert isinstance(read_result(job_dir).error(), ProtocolError)


@pytest.mark.parametrize("name", ["../echo", "Echo", "echo.py", "os.path", "", "base"])
def test_adapter_names_are_plain(job_dir: Path, name: str) -> None:
    edit(job_dir, lambda d: d.update(adapter=name))
    refused(job_dir, "adapter", "is not an adapter name")


# --- the document itself -------------------------------------------------------------------------


def test_malformed_json(job_dir: Path) -> None:
    (job_dir / "job.json").write_text('{"schema": "npu-hil-job/1", "inputs": [')
    record = refused(job_dir, "job.json", "not valid JSON")
    assert record["reason"] == "json"


def test_not_utf8(job_dir: Path) -> None:
    (job_dir / "job.json").write_bytes(b'{"schema": "\xff"}')
    refused(job_dir, "job.json", "not UTF-8")


def test_not_an_object(job_dir: Path) -> None:
    (job_dir / "job.json").write_text("[1, 2, 3]")
    refused(job_dir, "job.json", "expected a JSON object, got list")


def test_oversized_job_json(job_dir: Path) -> None:
    (job_dir / "job.json").write_bytes(b" " * (board_job.MAX_JOB_JSON_BYTES + 1))
    refused(job_dir, "job.json", "exceeds the cap")


def test_missing_job_json(job_dir: Path) -> None:
    (job_dir / "job.json").unlink()
    refused(job_dir, "job.json", "no job.json in")


def test_wrong_schema_major(job_dir: Path) -> None:
    edit(job_dir, lambda d: d.update(schema="npu-hil-job/2"))
    record = refused(job_dir, "schema", "has major version 2; this agent speaks npu-hil-job/1")
    assert record["reason"] == "schema"


def test_newer_minor_schema_runs(job_dir: Path) -> None:
    edit(job_dir, lambda d: d.update(schema="npu-hil-job/1.7", added_later={"x": 1}))
    assert run_agent(job_dir).returncode == 0


@pytest.mark.parametrize("schema", [None, "npu-hil-result/1", "npu-hil-job", 1])
def test_foreign_schema(job_dir: Path, schema: Any) -> None:
    edit(job_dir, lambda d: d.update(schema=schema))
    refused(job_dir, "schema", "expected 'npu-hil-job/1'")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d.pop("job_id"), "job_id"),
        (lambda d: d.update(job_id=7), "job_id"),
        (lambda d: d.pop("model"), "model"),
        (lambda d: d["model"].pop("path"), "model.path"),
        (lambda d: d.update(inputs={"a": 1}), "inputs"),
        (lambda d: d["inputs"].__setitem__(0, "input_0.bin"), "inputs[0]"),
        (lambda d: d["inputs"][0].update(pass_through="yes"), "inputs[0].pass_through"),
        (lambda d: d.update(outputs="all"), "outputs"),
        (lambda d: d.update(adapter_options=[1]), "adapter_options"),
        (lambda d: d.update(timeouts={"run": -1}), "timeouts.run"),
        (lambda d: d.update(timeouts={"load": float("inf")}), "timeouts.load"),
    ],
)
def test_fields_of_the_wrong_kind(
    job_dir: Path, change: Callable[[dict[str, Any]], Any], field: str
) -> None:
    edit(job_dir, change)
    refused(job_dir, field)


def test_job_dir_that_does_not_exist(tmp_path: Path) -> None:
    done = run_agent(tmp_path / "nowhere")
    assert done.returncode == board.EXIT_REFUSED
    assert b"nowhere is not a directory" in done.stderr


# --- writes that must not leave the job directory ------------------------------------------------


@pytest.mark.parametrize("name", ["out_0.bin", "in_0.bin", "result.json.tmp", "result.json"])
def test_a_symlink_planted_where_the_agent_writes_is_not_followed(
    job_dir: Path, tmp_path: Path, name: str
) -> None:
    """Another user's link at a name the agent writes must not let the agent write through it:
    the link is replaced by a file of the agent's own and its target stays as it was."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"not yours")
    (job_dir / name).symlink_to(victim)
    done = run_agent(job_dir)
    assert done.returncode == 0, done.stderr.decode()
    assert victim.read_bytes() == b"not yours"
    assert read_result(job_dir).ok
    assert not (job_dir / name).is_symlink()
    assert not (job_dir / "result.json.tmp").exists()


def test_a_job_folder_that_is_a_symlink_is_refused(job_dir: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(job_dir)
    done = run_agent(link)
    assert done.returncode == board.EXIT_REFUSED
    assert "is a symbolic link" in done.stderr.decode()
    assert not (job_dir / "result.json").exists()


def test_a_job_folder_others_may_write_is_refused(job_dir: Path) -> None:
    job_dir.chmod(0o777)
    done = run_agent(job_dir)
    assert done.returncode == board.EXIT_REFUSED
    assert "writable by group or others" in done.stderr.decode()
    assert "mode 0777" in done.stderr.decode()
    assert not (job_dir / "result.json").exists()


# --- bytes bounded before reading ----------------------------------------------------------------


def test_a_shape_is_bounded_by_bytes_not_elements(job_dir: Path) -> None:
    """2**28 float64 elements pass the element cap but need 2 GiB: refused by bytes, before
    any file is read."""
    edit(job_dir, lambda d: d["inputs"][0].update(shape=[1, 2**28], dtype="float64"))
    refused(
        job_dir, "inputs[0].shape", "needs 2147483648 bytes", f"cap {board_job.MAX_INPUT_BYTES}"
    )


def test_a_huge_pass_through_input_is_refused_before_reading(job_dir: Path) -> None:
    """A sparse file over the cap costs nothing to make and would cost its size to read."""
    huge = job_dir / "huge.bin"
    with huge.open("wb") as handle:
        handle.truncate(board_job.MAX_INPUT_BYTES + 1)
    edit(job_dir, lambda d: d["inputs"][0].update(file="huge.bin", pass_through=True))
    record = refused(job_dir, "inputs[0].file", f"cap {board_job.MAX_INPUT_BYTES}")
    assert record["reason"] == "size"


def test_a_fifo_as_input_is_refused_without_blocking(job_dir: Path) -> None:
    os.mkfifo(job_dir / "pipe.bin")
    edit(job_dir, lambda d: d["inputs"][0].update(file="pipe.bin", pass_through=True))
    refused(job_dir, "inputs[0].file", "is not a regular file")


def test_a_deeply_nested_job_json_is_refused(job_dir: Path) -> None:
    depth = 100_000
    (job_dir / "job.json").write_text('{"x": ' + "[" * depth + "]" * depth + "}")
    refused(job_dir, "job.json", "nested deeper than")
