"""The SSH transport (paramiko): the connection and file operations (``transport``), one file's
bytes either way (``files``), remote processes (``process``), host keys (``hostkeys``) and
workdir confinement with symlinks followed (``paths``)."""

from __future__ import annotations

from npu_hil.harness.transport.ssh.transport import SshTransport

__all__ = ["SshTransport"]
