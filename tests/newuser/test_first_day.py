"""A model developer's first day, as a script would do it on a fresh machine: the wheel and the
sdist built from a clone (their file lists checked), a new venv with the wheel installed, the
main job (``npu-hil nightly``) in an empty folder with no repository around, a project of their
own (with its own ``targets.py``, ``harness.py`` and ``conftest.py``), and plain ``pytest`` /
``pytest -n 2`` with no inventory anywhere.

Slow (it builds the wheel and installs every dependency into the new venv), so it runs in its
own tox environment (``tox -e new-user``), or with ``NPU_HIL_NEW_USER=1``.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DIST_INFO = "npu_hil-0.1.0"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        os.environ.get("NPU_HIL_NEW_USER") != "1",
        reason="the new-user run installs npu-hil into a fresh venv: tox -e new-user",
    ),
]

USER_TEST = """\
import numpy as np
import pytest

from npu_hil.harness.plugin import assert_run_ok
from targets import horizon  # the user's own module, not npu-hil's


def test_my_own_targets_module():
    assert horizon == "my horizon"


@pytest.mark.soc("rk3588", "rv1106")
def test_detector_head_layout(run_model):
    frame = np.zeros((1, 3, 64, 64), np.uint8)
    result = run_model("conv3x3", {"input": frame})
    assert_run_ok(result)
    logits = result.output("output")
    assert logits.ndim == 4 and logits.dtype == np.int8  # (1, C, H, W)
    values = result.output("output", dequantize=True)
    assert values.dtype == np.float32 and values.shape == logits.shape
"""


def run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1200, check=False
    )
    return done


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """The wheel and the sdist of a clone of this repository, built as a release is."""
    if shutil.which("git") is None:
        pytest.fail("the new-user run needs git to clone the repository")
    base = tmp_path_factory.mktemp("first-day")
    # What a fresh shell has: no TMPDIR, no PYTHONPATH, nothing of this test session's.
    env = {k: v for k, v in os.environ.items() if k not in ("TMPDIR", "PYTHONPATH")}
    env = {k: v for k, v in env.items() if not k.startswith(("PYTEST", "NPU_HIL", "TOX"))}
    env["HOME"] = str(base / "home")
    Path(env["HOME"]).mkdir()
    env["PIP_CACHE_DIR"] = os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
    clone = base / "npu-hil"
    done = run(["git", "clone", "-q", str(REPO), str(clone)], base, env)
    assert done.returncode == 0, done.stderr
    dist = base / "dist"
    done = run([sys.executable, "-m", "build", "--outdir", str(dist), str(clone)], base, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "deprecat" not in (done.stdout + done.stderr).lower(), done.stdout + done.stderr
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    return wheel, sdist, env


@pytest.fixture(scope="module")
def installed(built: tuple[Path, Path, dict[str, str]]) -> tuple[Path, dict[str, str]]:
    """The wheel installed into a venv of its own, with every dependency."""
    wheel, _, env = built
    base = wheel.parent.parent
    venv = base / "venv"
    done = run([sys.executable, "-m", "venv", str(venv)], base, env)
    assert done.returncode == 0, done.stderr
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    done = run([*pip, str(wheel)], base, env)
    assert done.returncode == 0, done.stdout + done.stderr
    env = {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"}
    return venv, env


def data_files() -> set[str]:
    """Every file of the package the code may read that is not Python (tables, the C source)."""
    return {
        path.relative_to(REPO).as_posix()
        for path in (REPO / "npu_hil").rglob("*")
        if path.is_file()
        and path.suffix not in (".py", ".pyc", ".so")
        and "__pycache__" not in path.parts
    }


def test_the_wheel_and_the_sdist_hold_one_package(built: tuple[Path, Path, dict[str, str]]) -> None:
    wheel, sdist, _ = built
    with zipfile.ZipFile(wheel) as archive:
        members = archive.infolist()
    names = {m.filename for m in members}
    assert {name.split("/")[0] for name in names} == {"npu_hil", f"{DIST_INFO}.dist-info"}
    assert not [m.filename for m in members if stat.S_ISLNK(m.external_attr >> 16)]
    assert data_files() - {"npu_hil/harness/codec/_kernels.c"} <= names
    assert f"{DIST_INFO}.dist-info/licenses/LICENSE" in names
    assert "npu_hil/harness/suite/test_hil_reference_models.py" in names  # the nightly's suite
    if sys.version_info >= (3, 11):  # one wheel for this and every later CPython
        assert wheel.name.endswith("-cp311-abi3-linux_x86_64.whl") or "abi3" in wheel.name
        assert any(n.endswith("_kernels.abi3.so") for n in names)
    with tarfile.open(sdist) as archive:
        entries = archive.getmembers()
    top = f"{DIST_INFO}/"
    files = {e.name.removeprefix(top) for e in entries if e.isfile()}
    assert not [e.name for e in entries if e.issym() or e.islnk()]
    assert {"LICENSE", "pyproject.toml", "setup.py", "README.md"} <= files
    assert data_files() <= files
    # Nothing that needs the repository around it: no tests (they are the repository's).
    assert not [f for f in files if f.startswith("tests/")]


def test_the_nightly_runs_from_the_wheel_in_an_empty_folder(
    installed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    """The main job where a user stands, with no checkout: the suite shipped in the package, the
    built-in simulated farm, the report under ./reports."""
    venv, env = installed
    done = run([str(venv / "bin" / "npu-hil"), "nightly", "-n", "2"], tmp_path, env)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    (summary,) = (tmp_path / "reports").glob("*/summary.json")
    totals = json.loads(summary.read_text(encoding="utf-8"))["outcomes"]
    assert totals["passed"] > 500 and not totals.get("failed"), totals
    assert "Traceback" not in output


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's project whose module names collide with the repository's folders."""
    (tmp_path / "targets.py").write_text('horizon = "my horizon"\n', encoding="utf-8")
    (tmp_path / "harness.py").write_text("WHO = 'the user'\n", encoding="utf-8")
    (tmp_path / "conftest.py").write_text("import harness  # the user's own\n", encoding="utf-8")
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_model.py").write_text(USER_TEST, encoding="utf-8")
    return tmp_path


def test_the_wheel_claims_one_top_level_name(installed: tuple[Path, dict[str, str]]) -> None:
    venv, _ = installed
    site = next((venv / "lib").glob("python3*/site-packages"))
    assert (site / "npu_hil" / "harness" / "plugin" / "__init__.py").is_file()
    assert not (site / "npu_hil" / "harness").is_symlink()  # the wheel holds copies
    assert not (site / "harness").exists() and not (site / "targets").exists()
    top_level = next(site.glob("npu_hil-*.dist-info/top_level.txt"))
    assert top_level.read_text(encoding="utf-8").split() == ["npu_hil"]


@pytest.mark.parametrize("workers", [None, "2"], ids=["pytest", "pytest-n-2"])
def test_plain_pytest_runs_on_the_builtin_simulated_farm(
    installed: tuple[Path, dict[str, str]], project: Path, workers: str | None
) -> None:
    venv, env = installed
    cmd = [str(venv / "bin" / "pytest"), "-p", "no:cacheprovider"]
    cmd += ["-n", workers] if workers else []
    done = run(cmd, project, env)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "3 passed" in output, output
    assert "built-in simulated farm" in output, output  # the summary's line, xdist's too
    assert "Traceback" not in output


def test_inventory_init_then_pytest_uses_it(
    installed: tuple[Path, dict[str, str]], project: Path
) -> None:
    venv, env = installed
    done = run([str(venv / "bin" / "npu-hil"), "inventory", "init"], project, env)
    assert done.returncode == 0, done.stderr
    assert (project / "inventory.yaml").is_file()
    done = run([str(venv / "bin" / "pytest"), "-p", "no:cacheprovider"], project, env)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "built-in simulated farm" not in output
    assert "rk3588-01" in output or "3 passed" in output, output


def test_the_test_support_is_a_wheel_of_its_own(installed: tuple[Path, dict[str, str]]) -> None:
    """`npu-hil simfarm` without the test support says how to get it; the clone's testkit/
    installs beside the wheel as a distribution of its own, with one top-level name, and the
    command works. Last in this file: the other tests use the venv without it."""
    venv, env = installed
    npu_hil = str(venv / "bin" / "npu-hil")
    farm = str(venv.parent / "simfarm")
    done = run([npu_hil, "simfarm", "status", "--dir", farm], venv.parent, env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == (
        "npu-hil: error: npu-hil simfarm needs npu-hil's test support, a distribution of its "
        "own: pip install 'npu-hil[simfarm]' (from a clone: pip install ./testkit)"
    )
    testkit = venv.parent / "npu-hil" / "testkit"
    python = str(venv / "bin" / "python")
    done = run([python, "-m", "pip", "install", "-q", str(testkit)], venv.parent, env)
    assert done.returncode == 0, done.stdout + done.stderr
    site = next((venv / "lib").glob("python3*/site-packages"))
    top_level = next(site.glob("npu_hil_testkit-*.dist-info/top_level.txt"))
    assert top_level.read_text(encoding="utf-8").split() == ["npu_hil_testkit"]
    license_file = next(site.glob("npu_hil_testkit-*.dist-info/licenses/LICENSE"))
    assert license_file.read_bytes() == (REPO / "LICENSE").read_bytes()
    done = run([npu_hil, "simfarm", "status", "--dir", farm], venv.parent, env)
    assert (done.returncode, done.stdout) == (1, "nothing running\n"), done.stderr
