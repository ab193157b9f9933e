"""npu-hil board agent: runs inference jobs on a board and sends back the raw device buffers.

What is deployed, how it starts, and what it may import: ``docs/runtime/agent.md`` (Inside the
agent); one module per job (DESIGN.md's tree lists them). Importing the package runs nothing: the
host imports ``wire`` without numpy.
"""
