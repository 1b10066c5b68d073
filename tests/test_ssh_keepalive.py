"""The SSH keepalive watchdog's deadline with a transport whose sends stall (natbench.testing.sshfakes); the same
against a real sshd is in tests/test_ssh_faults.py."""

from __future__ import annotations

import time

import pytest

from natbench.duts.ssh import _Keepalive
from natbench.testing.sshfakes import QuietSocket, StallingTransport

# a keepalive after 0.2 s of silence, lost after 3 unanswered ones: 0.2 x (3 + 1) = 0.8 s after the last packet
INTERVAL = 0.2
COUNT = 3
LOST_AFTER = INTERVAL * (COUNT + 1)
SLACK = 1.0  # the watchdog ticks every 0.05 s; the rest is thread scheduling on a loaded machine


@pytest.mark.parametrize("rekey", [True, False], ids=["rekey-began", "send-buffer-full"])
def test_a_keepalive_send_that_stalls_does_not_delay_the_deadline(rekey: bool) -> None:
    """The first keepalive (0.2 s into the silence) finds the transport clear to send, then its send waits (a key
    re-exchange began meanwhile, or the DUT stopped reading) until the connection is closed. The silence still
    ends the connection 0.8 s after the DUT's last packet, and no second send piles up behind the stalled one
    (with the send buffer full the transport still looks clear to send at 0.4 and 0.6 s)."""
    transport = StallingTransport(rekey=rekey)
    quiet = QuietSocket()
    ka = _Keepalive(transport, quiet, INTERVAL, COUNT, "fake")  # type: ignore[arg-type]
    ka.start()
    try:
        deadline = quiet.last_recv + LOST_AFTER + SLACK + 2.0
        while transport.is_active() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert transport.closed_at is not None, "the connection was never declared lost"
        since_last = transport.closed_at - quiet.last_recv
        assert LOST_AFTER <= since_last <= LOST_AFTER + SLACK, since_last
        assert ka.reason is not None and f"no answer to {COUNT} keepalives" in ka.reason
        assert transport.sends_started == 1
    finally:
        transport.close()
        ka.stop()
