"""The plugin is inert until a test asks for a board: installed but unused, it reads no
inventory, writes no report, prints nothing, imports nothing heavy and costs a pytest run of
someone else's tests no measurable time (held against ``-p no:npu_hil`` in the same run)."""

from __future__ import annotations

import importlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest


def test_plain_project_is_untouched(pytester: pytest.Pytester) -> None:
    # A broken inventory.yaml in the rootdir is never read when no test uses a board.
    pytester.makefile(".yaml", inventory="boards: [\n")
    pytester.makepyfile(
        """
        def test_one():
            assert 1 + 1 == 2

        def test_two(tmp_path):
            assert tmp_path.exists()
        """
    )
    result = pytester.runpytest("--strict-markers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert not (pytester.path / "reports").exists()
    assert not _npu_hil_lines(result.outlines + result.errlines)


def test_a_run_without_board_tests_does_not_name_the_builtin_farm(
    pytester: pytest.Pytester,
) -> None:
    # No inventory anywhere: a board test would run on the built-in simulated farm and the run's
    # summary would say so (tests/plugin/test_plugin_parametrisation.py); plain tests hear nothing.
    pytester.makepyfile("def test_one():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert not _npu_hil_lines(result.outlines + result.errlines)
    assert "built-in simulated farm" not in result.stdout.str()


def _npu_hil_lines(lines: list[str]) -> list[str]:
    """What the plugin said (pytest's own header lists the installed plugins, npu-hil too)."""
    return [line for line in lines if "npu-hil" in line and not line.startswith("plugins:")]


def test_options_and_markers_are_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    for option in (
        "--inventory",
        "--backend",
        "--target",
        "--board",
        "--reports",
        "--keep-remote",
        "--hil-retries",
    ):
        result.stdout.fnmatch_lines([f"*{option}*"])
    markers = pytester.runpytest("--markers")
    for marker in ("soc(*names)", "vendor(*names)", "hw_only", "sim_only", "layout(*names)"):
        markers.stdout.fnmatch_lines([f"@pytest.mark.{marker}*"])


def test_strict_markers_accept_the_plugin_markers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.hw_only
        @pytest.mark.sim_only
        @pytest.mark.layout("NC1HWC2", "1W16C8B")
        def test_marked():
            pass
        """
    )
    result = pytester.runpytest("--strict-markers")
    result.assert_outcomes(passed=1)


def test_codec_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_codec(codec):
            layout = codec.get_layout("rk3588", "NC1HWC2", (1, 3, 2, 2), "int8")
            assert layout.nbytes > 0
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


# ---------------------------------------------------------------- a user's unrelated suite

PLAIN_TESTS = 200
PLUGIN = "npu_hil.harness.plugin"
MODULES_ENV = "NPU_HIL_TEST_MODULES_OUT"
# What the plugin must not import for a suite that uses no board: third-party packages (by their
# top-level name) and the harness's own heavy modules.
HEAVY_PACKAGES = (
    "onnx",
    "onnxruntime",
    "matplotlib",
    "paramiko",
    "numpy",
    "yaml",
    "filelock",
    "pydantic",
    "pydantic_core",
)
HEAVY_MODULES = (
    "npu_hil.harness.farm.farm",
    "npu_hil.harness.farm.session",
    "npu_hil.harness.farm.inventory",
    "npu_hil.harness.agent.client",
    "npu_hil.harness.codec",
    "npu_hil.harness.models",
    "npu_hil.harness.pipeline",
    "npu_hil.harness.sim",
    "npu_hil.harness.report.writer",
    "npu_hil.harness.history.store",
    "npu_hil.targets",
)
# All the harness an unused plugin imports besides its own modules: the constants its options
# show as defaults (and the packages around them, whose names are imported on first use).
LIGHT_MODULES = {
    "npu_hil",
    "npu_hil.harness",
    "npu_hil.harness.farm",
    "npu_hil.harness.farm.defaults",
    "npu_hil.harness.lazyexports",
    "npu_hil.harness.history",
}


@pytest.fixture(scope="module")
def plain_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Someone else's suite: plain tests, its own ini and conftest (so this repository's
    conftest does not apply), a conftest that lists the imported modules when asked to."""
    root = tmp_path_factory.mktemp("plain-suite")
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (root / "conftest.py").write_text(
        "import json, os, sys\n\n\n"
        "def pytest_unconfigure(config):\n"
        f"    out = os.environ.get({MODULES_ENV!r})\n"
        "    if out:\n"
        "        with open(out, 'w', encoding='utf-8') as f:\n"
        "            json.dump(sorted(sys.modules), f)\n",
        encoding="utf-8",
    )
    per_module = 20
    for number in range(PLAIN_TESTS // per_module):
        body = "".join(
            f"def test_{i}():\n    assert {i} + 1 > {i}\n\n\n" for i in range(per_module)
        )
        (root / f"test_plain_{number}.py").write_text(body, encoding="utf-8")
    return root


def _env() -> dict[str, str]:
    """This environment without the outer run's pytest settings (addopts, xdist worker), and
    with bytecode written, as an installed package has it."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PYTEST_") and k != "PYTHONDONTWRITEBYTECODE"
    }


def _run_plain(
    suite: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """``python -m pytest -q`` on the suite: the run, its wall time and its CPU time (user +
    system of the child: what the run cost, whatever else the machine was doing)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        cmd, cwd=suite, env=env or _env(), capture_output=True, text=True, timeout=300, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{PLAIN_TESTS} passed" in done.stdout, done.stdout
    return done, wall, cpu


def _modules(suite: Path, tmp_path: Path, *args: str) -> tuple[set[str], list[str]]:
    """The modules imported at the end of a run of the suite, and the run's output lines."""
    out = tmp_path / f"modules{len(args)}.json"
    done, _, _ = _run_plain(suite, *args, env={**_env(), MODULES_ENV: str(out)})
    lines = (done.stdout + done.stderr).splitlines()
    return set(json.loads(out.read_text(encoding="utf-8"))), lines


def test_an_unused_plugin_imports_nothing_heavy_and_prints_nothing(
    plain_suite: Path, tmp_path: Path
) -> None:
    with_plugin, said = _modules(plain_suite, tmp_path)
    without, said_without = _modules(plain_suite, tmp_path, "-p", "no:npu_hil")
    assert "npu_hil.harness.plugin.farm" in with_plugin  # the plugin was loaded
    assert "npu_hil.harness.plugin" not in without
    added = with_plugin - without
    heavy = sorted(m for m in added if m.split(".")[0] in HEAVY_PACKAGES)
    assert not heavy, f"an unused plugin imported {heavy}"
    assert not [m for m in HEAVY_MODULES if m in with_plugin]
    harness = {m for m in added if m.startswith("npu_hil") and not m.startswith(PLUGIN)}
    assert harness <= LIGHT_MODULES, f"beyond the light modules: {sorted(harness - LIGHT_MODULES)}"
    # The same output as without the plugin, the time of the run aside.
    assert not _npu_hil_lines(said)
    assert said[:-1] == said_without[:-1]


@pytest.mark.parametrize("package", ["npu_hil.harness.farm", "npu_hil.harness.report"])
def test_the_packages_the_plugin_reads_export_their_names_on_first_use(package: str) -> None:
    """Every name of the package's ``__all__`` is its module's own object, and importing the
    package (as the plugin's light modules do) imports none of them."""
    module = importlib.import_module(package)
    for name in module.__all__:
        source = importlib.import_module(f"{package}.{module._EXPORTS[name]}")
        assert getattr(module, name) is getattr(source, name), name
    assert set(module._EXPORTS) == set(module.__all__)
    code = f"import sys, {package}; print([m for m in sys.modules if m.startswith('{package}.')])"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout


# What the plugin's code may run for a suite that uses no board, in Python function calls (a
# count, the same on any machine; the time it stands for is benchmarks/bench_plugin_inert.py's):
# each plain test passes through the few hooks the plugin implements, each of which returns at
# once (23 calls a test today), and the run as a whole through its start and end (137).
CALLS_PER_TEST = 30
CALLS_PER_RUN = 200
COUNT_CALLS = """
import collections, json, sys
import pytest
calls = collections.Counter()

def count(frame, event, arg):
    module = frame.f_globals.get("__name__") or ""
    if event == "call" and (module == "npu_hil" or module.startswith("npu_hil.")):
        calls[module + ":" + frame.f_code.co_name] += 1

sys.setprofile(count)
code = pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[2:]])
sys.setprofile(None)
with open(sys.argv[1], "w", encoding="utf-8") as out:
    json.dump(dict(calls), out)
sys.exit(code)
"""


def _plugin_calls(suite: Path, tmp_path: Path, *args: str) -> dict[str, int]:
    """How many times each function of npu_hil ran in a run of the suite (pytest in-process
    under a profiler that counts calls into the package's modules), by module and name."""
    out = tmp_path / "calls.json"
    done = subprocess.run(
        [sys.executable, "-c", COUNT_CALLS, str(out), *args],
        cwd=suite,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    calls: dict[str, int] = json.loads(out.read_text(encoding="utf-8"))
    return calls


def test_an_unused_plugin_runs_a_few_calls_a_test(plain_suite: Path, tmp_path: Path) -> None:
    """The whole suite and a tenth of it: what grows with the number of tests is the plugin's
    cost per test, what does not is its cost per run; both are held to a small budget."""
    tenth = [str(path.name) for path in sorted(plain_suite.glob("test_plain_*.py"))][:1]
    whole = _plugin_calls(plain_suite, tmp_path)
    some = _plugin_calls(plain_suite, tmp_path, *tenth)
    tests_whole, tests_some = PLAIN_TESTS, PLAIN_TESTS // 10
    per_test = (sum(whole.values()) - sum(some.values())) / (tests_whole - tests_some)
    per_run = sum(some.values()) - per_test * tests_some
    busiest = sorted(whole.items(), key=lambda kv: -kv[1])[:8]
    figures = f"{per_test:.1f} calls a test, {per_run:.0f} a run; busiest: {busiest}"
    print(figures)
    assert f"{PLUGIN}.farm:pytest_itemcollected" in whole  # the plugin was counted
    assert per_test <= CALLS_PER_TEST, figures
    assert per_run <= CALLS_PER_RUN, figures
    # Nothing of the farm, the codec or the report ran: only the plugin's hooks and their
    # helpers (and the light modules' imports).
    ran = {name.split(":")[0] for name in whole}
    beyond = sorted(m for m in ran if not m.startswith(PLUGIN) and m not in LIGHT_MODULES)
    assert not beyond, f"an unused plugin ran code in {beyond}"
