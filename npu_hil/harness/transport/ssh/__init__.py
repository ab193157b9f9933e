"""The SSH transport (paramiko): the connection, host keys, remote processes, workdir confinement
and file operations (``transport``), one file's bytes either way (``files``)."""

from __future__ import annotations

from npu_hil.harness.transport.ssh.transport import SshTransport

__all__ = ["SshTransport"]
