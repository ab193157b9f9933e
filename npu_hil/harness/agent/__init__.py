"""The host side of the board agent: deploying and driving it (``client``), writing jobs and
reading results (``protocol``), its stream over a serial console (``serial_stream``), and the
adapters that need the harness itself (``host_adapters/``: the simulated runtime). The agent is
the board package, :mod:`npu_hil.harness.board`, whose wire format this side imports."""
