"""RFC 4814 pseudorandom port enumeration shared by every tester backend.

Phase 1 of RFC 9693 must send each (source port, destination port) pair of
the configured ranges exactly once, in a pseudorandom order. natbench uses a
*product* bijection that every backend can realise, including TRex's field
engine (two shuffled value lists, the source list chained to the destination
list):

    index k in [0, |S| * |D|)  ->  (S'[k mod |S|], D'[k div |S|])

where ``S'`` and ``D'`` are the source and destination ranges permuted by a
seeded Fisher-Yates shuffle driven by SplitMix64. The permutations depend
only on the seed and the ranges (never on Python's ``random``), so the same
sequence comes out of every process, language and backend; memory is
O(|S| + |D|), i.e. O(1) per connection.

The exact definition, so that it can be re-implemented anywhere (all
arithmetic on unsigned 64-bit words, i.e. modulo 2**64):

* SplitMix64(x): the state starts as ``x mod 2**64``; every output adds
  ``0x9E3779B97F4A7C15`` to the state, then ``z = state``,
  ``z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9``,
  ``z = (z ^ (z >> 27)) * 0x94D049BB133111EB`` and returns ``z ^ (z >> 31)``.
* below(n), an integer in ``[0, n)`` (Lemire): let ``t = (2**64 - n) mod n``;
  draw the next output ``r`` and form the full 128-bit product ``m = r * n``;
  if ``m mod 2**64 >= t`` the result is ``m >> 64``, otherwise draw again.
* sub-seeds: with ``C = 0xD1B54A32D192ED03``, the sub-seed of S' is the first
  output of SplitMix64(seed ^ (1 * C)) and that of D' the first output of
  SplitMix64(seed ^ (2 * C mod 2**64)).
* shuffle of the range ``a..b`` with a sub-seed: start from the ascending
  list ``[a, a+1, ..., b]`` (n items) and a fresh SplitMix64(sub-seed); for
  ``i = n-1`` down to ``1``: ``j = below(i + 1)``, swap items ``i`` and ``j``.

Backends do not re-derive the permutations: they receive S' and D' and only
evaluate the index mapping (the C data path per frame, TRex's field engine by
chaining the source value list to the destination value list).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from natbench.traffic.ports import PortRange

__all__ = ["PortEnumeration", "SplitMix64", "seeded_permutation"]

_MASK64 = (1 << 64) - 1


class SplitMix64:
    """The SplitMix64 generator (Steele, Lea, Flood 2014): tiny, fast, portable.

    Used for every seeded choice natbench makes so that C, Python and the
    TRex profile generator agree bit for bit.
    """

    def __init__(self, seed: int) -> None:
        self.state = seed & _MASK64

    def next(self) -> int:
        """Return the next 64-bit output."""
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return z ^ (z >> 31)

    def below(self, bound: int) -> int:
        """Return an unbiased integer in ``[0, bound)`` (Lemire's method with rejection)."""
        if bound <= 0:
            raise ValueError("bound must be positive")
        threshold = ((1 << 64) - bound) % bound
        while True:
            r = self.next()
            m = r * bound
            if (m & _MASK64) >= threshold:
                return m >> 64


def seeded_permutation(values: range, seed: int) -> np.ndarray:
    """Return ``values`` shuffled by Fisher-Yates driven by SplitMix64(seed), as uint16/uint32."""
    arr = np.array(values, dtype=np.uint32 if values.stop > 65536 else np.uint16)
    rng = SplitMix64(seed)
    for i in range(len(arr) - 1, 0, -1):
        j = rng.below(i + 1)
        arr[i], arr[j] = arr[j], arr[i]
    return arr


@dataclass(frozen=True)
class PortEnumeration:
    """The phase-1 bijection ``[0, |S|*|D|) -> (sport, dport)`` for one working point.

    ``sources`` and ``destinations`` are the permuted port lists (S' and D');
    a backend that cannot evaluate the mapping itself (TRex) loads them as
    value lists, a C engine receives them as arrays.
    """

    src: PortRange
    """The source port range (private side, Initiator)."""
    dst: PortRange
    """The destination port range (public side, Responder)."""
    seed: int
    """Seed of the permutations; recorded with every trial."""

    @property
    def size(self) -> int:
        """Number of pairs, i.e. the number of connections phase 1 creates."""
        return len(self.src) * len(self.dst)

    @property
    def sources(self) -> np.ndarray:
        """S': the source ports in enumeration order."""
        return _cached_permutation(self.src.first, self.src.last, _derive(self.seed, 1))

    @property
    def destinations(self) -> np.ndarray:
        """D': the destination ports in enumeration order."""
        return _cached_permutation(self.dst.first, self.dst.last, _derive(self.seed, 2))

    def pair(self, index: int) -> tuple[int, int]:
        """Return the (sport, dport) pair at ``index``."""
        if not 0 <= index < self.size:
            raise IndexError(f"index {index} outside [0, {self.size})")
        n_src = len(self.src)
        return int(self.sources[index % n_src]), int(self.destinations[index // n_src])

    def pairs(self, start: int = 0, stop: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Return the pairs of indices ``[start, stop)`` as two arrays (vectorised)."""
        stop = self.size if stop is None else stop
        idx = np.arange(start, stop, dtype=np.int64)
        n_src = len(self.src)
        return self.sources[idx % n_src], self.destinations[idx // n_src]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        for k in range(self.size):
            yield self.pair(k)


def _derive(seed: int, stream: int) -> int:
    """Derive an independent sub-seed for stream ``stream`` from ``seed``."""
    return SplitMix64(seed ^ (stream * 0xD1B54A32D192ED03)).next()


@functools.lru_cache(maxsize=64)
def _cached_permutation(first: int, last: int, seed: int) -> np.ndarray:
    """S' or D' of a range, made once per (range, sub-seed) and shared read-only (every trial reads it)."""
    perm = seeded_permutation(range(first, last + 1), seed)
    perm.setflags(write=False)
    return perm
