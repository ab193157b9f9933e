"""A process that holds a labgrid place until it is told to stop or is killed: the other side of
the crash-safety and sharing tests.

    python holder.py COORDINATOR PLACE WORKDIR [--exit | --killed-before-acquire |
                                               --killed-after-acquire]

Prints ``held <identity> <shared|acquired>`` once the place is held, then waits for a line on
stdin (or any signal). With ``--exit`` it returns from ``main`` without closing anything, so only
the interpreter's exit hooks can release the place. With ``--killed-before-acquire`` or
``--killed-after-acquire`` it sends itself SIGKILL just before or just after the coordinator
acquires the place for it: the narrowest windows a crash can hit.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
from pathlib import Path

from npu_hil.harness.labgrid.config import LabgridConfig
from npu_hil.harness.labgrid.places import LabgridPlaces


def main(argv: list[str]) -> int:
    # SIGUSR1 prints every thread's stack: what a test that waited in vain shows.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    coordinator, place, workdir = argv[:3]
    places = LabgridPlaces(
        LabgridConfig(coordinator, places=(place,), wait=30.0), workdir=Path(workdir)
    )
    killed = {"--killed-before-acquire": "before", "--killed-after-acquire": "after"}
    moment = next((killed[arg] for arg in argv if arg in killed), None)
    if moment is not None:
        acquire = places._client.acquire

        def acquire_and_die(name: str) -> None:
            if moment == "after":
                acquire(name)
            os.kill(os.getpid(), signal.SIGKILL)

        places._client.acquire = acquire_and_die  # type: ignore[method-assign]
    places.acquire(place)
    shared = "shared" if places._held[place].shared else "acquired"
    print(f"held {places.identity} {shared}", flush=True)
    if "--exit" in argv:
        return 0
    sys.stdin.readline()
    places.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
