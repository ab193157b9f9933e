"""The SSH transport: a board reached over SSH (paramiko), one small package with a reason per
module:

- :mod:`~npu_hil.harness.transport.ssh.transport` — :class:`SshTransport`: the connection, its
  retries, the workdir, commands, and the file operations in their order;
- :mod:`~npu_hil.harness.transport.ssh.files` — one file's bytes either way, with what each side
  saw of them (small files over SFTP, large ones streamed on an exec channel);
- :mod:`~npu_hil.harness.transport.ssh.process` — a remote command's end and a long-running
  remote process (a resident agent's stream);
- :mod:`~npu_hil.harness.transport.ssh.hostkeys` — host keys, checked by default;
- :mod:`~npu_hil.harness.transport.ssh.paths` — remote paths kept inside the workdir.
"""

from __future__ import annotations

from npu_hil.harness.transport.ssh.transport import SshTransport

__all__ = ["SshTransport"]
