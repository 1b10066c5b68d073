"""Type stub of the C data path (natbench/testers/software/_engine.c)."""

from typing import Any

BATCH: int
HIST_BITS: int
HIST_SIZE: int
TX_ENUM: int
TX_RANDOM: int
TX_TUPLE_RANDOM: int
TX_TUPLE_LINEAR: int
TX_TUPLE_FIXED: int
RX_ANY: int
RX_ENUM_CHECK: int
RX_LEARN: int
RX_TUPLE_CHECK: int
ORDER_PRODUCT: int
ORDER_FEISTEL: int

def run(
    tx: list[dict[str, Any]],
    rx: list[dict[str, Any]],
    timeout: float,
    tag: int,
    quantum: float = ...,
    sync: Any = ...,
    watch: Any = ...,
) -> dict[str, Any]: ...
def open_port(ifname: str, netns_path: str | None = ..., rcvbuf: int = ..., sndbuf: int = ...) -> int: ...
def drain(fd: int) -> int: ...
def timestamps(fd: int, on: bool) -> None: ...
def build(template: bytes, ipv6: bool, sport: int, dport: int, tag: int, seq: int, stamp: int, flags: int) -> bytes: ...
def draws(seed: int, bound: int, n: int) -> list[int]: ...
def hist_index(ns: int) -> int: ...
def permute(order: int, n: int, seed: int, out: Any, start: int = ...) -> None: ...
