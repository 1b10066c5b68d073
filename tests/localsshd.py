"""A throw-away sshd on a free localhost port with keys made here (tests and bench scripts).

With ``netns`` it runs inside that network namespace, listening on ``address`` there; with ``log`` it
writes a VERBOSE log (one "Connection from" line per TCP connection, one line per failed login) to
``d/sshd.log``.

Nothing of the system's SSH configuration is used or changed: the host key, the user key,
authorized_keys, known_hosts and sshd_config live in the given directory. (OpenSSH needs its
privilege-separation directory /run/sshd; when it is missing it is created empty, as the
openssh-server package does at boot, and left in place.)
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from natbench.duts.ssh import SshExecutor
from natbench.testbed.lab.vm import netns_connect

SSHD = "/usr/sbin/sshd"

__all__ = ["SSHD", "Sshd", "free_port", "local_sshd"]


@dataclass
class Sshd:
    """A running sshd and the files to reach it."""

    port: int
    key: Path
    known_hosts: Path
    other_known_hosts: Path
    proc: subprocess.Popen[bytes]
    address: str = "127.0.0.1"
    log: Path | None = None

    def executor(self, **kw: object) -> SshExecutor:
        """An executor logging in as root with the generated key, verifying the generated host key."""
        args: dict[str, object] = {"user": "root", "port": self.port, "key": str(self.key)}
        args.update(known_hosts=str(self.known_hosts), connect_timeout=5.0, backoff=0.1)
        args.update(kw)
        return SshExecutor(self.address, **args)  # type: ignore[arg-type]

    def log_lines(self, needle: str) -> list[str]:
        """The lines of the sshd log (``log=True``) that contain ``needle``."""
        assert self.log is not None, "started without log=True"
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return [line for line in text.splitlines() if needle in line]


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "natbench", "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip()


def _probe(address: str, port: int, netns: str | None) -> bool:
    try:
        if netns is None:
            s = socket.create_connection((address, port), timeout=0.5)
        else:
            s = netns_connect(netns, address, port, 0.5)
        with s:
            s.settimeout(0.5)
            return s.recv(4).startswith(b"SSH-")
    except OSError:
        return False


@contextmanager
def local_sshd(d: Path, *, address: str = "127.0.0.1", netns: str | None = None, log: bool = False) -> Iterator[Sshd]:
    """Start sshd with files in directory ``d`` (inside ``netns`` when given); stop it on exit."""
    d.chmod(0o700)
    host_pub = _keygen(d / "host_key")
    other_pub = _keygen(d / "other_host_key")
    user_pub = _keygen(d / "user_key")
    (d / "authorized_keys").write_text(user_pub + "\n")
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    proc: subprocess.Popen[bytes] | None = None
    port = 0
    for _ in range(5):
        port = free_port()
        (d / "sshd_config").write_text(
            f"Port {port}\nListenAddress {address}\nHostKey {d}/host_key\nPidFile {d}/sshd.pid\n"
            f"AuthorizedKeysFile {d}/authorized_keys\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nUsePAM no\nStrictModes no\n"
            f"MaxSessions 50\nMaxStartups 50\nLogLevel {'VERBOSE' if log else 'ERROR'}\n"
        )
        argv = [SSHD, "-D", "-f", str(d / "sshd_config"), *(["-E", str(d / "sshd.log")] if log else ["-e"])]
        if netns is not None:
            argv = ["ip", "netns", "exec", netns, *argv]
        proc = subprocess.Popen(argv, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            if _probe(address, port, netns):
                break
            time.sleep(0.05)
        if proc.poll() is None:
            break
    if proc is None or proc.poll() is not None:
        raise RuntimeError(f"sshd did not start: {proc.stderr.read() if proc and proc.stderr else ''!r}")
    (d / "known_hosts").write_text(f"[{address}]:{port} {' '.join(host_pub.split()[:2])}\n")
    (d / "other_known_hosts").write_text(f"[{address}]:{port} {' '.join(other_pub.split()[:2])}\n")
    try:
        yield Sshd(
            port, d / "user_key", d / "known_hosts", d / "other_known_hosts", proc, address,
            d / "sshd.log" if log else None,
        )  # fmt: skip
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
