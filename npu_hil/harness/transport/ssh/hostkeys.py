"""SSH host keys, checked by default: the harness's own known_hosts (written under
``accept-new``) plus the user's ``~/.ssh/known_hosts`` (read only). A changed key is always
refused, naming its SHA256 fingerprint."""

from __future__ import annotations

import logging
from pathlib import Path

import paramiko
from filelock import FileLock

from npu_hil.harness.errors import TransportError
from npu_hil.harness.transport.base import HostKeyPolicy

__all__ = ["DEFAULT_KNOWN_HOSTS", "USER_KNOWN_HOSTS", "KnownHostsPolicy"]

log = logging.getLogger("npu_hil.harness.transport.ssh")

DEFAULT_KNOWN_HOSTS = Path("~/.config/npu-hil/known_hosts")
USER_KNOWN_HOSTS = Path("~/.ssh/known_hosts")


class KnownHostsPolicy(paramiko.MissingHostKeyPolicy):
    """Called by paramiko only for a key it found in no known_hosts file. A key is named by its
    ``fingerprint`` as OpenSSH prints it (``SHA256:<base64, no padding>``)."""

    def __init__(self, policy: HostKeyPolicy, own_file: Path) -> None:
        self.policy = policy
        self.own_file = own_file

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        if self.policy != "accept-new":
            raise TransportError(
                f"unknown host key for {hostname}: {key.get_name()} {key.fingerprint}; "
                f"refused (host_key_policy='strict'); add it to {self.own_file} after checking it "
                "on the board, or use host_key_policy='accept-new'"
            )
        self.own_file.parent.mkdir(parents=True, exist_ok=True)
        # Several processes (xdist workers, parallel nightlies) may meet the same new board at
        # once: under the lock the file is read again, so the key is appended once, and a
        # different key another process recorded meanwhile is refused like any changed key.
        with FileLock(f"{self.own_file}.lock", timeout=60.0):
            recorded = recorded_key(self.own_file, hostname, key.get_name())
            if recorded is not None:
                if recorded.asbytes() != key.asbytes():
                    raise TransportError(
                        f"host key for {hostname} changed: the board offers {key.get_name()} "
                        f"{key.fingerprint}, {self.own_file} has {recorded.fingerprint} "
                        "(recorded by another process meanwhile); refused"
                    )
                return
            entry = paramiko.hostkeys.HostKeyEntry([hostname], key)
            # Append, never rewrite: the file may hold keys of other boards.
            line = entry.to_line()
            if line is None:  # paramiko writes no line for an entry it cannot express
                raise TransportError(f"host key for {hostname}: cannot write it to {self.own_file}")
            with self.own_file.open("a", encoding="utf-8") as stream:
                stream.write(line)
        log.warning(
            "accepted new host key for %s: %s %s (recorded in %s)",
            hostname,
            key.get_name(),
            key.fingerprint,
            self.own_file,
        )


def recorded_key(path: Path, hostname: str, key_type: str) -> paramiko.PKey | None:
    """The ``key_type`` key ``path`` records for ``hostname`` now (None: none, or no file)."""
    if not path.is_file():
        return None
    keys = paramiko.HostKeys()
    keys.load(str(path))
    found = keys.lookup(hostname)
    return None if found is None else found.get(key_type)
