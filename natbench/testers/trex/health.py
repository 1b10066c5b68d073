"""What TRex's own counters say about a trial: receive drops of the tester, transmit errors, its timing.

Pure functions over the dictionaries the client library returns (no server contact):

* ``get_stats()[port]`` (``PortStats.to_dict``): ``opackets``, ``ipackets``, ``obytes``, ``ibytes``,
  ``oerrors``, ``ierrors`` relative to the last ``clear_stats``; ``tx_pps``, ``tx_bps``, ``rx_pps``,
  ``rx_bps``, ``tx_util``, ``rx_util`` as TRex measured them (absolute, see :func:`timing`);
* ``get_stats()["global"]`` (``GlobalStats.to_dict``): ``cpu_util``, ``tx_pps``, ``tx_expected_pps``, ...
  absolute, and ``queue_full`` relative to the last ``clear_stats``;
* ``get_xstats(port)`` (``PortXStats.to_dict``): the NIC's extended counters by name, relative to the
  last ``clear_stats`` (its ``clear_xstats`` defaults to true); names vary per driver;
* ``get_util_stats()`` (``UtilStats.to_dict``): per data-plane thread the last 20 one-second CPU
  utilisation values, newest first.

TRex's port ``ierrors`` is the DPDK ``imissed + ierrors + rx_nombuf`` of the port (trex-core
``get_extended_stats_fixed``), and the DPDK xstats ``rx_missed_errors`` / ``rx_errors`` /
``rx_mbuf_allocation_errors`` are those three again. Only two of them are the tester's: ``imissed`` (the
receive queue was full) and ``rx_nombuf`` (no buffer was free); DPDK's ``ierrors`` counts *erroneous* frames
(bad CRC, checksum, length), frames the DUT corrupted, which are the DUT's loss (they are missing from the
received count already). So the port ``ierrors`` mixes both and cannot judge a trial when the xstats can:
:func:`receive_drops` reads the miss and no-buffer xstats (the generic ones and the drivers' own, e.g. mlx5
``rx_out_of_buffer``, ``rx_discards_phy``) and falls back to the port ``ierrors`` only for a port whose xstats
could not be read (then a corrupted frame also counts as the tester's, the safe side: an invalid trial, never a
wrong DUT figure); :func:`receive_errors` lists the malformed-frame counters, recorded, not judged. The
counters overlap, so a port's drop count is the largest of them (at least that many frames were lost by the
tester), never their sum. With software mode over veth (DPDK ``net_af_packet``) ``imissed`` is the receive
socket's ``tp_drops``: the very counter the software tester reads as "receive socket dropped".
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

_RX_DROP_NAME = re.compile(
    r"^(imissed|rx_.*(miss|drop|nombuf|no_?buf|no_mbuf|mbuf_allocation|out_of_buffer|no_dma|discards_phy|fifo|overrun))",
    re.IGNORECASE,
)
"""Extended counters of frames that reached the port but not TRex because its receive path had no room: DPDK's
generic ``rx_missed_errors`` (``imissed``) and ``rx_mbuf_allocation_errors`` (``rx_nombuf``) and the drivers' own
(``rx_out_of_buffer``, ``rx_discards_phy``, ``rx_no_dma_resources``, ``rx_fifo_errors``, ``rx_*_dropped``, ...);
deliveries (``rx_good_packets``, ``rx_q0_packets``) and malformed-frame counters match none of the words."""

_RX_ERROR_NAME = re.compile(r"^rx_.*(error|discard)", re.IGNORECASE)
"""Extended receive-error counters that are not :data:`_RX_DROP_NAME`'s: frames that arrived malformed (DPDK's
generic ``rx_errors``, ``rx_crc_errors``, ``rx_l3_l4_xsum_error``, ``rx_length_errors``, ``rx_undersize_errors``,
``rx_oversize_errors``, ``rx_q<N>_errors``, ...): the DUT's (or the link's) loss, not the tester's."""

_TX_ERROR_NAME = re.compile(r"^tx_.*(error|drop|discard)", re.IGNORECASE)
"""Extended counters of frames TRex handed to the port that did not leave (DPDK ``tx_errors``, ...)."""

_PORT_TIMING = ("tx_pps", "tx_bps", "tx_bps_L1", "tx_util", "rx_pps", "rx_bps")
_GLOBAL_TIMING = (
    "cpu_util",
    "cpu_util_raw",
    "rx_cpu_util",
    "bw_per_core",
    "tx_pps",
    "tx_bps",
    "tx_cps",
    "tx_expected_pps",
)


def _port(stats: Mapping[Any, Any], port: int) -> Mapping[str, Any]:
    entry = stats.get(port, stats.get(str(port), {}))
    return entry if isinstance(entry, Mapping) else {}


def _count(value: Any) -> int:
    """A counter value as an int; the library's 'N/A' (never reported) counts 0."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _number(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _nonzero(
    stats: Mapping[Any, Any],
    xstats: Mapping[int, Mapping[str, Any]],
    ports: Iterable[int],
    key: str,
    name: re.Pattern[str],
) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = {}
    for port in ports:
        found: dict[str, int] = {}
        if _count(_port(stats, port).get(key)) > 0:
            found[key] = _count(_port(stats, port).get(key))
        for counter, value in xstats.get(port, {}).items():
            if name.search(str(counter)) and _count(value) > 0:
                found[str(counter)] = _count(value)
        if found:
            out[port] = found
    return out


def receive_drops(
    stats: Mapping[Any, Any], xstats: Mapping[int, Mapping[str, Any]], ports: Iterable[int]
) -> dict[int, dict[str, int]]:
    """Per port, the tester's own receive misses during the trial: the miss / no-buffer xstats of a port whose
    xstats were read, else its port ``ierrors`` (which then may include malformed frames: see the module notes)."""
    out: dict[int, dict[str, int]] = {}
    for port in ports:
        if port in xstats:
            found = {str(k): _count(v) for k, v in xstats[port].items() if _RX_DROP_NAME.search(str(k)) and _count(v)}
        else:
            ierrors = _count(_port(stats, port).get("ierrors"))
            found = {"ierrors": ierrors} if ierrors > 0 else {}
        if found:
            out[port] = found
    return out


def receive_errors(xstats: Mapping[int, Mapping[str, Any]], ports: Iterable[int]) -> dict[int, dict[str, int]]:
    """Per port, the malformed-frame receive counters that moved during the trial (xstats only): frames the DUT or
    the link corrupted. They are the DUT's loss (the frames are missing from the received count), recorded with the
    trial, never a reason to invalidate it."""
    out: dict[int, dict[str, int]] = {}
    for port in ports:
        found = {
            str(k): _count(v)
            for k, v in xstats.get(port, {}).items()
            if _RX_ERROR_NAME.search(str(k)) and not _RX_DROP_NAME.search(str(k)) and _count(v)
        }
        if found:
            out[port] = found
    return out


def transmit_errors(
    stats: Mapping[Any, Any], xstats: Mapping[int, Mapping[str, Any]], ports: Iterable[int]
) -> dict[int, dict[str, int]]:
    """Per port, the transmit-error counters that moved during the trial (port ``oerrors`` and xstats)."""
    return _nonzero(stats, xstats, ports, "oerrors", _TX_ERROR_NAME)


def _detail(counters: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counters.items()))


def receive_drop_notes(drops: Mapping[int, Mapping[str, int]]) -> list[str]:
    """One note per port whose receive counters moved: frames that never reached the count (the tester's
    deviation of the direction received there, weighed against that direction's loss)."""
    return [
        f"tester receive (TRex port {port}) dropped at least {max(c.values())} frames ({_detail(c)})"
        for port, c in sorted(drops.items())
    ]


def transmit_error_notes(errors: Mapping[int, Mapping[str, int]]) -> list[str]:
    """One invalidating note ('!') per port whose transmit-error counters moved: the offered load fell short."""
    return [
        f"!tester transmit (TRex port {port}) failed at least {max(c.values())} frames ({_detail(c)})"
        for port, c in sorted(errors.items())
    ]


def busiest_core(util: Mapping[str, Any], seconds: float) -> float | None:
    """Highest one-second CPU utilisation (%) of any TRex data-plane thread over the last ``seconds``.

    ``util`` is ``get_util_stats()``; every thread's ``history`` is newest first, one value per
    second. The trial's seconds are the newest ``ceil(seconds) + 1`` values (one more for the
    second the trial started in). A second only partly inside the trial averages in idle time, so
    the result can only understate the busiest second, never overstate it. None without data.
    """
    n = math.ceil(max(seconds, 0.0)) + 1
    values: list[float] = []
    for thread in util.get("cpu", []) or []:
        if not isinstance(thread, Mapping):
            continue
        for v in list(thread.get("history", []) or [])[:n]:
            x = _number(v)
            if x is not None:
                values.append(x)
    return max(values) if values else None


def timing(stats: Mapping[Any, Any], ports: Iterable[int]) -> dict[str, Any]:
    """TRex's own rate and load figures as read after the trial (stored with the trial, not judged).

    The rates are TRex's measurement: a per-second exponential average (weight 1/2 per second,
    trex-core ``CPPSMeasure``) read after the receive wait, so they describe the last seconds of
    sending, lag a change by seconds and read low for a trial of a second or two.
    """
    out: dict[str, Any] = {"ports": {}, "global": {}}
    for port in ports:
        entry = _port(stats, port)
        out["ports"][str(port)] = {
            **{k: _count(entry.get(k)) for k in ("opackets", "ipackets", "obytes", "ibytes", "oerrors", "ierrors")},
            **{k: _number(entry.get(k)) for k in _PORT_TIMING},
        }
    glob = stats.get("global", {})
    if isinstance(glob, Mapping):
        out["global"] = {k: _number(glob.get(k)) for k in _GLOBAL_TIMING}
        out["global"]["queue_full"] = _count(glob.get("queue_full"))
        out["global"]["total_alloc_error"] = _count(glob.get("total_alloc_error"))
    return out


def pacing_warnings(
    sent: Mapping[str, int],
    intended_frames: float,
    wall: float,
    nominal: float,
    busiest: float | None,
    *,
    continuous: bool,
    timing_slack: float,
    busy_core_pct: float,
    software: bool,
    rate_tolerance: float = 0.0,
) -> list[str]:
    """Signs in TRex's counters that frames did not leave evenly at the intended rate (no verdict change).

    ``sent``: frames sent per direction; ``wall``: seconds from the start RPC's return until the ports were
    idle; ``busiest``: :func:`busiest_core`; ``rate_tolerance``: beyond it the trial is invalid (short of its
    frames, over them, or late), so those get no "within rate_tolerance" warning. What the counters can show: a
    saturated data-plane core (it sends what fell behind in bursts); a continuous trial short of its frames, or
    over them, by more than 0.1 % (and one frame, TRex's own stop at the duration) yet within the tolerance that
    keeps it valid; sending that took longer than nominal beyond ``timing_slack`` yet within the tolerance
    (frames left late); and software mode, which sends in clumps (docs/trex.md 4.5). Frame-level gaps are in no
    counter: TRex's own rates are one-second averages.
    """
    out: list[str] = []
    if busiest is not None and busiest >= busy_core_pct:
        out.append(f"a TRex core ran at {busiest:.0f} % during the trial: a saturated core sends late frames in bursts")
    if continuous:
        for d, n in sent.items():
            margin = max(1.0, 0.001 * intended_frames)
            short = intended_frames and n < intended_frames - margin
            if short and n >= intended_frames * (1 - rate_tolerance):  # beyond the tolerance it is no warning
                out.append(f"{d}: sent {n} of {intended_frames:.0f} frames (within rate_tolerance)")
            over = intended_frames and n > intended_frames + margin
            if over and n <= intended_frames * (1 + rate_tolerance) + 1:
                out.append(f"{d}: sent {n} frames for {intended_frames:.0f} intended (over, within rate_tolerance)")
    late = wall > nominal * (1 + rate_tolerance) + timing_slack  # the trial is invalid for it: no warning
    if wall - timing_slack > nominal and not late:
        what = "trial" if continuous else "burst"
        out.append(
            f"sending took {wall - timing_slack:.3f} s for a {nominal:.3f} s {what} beyond the "
            f"allowed overhead: frames left late (within rate_tolerance)"
        )
    if software:
        out.append("software mode: TRex sends in clumps, not frame by frame")
    return out
