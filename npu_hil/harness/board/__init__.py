"""npu-hil board agent: runs inference jobs on a board and sends back the raw device buffers (what
is deployed, how it starts, what it may import: ``docs/runtime/agent.md``, Inside the agent).
Importing the package runs nothing: the host imports ``wire`` without numpy."""
