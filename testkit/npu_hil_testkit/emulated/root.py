"""Build, find and describe an emulated board's root filesystem in the user's cache.

Layout (``CACHE`` is ``$XDG_CACHE_HOME/npu-hil`` or ``~/.cache/npu-hil``, created 0700)::

    CACHE/roots/<key>/root           the Debian tree (mmdebstrap --variant=extract)
    CACHE/roots/<key>/pycache        its bytecode (PYTHONPYCACHEPREFIX, see write_launcher)
    CACHE/roots/<key>/launch-python  the root's python3 under qemu-user
    CACHE/roots/<key>/root.json      the recipe, the build time, the interpreter's versions

A root is complete when ``root.json`` exists: a build works in ``<key>.partial`` and is renamed
into place at the end, so an interrupted build is never mistaken for a root.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from npu_hil.harness.errors import NpuHilError
from npu_hil_testkit.emulated.recipe import DEFAULT_RECIPE, RootRecipe, host_mirror

__all__ = [
    "BUILD_TIMEOUT",
    "EmulatedRoot",
    "EmulationError",
    "MissingEmulatorError",
    "build_root",
    "cache_dir",
    "find_root",
    "missing_tools",
    "probe_python",
    "write_launcher",
]

BUILD_TIMEOUT = 900.0
"""Seconds a cold build may take (download and unpack about 25 s, bytecode warm-up under
emulation about a minute on a loaded 2-core machine) before it is given up."""
MANIFEST = "root.json"
UNMERGED_DIRS = ("bin", "sbin", "lib")


class EmulationError(NpuHilError):
    """An emulated root that cannot be built or run: the message says which step and why."""


class MissingEmulatorError(EmulationError):
    """A program the emulated boards need (qemu-user, mmdebstrap) is not installed."""


@dataclass(frozen=True)
class EmulatedRoot:
    """A built root: where it is, how to run its Python, and what it was built from."""

    dir: Path
    recipe: dict[str, Any]
    seconds: float
    python_version: str
    numpy_version: str

    @property
    def root(self) -> Path:
        return self.dir / "root"

    @property
    def launcher(self) -> Path:
        return self.dir / "launch-python"

    @property
    def pycache(self) -> Path:
        return self.dir / "pycache"

    @property
    def qemu(self) -> str:
        return str(self.recipe["qemu"])

    @property
    def site_packages(self) -> Path:
        """Where a wheel for this root's Python is unpacked (``/usr/local/lib/pythonX.Y/
        dist-packages``, on Debian's path for locally installed modules)."""
        major_minor = ".".join(self.python_version.split(".")[:2])
        return self.root / f"usr/local/lib/python{major_minor}/dist-packages"

    def to_dict(self) -> dict[str, Any]:
        return {
            "dir": str(self.dir),
            "root": str(self.root),
            "launcher": str(self.launcher),
            "seconds": self.seconds,
            "python": self.python_version,
            "numpy": self.numpy_version,
            "recipe": self.recipe,
        }


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/npu-hil`` (or ``~/.cache/npu-hil``), created private to the user."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    folder = Path(base) / "npu-hil"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def missing_tools(recipe: RootRecipe = DEFAULT_RECIPE, *, build: bool = True) -> list[str]:
    """The programs an emulated board needs that are not on ``PATH`` (with the Debian package
    that brings each)."""
    wanted = {recipe.qemu: "qemu-user"}
    if build:
        wanted["mmdebstrap"] = "mmdebstrap"
    return [
        f"{tool} (Debian package {pkg})" for tool, pkg in wanted.items() if not shutil.which(tool)
    ]


def _roots(base: Path | None) -> Path:
    return (base or cache_dir()) / "roots"


def find_root(
    recipe: RootRecipe = DEFAULT_RECIPE, *, base: Path | None = None
) -> EmulatedRoot | None:
    """The complete root built from ``recipe``, or None when there is none yet."""
    folder = _roots(base) / recipe.key()
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return EmulatedRoot(
        dir=folder,
        recipe=data["recipe"],
        seconds=float(data["seconds"]),
        python_version=str(data["python"]),
        numpy_version=str(data["numpy"]),
    )


def _locked(folder: Path) -> FileLock:
    """One build per recipe at a time: a second caller waits, then finds the root built."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return FileLock(folder / ".lock")


def _run(argv: list[str], *, step: str, timeout: float, env: dict[str, str] | None = None) -> str:
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, check=False, env=env
        )
    except subprocess.TimeoutExpired:
        raise EmulationError(f"{step}: gave up after {timeout:.0f} s: {' '.join(argv)}") from None
    except OSError as error:
        raise EmulationError(f"{step}: cannot run {argv[0]}: {error}") from None
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise EmulationError(f"{step}: {' '.join(argv)} exited {done.returncode}:\n{tail}")
    return done.stdout


def _fix_up(recipe: RootRecipe, root: Path) -> None:
    """What the skipped maintainer scripts and the merged-/usr layout would have provided."""
    for name in UNMERGED_DIRS:
        # Debian 12's extract leaves /lib a real folder; later suites may leave none at all,
        # and the program interpreter (/lib/ld-linux-*.so.1) must be found either way.
        if not (root / name).exists() and (root / "usr" / name).is_dir():
            (root / name).symlink_to(f"usr/{name}")
    for link, target in recipe.links:
        path = root / link.lstrip("/")
        if path.is_symlink() or path.exists():
            continue
        if not (path.parent / target).exists():
            raise EmulationError(f"fix-up {link} -> {target}: {path.parent / target} is missing")
        path.symlink_to(target)


def probe_python(launcher: Path, *, timeout: float = 300.0) -> dict[str, str]:
    """Run the root's interpreter once: its version, numpy's and its machine (which must be the
    emulated one, or the launcher is running this machine's Python)."""
    out = _run(
        [
            str(launcher),
            "-c",
            "import json, platform, numpy; print(json.dumps({'python': platform.python_version(),"
            " 'numpy': numpy.__version__, 'machine': platform.machine()}))",
        ],
        step="probe the root's python3",
        timeout=timeout,
    )
    data: dict[str, str] = json.loads(out.strip().splitlines()[-1])
    return data


def build_root(
    recipe: RootRecipe = DEFAULT_RECIPE,
    *,
    base: Path | None = None,
    timeout: float = BUILD_TIMEOUT,
    force: bool = False,
) -> EmulatedRoot:
    """The root for ``recipe``: the cached one, or a new one built now (``force``: rebuilt).

    Raises :class:`MissingEmulatorError` when qemu-user or mmdebstrap is missing and
    :class:`EmulationError` when a step fails or the whole build exceeds ``timeout`` seconds.
    """
    missing = missing_tools(recipe)
    if missing:
        raise MissingEmulatorError(f"emulated root: not installed: {', '.join(missing)}")
    roots = _roots(base)
    with _locked(roots):
        existing = find_root(recipe, base=base)
        if existing is not None and not force:
            return existing
        started = time.monotonic()
        final = roots / recipe.key()
        partial = roots / f"{recipe.key()}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(mode=0o700)
        mirror = recipe.mirror or host_mirror()
        if mirror is None:
            raise EmulationError(
                "no Debian mirror: this machine's apt sources name none; give the recipe one"
            )
        argv = recipe.mmdebstrap_argv(str(partial / "root"), mirror)
        mode = "--mode=root" if os.geteuid() == 0 else "--mode=unshare"
        argv.insert(1, mode)
        _run(argv, step=f"unpack Debian {recipe.suite} for {recipe.arch}", timeout=timeout)
        _fix_up(recipe, partial / "root")
        # The interpreter's site folders must exist in the root: where one is missing, qemu
        # finds this machine's folder of that name, and its x86_64 modules.
        for site in (f"usr/local/lib/python{recipe.python}", f"usr/lib/python{recipe.python}"):
            (partial / "root" / site / "dist-packages").mkdir(parents=True, exist_ok=True)
        (partial / "pycache").mkdir(mode=0o700)
        # The launcher names the final folder: it is renamed there before anything runs it
        # for good; the warm-up below goes through a launcher of the partial tree.
        write_launcher(
            partial / "launch-python",
            root=final / "root",
            qemu=recipe.qemu,
            pycache=final / "pycache",
        )
        warm = write_launcher(
            partial / ".warm-python",
            root=partial / "root",
            qemu=recipe.qemu,
            pycache=partial / "pycache",
        )
        left = max(60.0, timeout - (time.monotonic() - started))
        # The caller's PYTHONDONTWRITEBYTECODE would leave the cache empty and every job
        # would compile numpy again.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        _run(
            [str(warm), "-c", "import " + ", ".join(recipe.warm)],
            step="compile the root's bytecode",
            timeout=left,
            env=env,
        )
        facts = probe_python(warm, timeout=left)
        if facts.get("machine") != recipe.machine:
            raise EmulationError(
                f"probe the root's python3: expected machine {recipe.machine!r}, got "
                f"{facts.get('machine')!r} (is {recipe.qemu} really emulating?)"
            )
        warm.unlink()
        seconds = round(time.monotonic() - started, 1)
        manifest = {
            "recipe": recipe.to_dict(),
            "key": recipe.key(),
            "seconds": seconds,
            "python": facts["python"],
            "numpy": facts["numpy"],
            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (partial / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        if final.exists():
            shutil.rmtree(final)
        partial.rename(final)
    built = find_root(recipe, base=base)
    assert built is not None
    return built


# The emulated board's ``python``: a shell script that runs the root's interpreter under
# ``qemu-user``, with no binfmt registration and no chroot.
#
# ``qemu-aarch64 -L ROOT`` looks every absolute path up in ROOT first and falls back to this
# machine's path when ROOT has no such file. So the root's ``/usr/lib/python3.11``, its libraries
# and the files a vendor's Python layer probes (``/proc/device-tree/compatible``, ``/dev/dri/...``)
# are the root's, while a board workdir (which only exists on this machine) is the host's. A file
# that does not yet exist is created on the host side too, which is why the bytecode cache is a
# host folder of its own (``PYTHONPYCACHEPREFIX``) rather than ``__pycache__`` next to the sources.


def write_launcher(
    path: Path, *, root: Path, qemu: str, pycache: Path, cpu: str | None = None
) -> Path:
    """Write an executable ``path`` that runs ``root``'s ``python3`` with the caller's arguments.

    The host's ``PYTHONPATH`` is dropped: it names trees of this machine the board's interpreter
    must not import from. ``PYTHONHOME=/usr`` makes the interpreter's own paths the board's
    (``/usr/lib/python3.11``, which qemu finds in the root) instead of paths derived from where
    the root lies on this machine, so module paths, tracebacks and the bytecode cache read as on a
    board, and are the same in every board made from one root. ``cpu`` is qemu's ``-cpu`` model
    (e.g. ``cortex-a76``).
    """
    cpu_args = f" -cpu {shlex.quote(cpu)}" if cpu else ""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(
        "#!/bin/sh\n"
        "# An emulated board's Python (written by npu-hil): the root's python3 under qemu-user.\n"
        "unset PYTHONPATH\n"
        "PYTHONHOME=/usr\n"
        "export PYTHONHOME\n"
        f"PYTHONPYCACHEPREFIX={shlex.quote(str(pycache))}\n"
        "export PYTHONPYCACHEPREFIX\n"
        f"exec {shlex.quote(qemu)}{cpu_args} -L {shlex.quote(str(root))} "
        f'{shlex.quote(str(root / "usr/bin/python3"))} "$@"\n',
        encoding="utf-8",
    )
    os.chmod(temporary, 0o755)
    temporary.replace(path)
    return path
