"""npu-hil board agent: runs inference jobs on a board and writes back the raw device buffers.

This package is what the host deploys to a board (``agent/<bundle>/npu_hil_board/``, with the
extra adapters the host sends in ``agent/<bundle>/adapters/``) and starts as
``python3 agent/<bundle>/npu_hil_board --serve`` (:mod:`__main__`). It runs on Python >= 3.8
with the standard library and numpy, and imports nothing of the host harness (boards ship old
Pythons and never get the harness installed; a test walks the imports). The host imports its
wire format (:mod:`wire`, :mod:`job`) from here, never the other way round.

One job per module:

- ``frames``, ``wire``: the byte framing, schema names, file names, error records;
- ``job``: the job document's checks and bounds; ``folders``: folders of our own;
- ``loader``: where adapters are found; ``cache``: adapters and loaded models kept between
  jobs, and the runtime thread with its watchdog; ``agent``: running one job;
  ``results``: the result, its buffer records and a kept job's files;
- ``serve``: the serve loop; ``listen``: the listener on a Unix socket; ``relay``: a shell
  command carrying requests to that socket (a serial console); ``main``: the command line;
- ``adapters/``: the vendor runtimes behind one contract (``adapters/base.py``).

Importing the package runs nothing: the host imports ``wire`` without numpy.
"""
