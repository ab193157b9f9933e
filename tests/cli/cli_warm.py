"""Imported once by the fork server of the CLI's bad-input cases (``cli_bad_inputs.PRELOAD``):
loads what the subcommands load on first use, so every case forked from the server starts with
it, as a case forked from a warm test process did."""

from __future__ import annotations

import onnx  # noqa: F401
import rich.console  # noqa: F401

import npu_hil.harness.cli.main
import npu_hil.harness.cli.simfarm_cmd
import npu_hil.harness.farm.inventory  # noqa: F401
from npu_hil.targets.registry import load_vendors

load_vendors()
