"""What an emulated board's root filesystem is made of, as data: the recipe and its cache key.

The key is a hash of everything that decides the tree (architecture, suite, mirror, variant, the
packages, the fix-ups and this module's recipe version), so a changed recipe is a new root, built
beside the old one, never a stale tree reused.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["DEFAULT_RECIPE", "RECIPE_VERSION", "RootRecipe", "host_mirror"]

RECIPE_VERSION = 3
"""Bumped when the build steps themselves change (what :mod:`npu_hil_testkit.emulated.root` does
with a recipe), so roots built by older steps are not taken for current ones."""


@dataclass(frozen=True)
class RootRecipe:
    """A Debian root for another CPU, unpacked by ``mmdebstrap --variant=extract``.

    ``extract`` runs no maintainer script, so the tree needs no emulator to be built (no binfmt
    registration, no chroot); what the scripts would have done and a Python program needs is in
    ``links`` (alternatives, as ``update-alternatives`` would set them).
    """

    arch: str = "arm64"
    """Debian's name of the architecture."""
    qemu: str = "qemu-aarch64"
    """The user-mode emulator that runs the root's programs."""
    machine: str = "aarch64"
    """What ``uname -m`` (and ``platform.machine()``) says inside."""
    suite: str = "oldstable"
    # Debian 12: Python 3.11, the newest Python the vendors' aarch64 wheels are built for
    # (rknn-toolkit-lite2 2.5.0 stops at cp312; stable's Python is 3.13).
    python: str = "3.11"
    """The suite's Python (major.minor): where locally installed modules go."""
    mirror: str | None = None
    """Debian's main archive; None: the one this machine's apt uses (:func:`host_mirror`)."""
    variant: str = "extract"
    packages: tuple[str, ...] = (
        "python3",
        "python3-numpy",
        # rknn-toolkit-lite2's own requirements, from Debian rather than the wheel index.
        "python3-psutil",
        "python3-ruamel.yaml",
    )
    links: tuple[tuple[str, str], ...] = (
        ("/usr/lib/aarch64-linux-gnu/libblas.so.3", "blas/libblas.so.3"),
        ("/usr/lib/aarch64-linux-gnu/liblapack.so.3", "lapack/liblapack.so.3"),
    )
    """(link inside the root, its target): the alternatives numpy's libraries are found by."""
    warm: tuple[str, ...] = ("numpy", "json", "hashlib", "socket", "ctypes", "struct", "zlib")
    """Modules imported once at build time so their bytecode is cached (an import of numpy
    compiled from source costs about 20 s under emulation, about 5 s from bytecode)."""
    extra: dict[str, str] = field(default_factory=dict)
    """Free-form additions that must change the key (e.g. a note of a local patch)."""

    def to_dict(self) -> dict[str, object]:
        data = asdict(self)
        data["recipe_version"] = RECIPE_VERSION
        # The mirror apt would use is part of what the root is: another mirror, another root.
        data["mirror"] = self.mirror or host_mirror()
        return data

    def key(self) -> str:
        """``<arch>-<suite>-<16 hex digits>``: readable, and different for any other recipe."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        return f"{self.arch}-{self.suite}-{digest}"

    def mmdebstrap_argv(self, target: str, mirror: str) -> list[str]:
        """The command that unpacks the root into ``target`` (as root: ``--mode=root``; as a
        user: ``--mode=unshare``, which needs user namespaces)."""
        argv = [
            "mmdebstrap",
            f"--arch={self.arch}",
            f"--variant={self.variant}",
            f"--include={','.join(self.packages)}",
            self.suite,
            target,
        ]
        return [*argv, mirror]


def host_mirror(sources: Path = Path("/etc/apt")) -> str | None:
    """The main archive this machine's apt reads (deb822 ``*.sources`` first, then one-line
    ``sources.list``), skipping the security archive: a mirror the user already chose and
    reaches, rather than one written into the project. mmdebstrap's own default adds a security
    archive whose layout the suite's alias ``oldstable`` does not match."""
    for path in sorted((sources / "sources.list.d").glob("*.sources")):
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            continue
        for stanza in text.split("\n\n"):
            fields = dict(
                line.split(":", 1)
                for line in stanza.splitlines()
                if ":" in line and not line.startswith("#")
            )
            uris = fields.get("URIs", "").split()
            suites = fields.get("Suites", "")
            if uris and "security" not in suites and "deb" in fields.get("Types", "").split():
                return uris[0]
    try:
        lines = (sources / "sources.list").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "deb" and "security" not in line:
            urls = [p for p in parts[1:] if "://" in p]
            if urls:
                return urls[0]
    return None


DEFAULT_RECIPE = RootRecipe()
