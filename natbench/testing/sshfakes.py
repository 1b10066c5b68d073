"""A stand-in for a paramiko transport whose sends stall, for unit tests of the SSH keepalive watchdog's timing
(:class:`natbench.duts.ssh._Keepalive`). The real behaviour is tested against a real sshd (tests/test_ssh_faults.py)."""

from __future__ import annotations

import threading
import time
from typing import Any


class QuietSocket:
    """The watched socket of a DUT that has gone quiet: its last packet arrived at ``last_recv``."""

    def __init__(self, last_recv: float | None = None) -> None:
        self.last_recv = time.monotonic() if last_recv is None else last_recv
        """``time.monotonic()`` of the last packet from the DUT."""


class StallingTransport:
    """A transport that says it is clear to send, but whose first send then waits until the transport is closed:
    what paramiko does when a key re-exchange starts between the check and the send (the send waits in
    ``clear_to_send``; ``rekey`` True), or when the DUT stops reading and the TCP send buffer is full (``rekey``
    False: it stays clear to send, and every later send stalls behind the first)."""

    def __init__(self, *, rekey: bool = True) -> None:
        self.rekey = rekey
        """True: a send clears ``clear_to_send`` (a key exchange began after the sender looked)."""
        self.clear_to_send = threading.Event()
        """Set: no key exchange is under way when the sender looks."""
        self.clear_to_send.set()
        self.sends_started = 0
        """Sends that began (each waits until :meth:`close`)."""
        self.closed_at: float | None = None
        """``time.monotonic()`` of :meth:`close` (None while open)."""
        self._closed = threading.Event()

    def is_active(self) -> bool:
        """True until :meth:`close`."""
        return not self._closed.is_set()

    def close(self) -> None:
        """Close: every waiting send ends (with EOFError, as paramiko's does on a closed transport)."""
        if self.closed_at is None:
            self.closed_at = time.monotonic()
        self._closed.set()

    def _send_user_message(self, _message: Any) -> None:
        self.sends_started += 1
        if self.rekey:
            self.clear_to_send.clear()  # a key exchange began after the sender looked
        self._closed.wait()
        raise EOFError("transport closed")
