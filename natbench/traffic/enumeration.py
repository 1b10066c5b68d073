"""RFC 4814 pseudorandom port enumeration shared by every tester backend.

Phase 1 of RFC 9693 must send each (source port, destination port) pair of
the configured ranges exactly once, in a pseudorandom order. Both orders
natbench knows are bijections ``k -> (sport, dport)`` of the frame index
``k in [0, N)``, ``N = |S| * |D|``, through a *pair index* ``j``:

    k  ->  j = pi(k)  ->  (S'[j mod |S|], D'[j div |S|])

where ``S'`` and ``D'`` are the source and destination ranges permuted by a
seeded Fisher-Yates shuffle driven by SplitMix64, and ``pi`` is a permutation
of ``[0, N)`` that depends on the order:

* ``feistel`` (the software tester's default): ``pi`` is a keyed Feistel
  network over all pairs, so consecutive frames are independent pseudorandom
  pairs (as siitperf's shuffle of all pairs gives): the share of consecutive
  frames with the same destination port is about ``1/|D|`` and the source
  ports have no period;
* ``product`` (TRex's field engine, and the software tester's setting
  ``enumeration: product`` to reproduce earlier runs): ``pi(k) = k``, i.e.
  ``(S'[k mod |S|], D'[k div |S|])``: TRex realises it with two value lists,
  the source list chained to the destination list. Consecutive frames share
  the destination port except once every ``|S|`` frames, and the source
  sequence repeats with period ``|S|``.

Everything depends only on the seed and the ranges (never on Python's
``random``), so the same sequence comes out of every process, language and
backend; memory is O(|S| + |D|), i.e. O(1) per connection.

The exact definition, so that it can be re-implemented anywhere (all
arithmetic on unsigned 64-bit words, i.e. modulo 2**64):

* SplitMix64(x): the state starts as ``x mod 2**64``; every output adds
  ``0x9E3779B97F4A7C15`` to the state and returns ``mix(state)``, where
  ``mix(z)``: ``z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9``,
  ``z = (z ^ (z >> 27)) * 0x94D049BB133111EB``, return ``z ^ (z >> 31)``.
* below(n), an integer in ``[0, n)`` (Lemire): let ``t = (2**64 - n) mod n``;
  draw the next output ``r`` and form the full 128-bit product ``m = r * n``;
  if ``m mod 2**64 >= t`` the result is ``m >> 64``, otherwise draw again.
* sub-seeds: with ``C = 0xD1B54A32D192ED03``, sub-seed ``i`` is the first
  output of SplitMix64(seed ^ (i * C mod 2**64)); S' uses sub-seed 1, D'
  sub-seed 2, the Feistel round keys sub-seed 3.
* shuffle of the range ``a..b`` with a sub-seed: start from the ascending
  list ``[a, a+1, ..., b]`` (n items) and a fresh SplitMix64(sub-seed); for
  ``i = n-1`` down to ``1``: ``j = below(i + 1)``, swap items ``i`` and ``j``.
* Feistel permutation ``pi`` of ``[0, N)`` (order ``feistel``):

  - width ``b = max(2, bit length of N - 1)``: the smallest power of two
    ``2**b >= N`` (and ``>= 4``), so ``2**b < 2N`` whenever ``N > 2``;
  - round keys ``K_0 .. K_3``: the first four outputs of SplitMix64(sub-seed 3);
  - one encryption ``E(x)`` of ``x in [0, 2**b)``: start with the widths
    ``(h, l) = (b - b div 2, b div 2)`` of the high and the low part; for
    round ``i = 0 .. 3``: ``R = x mod 2**l``, ``L = x >> l``,
    ``x = R * 2**h + ((L ^ mix(R ^ K_i)) mod 2**h)``, then swap ``(h, l) =
    (l, h)`` (the low part moves up, the high part, masked with the round
    function of the low part, moves down; with ``b`` odd the two parts differ
    by one bit and alternate, an unbalanced Feistel network);
  - cycle walking: ``pi(k) = E(k)``, and while the value is ``>= N`` it is
    encrypted again. ``E`` is a bijection of ``[0, 2**b)``, so the walk from
    ``k < N`` ends on the next member of ``k``'s cycle inside ``[0, N)``, and
    ``pi`` is a bijection of ``[0, N)``; on average over ``k`` the walk takes
    at most ``2**b / N`` encryptions, fewer than 2 for ``N > 2``.

Backends do not re-derive the shuffles: they receive S' and D' and, with
the order ``feistel``, sub-seed 3 (the C data path derives the round keys
and evaluates ``pi`` per frame, the Responder ``pi`` of each received
sequence number); TRex's field engine evaluates the product order only.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from natbench.traffic.ports import PortRange

_MASK64 = (1 << 64) - 1
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB

FEISTEL_ROUNDS = 4
"""Rounds of the Feistel permutation, each a 64-bit mix of the low part with a round key: four, the number
Luby and Rackoff showed makes a Feistel network of pseudorandom round functions a strong pseudorandom
permutation (more cost the data path per frame and buy nothing measurable here)."""


class EnumerationOrder(enum.StrEnum):
    """Which permutation of the pair indices phase 1 walks (recorded with every phase-1 trial)."""

    FEISTEL = "feistel"
    """A keyed Feistel network over all |S| * |D| pairs (the software tester's default)."""
    PRODUCT = "product"
    """``k -> (S'[k mod |S|], D'[k div |S|])``: what TRex's field engine can do; earlier software runs."""


def mix64(z: int) -> int:
    """SplitMix64's output function of the 64-bit word ``z`` (also the Feistel round function)."""
    z &= _MASK64
    z = ((z ^ (z >> 30)) * _MIX1) & _MASK64
    z = ((z ^ (z >> 27)) * _MIX2) & _MASK64
    return z ^ (z >> 31)


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
        return mix64(self.state)

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


def _mix64_array(z: np.ndarray) -> np.ndarray:
    """:func:`mix64` of every element of a uint64 array (wrapping arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_MIX1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_MIX2)
    return z ^ (z >> np.uint64(31))


@dataclass(frozen=True)
class FeistelPermutation:
    """The keyed permutation ``pi`` of ``[0, size)`` (module docstring: width, round keys, rounds, cycle walk).

    O(1) memory: a few words of state, any index computed on its own.
    """

    size: int
    """N, the number of indices permuted (at least 1)."""
    subseed: int
    """Sub-seed 3 of the enumeration's seed; the round keys are its first SplitMix64 outputs."""
    bits: int = field(init=False)
    """b: the permutation is walked inside ``[0, 2**b)``."""
    keys: tuple[int, ...] = field(init=False)
    """Round keys ``K_0 .. K_3``."""

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError(f"a permutation needs at least one index, got {self.size}")
        object.__setattr__(self, "bits", max(2, (self.size - 1).bit_length()))
        rng = SplitMix64(self.subseed)
        object.__setattr__(self, "keys", tuple(rng.next() for _ in range(FEISTEL_ROUNDS)))

    def encrypt(self, x: int) -> int:
        """E(x): one pass of the rounds over ``[0, 2**b)`` (no cycle walking)."""
        high, low = self.bits - self.bits // 2, self.bits // 2
        for key in self.keys:
            right, left = x & ((1 << low) - 1), x >> low
            x = (right << high) | ((left ^ mix64(right ^ key)) & ((1 << high) - 1))
            high, low = low, high
        return x

    def __call__(self, index: int) -> int:
        """pi(index), for ``0 <= index < size``."""
        if not 0 <= index < self.size:
            raise IndexError(f"index {index} outside [0, {self.size})")
        y = self.encrypt(index)
        while y >= self.size:
            y = self.encrypt(y)
        return y

    def encrypt_array(self, x: np.ndarray) -> np.ndarray:
        """:meth:`encrypt` of every element of a uint64 array."""
        high, low = self.bits - self.bits // 2, self.bits // 2
        for key in self.keys:
            right, left = x & np.uint64((1 << low) - 1), x >> np.uint64(low)
            x = (right << np.uint64(high)) | (
                (left ^ _mix64_array(right ^ np.uint64(key))) & np.uint64((1 << high) - 1)
            )
            high, low = low, high
        return x

    def apply(self, indices: np.ndarray) -> np.ndarray:
        """pi of every element of ``indices`` (all in ``[0, size)``), as uint64 (vectorised cycle walk)."""
        idx = np.asarray(indices)
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= self.size):
            raise IndexError(f"indices outside [0, {self.size})")
        y = self.encrypt_array(idx.astype(np.uint64))
        outside = np.flatnonzero(y >= np.uint64(self.size))
        while outside.size:
            walked = self.encrypt_array(y[outside])
            y[outside] = walked
            outside = outside[walked >= np.uint64(self.size)]
        return y


@dataclass(frozen=True)
class PortEnumeration:
    """The phase-1 bijection ``[0, |S|*|D|) -> (sport, dport)`` for one working point.

    ``sources`` and ``destinations`` are the permuted port lists (S' and D');
    a backend that cannot evaluate the mapping itself (TRex) loads them as
    value lists, a C engine receives them as arrays (and, for the order
    ``feistel``, :attr:`permutation_seed`).
    """

    src: PortRange
    """The source port range (private side, Initiator)."""
    dst: PortRange
    """The destination port range (public side, Responder)."""
    seed: int
    """Seed of the permutations; recorded with every trial."""
    order: EnumerationOrder = EnumerationOrder.PRODUCT
    """How the frame index walks the pairs: ``product`` (every backend can do it) or ``feistel`` (all pairs)."""

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

    @property
    def permutation_seed(self) -> int:
        """Sub-seed 3: the Feistel round keys are its first SplitMix64 outputs."""
        return _derive(self.seed, 3)

    @property
    def permutation(self) -> FeistelPermutation | None:
        """pi of the order ``feistel``; None for ``product`` (pi is the identity)."""
        if self.order is EnumerationOrder.PRODUCT:
            return None
        return _cached_feistel(self.size, self.permutation_seed)

    def pair_index(self, index: int) -> int:
        """j = pi(index): the pair (``j mod |S|``, ``j div |S|``) frame ``index`` carries."""
        if not 0 <= index < self.size:
            raise IndexError(f"index {index} outside [0, {self.size})")
        perm = self.permutation
        return index if perm is None else perm(index)

    def pair_indices(self, indices: np.ndarray) -> np.ndarray:
        """pi of every frame index in ``indices`` (vectorised), as int64."""
        idx = np.asarray(indices, dtype=np.int64)
        perm = self.permutation
        if perm is None:
            if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= self.size):
                raise IndexError(f"indices outside [0, {self.size})")
            return idx
        return perm.apply(idx).astype(np.int64)

    def pair(self, index: int) -> tuple[int, int]:
        """Return the (sport, dport) pair at ``index``."""
        j = self.pair_index(index)
        n_src = len(self.src)
        return int(self.sources[j % n_src]), int(self.destinations[j // n_src])

    def pairs(self, start: int = 0, stop: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Return the pairs of indices ``[start, stop)`` as two arrays (vectorised)."""
        stop = self.size if stop is None else stop
        j = self.pair_indices(np.arange(start, stop, dtype=np.int64))
        n_src = len(self.src)
        return self.sources[j % n_src], self.destinations[j // n_src]

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


@functools.lru_cache(maxsize=64)
def _cached_feistel(size: int, subseed: int) -> FeistelPermutation:
    """The Feistel permutation of a point, made once (its round keys) and shared."""
    return FeistelPermutation(size, subseed)
