"""The host side of the board agent (:mod:`npu_hil.harness.board`): deploying and driving it, jobs
and results, its stream over a serial console; see docs/runtime/agent.md."""
