"""No silent green in a plain pytest run: an unknown --target/--board is a usage error, and a run
in which no board case reached a board fails with the reason (console, summary.json,
report.html)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TESTS = """
import pytest

@pytest.mark.soc("rk3588")
def test_rk(board):
    assert board.simulated

@pytest.mark.soc("rk3566", "kl730")
def test_other(board):
    assert board.simulated
"""


def _run_dirs(project: pytest.Pytester) -> list[Path]:
    root = project.path / "reports"
    return (
        [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
        if root.exists()
        else []
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--target", "nope"],
            "--target 'nope': no such target (known: rk3566, rk3568, rk3588",
        ),
        (
            ["--target", "rk3588", "--target", "rk3562"],
            "--target 'rk3562': no board of that target in ",
        ),
        (
            ["--board", "nosuch-01"],
            "--board 'nosuch-01': no such board in ",
        ),
    ],
)
def test_unknown_values_are_usage_errors(
    project: pytest.Pytester, args: list[str], expected: str
) -> None:
    project.makepyfile(TESTS)
    result = project.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.startswith("ERROR:")]
    assert len(errors) == 1 and expected in errors[0], result.errlines
    if "--board" in args:
        assert "(its boards: rk3588-01, rk3566-01, kl730-01)" in errors[0]
    else:
        assert "rk3588, rk3566, kl730)" in errors[0]
    assert _run_dirs(project) == []  # nothing ran


@pytest.mark.slow
def test_backend_hw_on_an_all_simulated_inventory_fails_with_the_reason(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(TESTS)
    result = project.runpytest("--backend", "hw", "-n", "2")
    result.assert_outcomes(skipped=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["npu-hil: FAILED RUN: no test reached a board: 3 board cases (3 skipped)*--backend hw*"]
    )
    (run_dir,) = _run_dirs(project)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert "no board for SoC rk3588" in summary["run_failure"]
    assert summary["meta"]["run_failure"] == summary["run_failure"]
    assert summary["meta"]["pytest_exit"] == 1
    assert "FAILED RUN: no test reached a board" in (run_dir / "report.html").read_text()


def test_filters_that_select_no_board_together_are_a_usage_error(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(TESTS)
    result = project.runpytest("--target", "rk3588", "--board", "kl730-01")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (error,) = [line for line in result.errlines if line.startswith("ERROR:")]
    assert "--target rk3588 --board kl730-01: no board of " in error
    assert "is both (the two filters select nothing together)" in error
    assert _run_dirs(project) == []


@pytest.mark.slow
def test_unreachable_boards_are_named_in_the_failure(project: pytest.Pytester) -> None:
    """Errors already fail the run; the reason still says that nothing reached a board."""
    project.makefile(
        ".yaml",
        inventory=(
            "boards:\n  - {name: rk3588-01, target: rk3588, backend: hw, fallback: none,\n"
            "     transport: {kind: ssh, host: 127.0.0.1, port: 9}}\n"
        ),
    )
    project.makepyfile(TESTS.split('@pytest.mark.soc("rk3566"')[0])
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*FAILED RUN: no test reached a board: 1 board cases (1 error)*"])


@pytest.mark.slow
def test_a_soc_the_inventory_lacks_stays_a_skip_that_says_so(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS + '\n@pytest.mark.soc("rv1106")\ndef test_rv(board):\n    pass\n')
    result = project.runpytest("--target", "rk3588", "-rs")
    result.assert_outcomes(passed=1, skipped=1, deselected=2)
    result.stdout.fnmatch_lines(["*no board for SoC rv1106 in *(filters: --target rk3588)*"])


@pytest.mark.slow
def test_a_run_that_reaches_a_board_is_unchanged(project: pytest.Pytester) -> None:
    project.makepyfile(TESTS)
    result = project.runpytest("--target", "rk3588")
    # the other SoCs' cases are deselected by the filter, not skipped placeholders
    result.assert_outcomes(passed=1, deselected=2)
    assert result.ret == pytest.ExitCode.OK
    assert "FAILED RUN" not in result.stdout.str()
    (run_dir,) = _run_dirs(project)
    assert json.loads((run_dir / "summary.json").read_text())["run_failure"] is None
