"""A real OpenSSH server on 127.0.0.1 for tests, with host and client keys made by the test.

Used as a context manager; yields the port, the client key and a known_hosts file that pins
the generated host key (so the executor verifies it, as in production).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


@dataclass(frozen=True)
class SshServer:
    """Where the test sshd listens and how to log in."""

    host: str
    port: int
    user: str
    key: Path
    known_hosts: Path


def sshd_unavailable() -> str | None:
    """Why a local sshd cannot be started here, or None."""
    if not Path(SSHD).exists() or not shutil.which("ssh-keygen"):
        return "OpenSSH server (sshd) or ssh-keygen is not installed"
    if os.geteuid() != 0:
        return "the test sshd logs in as the current user and needs root to run sshd with privilege separation"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def local_sshd(root: Path) -> Iterator[SshServer]:
    """Start sshd on a free localhost port with fresh keys under ``root``; stop it afterwards."""
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o700)
    host_key = root / "ssh_host_ed25519_key"
    client_key = root / "client_ed25519"
    for key in (host_key, client_key):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    authorized = root / "authorized_keys"
    authorized.write_text(client_key.with_suffix(".pub").read_text())
    os.chmod(authorized, 0o600)
    port = _free_port()
    user = os.environ.get("USER") or "root"
    config = root / "sshd_config"
    config.write_text(
        "\n".join(
            [
                f"ListenAddress 127.0.0.1:{port}",
                f"HostKey {host_key}",
                f"AuthorizedKeysFile {authorized}",
                f"PidFile {root / 'sshd.pid'}",
                "PermitRootLogin prohibit-password",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "StrictModes no",
                "PrintMotd no",
                "PrintLastLog no",
                "UseDNS no",
                "PermitUserEnvironment no",
                "AcceptEnv none",
                "",
            ]
        )
    )
    known_hosts = root / "known_hosts"
    pub = host_key.with_suffix(".pub").read_text().split()
    known_hosts.write_text(f"[127.0.0.1]:{port} {pub[0]} {pub[1]}\n")
    Path("/run/sshd").mkdir(exist_ok=True)  # privilege separation directory
    log = open(root / "sshd.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"sshd did not start: {(root / 'sshd.log').read_text()[-500:]}") from None
                time.sleep(0.05)
        yield SshServer("127.0.0.1", port, user, client_key, known_hosts)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
