"""Without the test support (npu-hil-testkit, a distribution of its own), `npu-hil` still starts,
still lists `simfarm`, and `npu-hil simfarm` and `--simfarm` say how to install it: exit 2 and
one line, never a traceback."""

from __future__ import annotations

import sys

import pytest

from npu_hil.harness.cli.main import main


@pytest.fixture
def no_test_support(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if npu-hil-testkit were not installed: importing it fails as a missing module does."""
    for name in list(sys.modules):
        if name.startswith(("npu_hil_testkit", "npu_hil.harness.cli.simfarm_cmd")):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "npu_hil_testkit", None)


@pytest.mark.usefixtures("no_test_support")
def test_simfarm_says_how_to_install_the_test_support(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simfarm", "up", "--boards", "2"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "npu-hil: error: npu-hil simfarm needs npu-hil's test support, a distribution of its own: "
        "pip install 'npu-hil[simfarm]' (from a clone: pip install ./testkit)\n"
    )


@pytest.mark.usefixtures("no_test_support")
def test_the_other_commands_and_the_listing_do_not_need_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["targets", "list", "--json"]) == 0
    with pytest.raises(SystemExit) as help_exit:
        main(["--help"])
    assert help_exit.value.code == 0
    assert "simfarm" in capsys.readouterr().out


@pytest.mark.usefixtures("no_test_support")
def test_the_simfarm_option_is_a_usage_error_naming_the_install(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("--simfarm", "ssh")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.startswith("ERROR:")]
    assert errors == [
        "ERROR: --simfarm needs npu-hil's test support, a distribution of its own: "
        "pip install 'npu-hil[simfarm]' (from a clone: pip install ./testkit)"
    ]
