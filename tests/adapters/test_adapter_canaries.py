"""Each adapter's answer to the canary hook (``Adapter.fill_canary``): the zero-copy paths, whose
memory the adapter allocates (``rknn_native``: ``rknn_create_mem``; ``hobot_native``:
``hbSysAllocCachedMem`` / ``hbUCPMallocCached``), fill it with the pattern before the run; the
paths whose runtime allocates the outputs during the run (RKNNLite's ``inference``, hobot_dnn's
``forward``, Kneron PLUS's receive buffer) say they cannot, and why."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from npu_hil.harness.board.adapters import hobot, kneron, rknnlite
from npu_hil.harness.board.adapters.base import Adapter, CanaryFill, canary_bytes
from npu_hil.harness.board.job import canary_for
from tests.adapters import test_adapter_hobot_native as hn
from tests.adapters import test_adapter_rknn_native as rn

PATTERN = canary_for("canary-adapter-test")


def test_canary_bytes_repeat_the_pattern_from_the_first_byte() -> None:
    fill = canary_bytes(PATTERN, 21)
    assert fill.dtype == np.uint8 and fill.size == 21
    assert fill.tobytes() == (PATTERN * 3)[:21]
    assert canary_bytes(PATTERN, 0).size == 0


def test_the_base_contract_fills_nothing_and_says_so() -> None:
    fill = Adapter({}).fill_canary(object(), PATTERN)
    assert fill == CanaryFill(outputs=False, inputs=False, reason=fill.reason) and fill.reason


@pytest.mark.parametrize(
    ("module", "words"),
    [
        (rknnlite, ("RKNNLite", "allocates", "rknn_native")),
        (hobot, ("forward", "allocates", "hobot_native")),
        (kneron, ("device's own memory", "receive buffer")),
    ],
)
def test_runtime_allocated_outputs_cannot_hold_a_canary(
    module: Any, words: tuple[str, ...]
) -> None:
    fill = module.ADAPTER.fill_canary(module.ADAPTER.__new__(module.ADAPTER), None, PATTERN)
    assert not fill.outputs and not fill.inputs
    for word in words:
        assert word in fill.reason


def test_rknn_native_fills_its_zero_copy_memory(
    rknnrt: Any, fake_libs: dict, tmp_path: Path
) -> None:
    a = rn.adapter(fake_libs["rknnrt"])
    model = a.load(rn.model_file(tmp_path))
    syncs = rknnrt.fake_rknn_sync_calls()
    fill = a.fill_canary(model, PATTERN)
    assert fill.outputs and fill.inputs
    for tensor in model.inputs + model.outputs:
        held = ctypes.string_at(tensor.mem.contents.virt_addr, tensor.nbytes)
        assert held == canary_bytes(PATTERN, tensor.nbytes).tobytes(), tensor.name
    assert rknnrt.fake_rknn_sync_calls() - syncs == len(model.inputs) + len(model.outputs)
    # The run writes over it: what comes back is the run's, inputs as copied in.
    x = rn.logical((1, 3, 4, 5))
    sent = rn.pack_nhwc(x, w_stride=16)
    result = a.run(model, [rn.native_input(sent)], None)
    assert result.outputs[0].data.tobytes() == rn.pack_nc1hwc2(x).tobytes()
    assert result.inputs[0].data.tobytes() == sent.tobytes()
    a.release(model)


def test_hobot_native_fills_what_it_allocates_for_one_run(
    dnn: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = hn.adapter(dnn)
    model = a.load(hn.model_file(tmp_path))
    x = hn.logical()
    sent = hn.aligned(x, 32, pad=0x55)
    plain = a.run(model, [hn.data_input(sent)], None)
    # What each memory holds when it is handed to the task (after the fill, before the BPU).
    handed: list[bytes] = []
    attach = type(a)._attach

    def spy(self: Any, slot: Any, planes: list[Any], *rest: Any) -> None:
        handed.extend(ctypes.string_at(p.mem.virAddr, p.size) for p in planes)
        attach(self, slot, planes, *rest)

    monkeypatch.setattr(type(a), "_attach", spy)
    clean0 = dnn.fake_dnn_flush_count(hn.CLEAN)
    fill = a.fill_canary(model, PATTERN)
    assert fill.outputs and fill.inputs
    filled = a.run(model, [hn.data_input(sent)], None)
    # Every allocation (one input, two outputs) filled and cleaned, then the input's own CLEAN.
    assert dnn.fake_dnn_flush_count(hn.CLEAN) - clean0 == 3 + 1
    given, *outputs = handed
    assert given == sent.tobytes()  # the input's bytes went in over the pattern
    assert [len(o) for o in outputs] == [o.data.size for o in plain.outputs]
    assert all(o == canary_bytes(PATTERN, len(o)).tobytes() for o in outputs)
    # The fake BPU writes every byte of its outputs (padding zero): nothing of the pattern left.
    assert [o.data.tobytes() for o in filled.outputs] == [o.data.tobytes() for o in plain.outputs]
    # Armed for one run only.
    handed.clear()
    a.run(model, [hn.data_input(sent)], None)
    assert dnn.fake_dnn_flush_count(hn.CLEAN) - clean0 == 3 + 1 + 1
    assert not any(o == canary_bytes(PATTERN, len(o)).tobytes() for o in handed[1:])
    hn.assert_nothing_held(dnn)
    a.release(model)
