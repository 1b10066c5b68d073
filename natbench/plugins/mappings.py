"""The DUT's translated tuples in columns: :class:`MappingTable`, a ``Sequence[Mapping]`` of a few bytes each.

At the seeds' scale a DUT holds millions of connections; as :class:`~natbench.plugins.tester.Mapping` objects
(a frozen dataclass, three Python ints and an address string each) 4,000,000 of them took about 1.2 GB, so the
tuples a DUT lists (``Dut.mappings``) travel as one table of numpy columns instead: the public port, the
Responder port and the Initiator's port as ``uint16`` and the public address as an index into the table's few
distinct addresses, **7 bytes a connection** (one address; 8 with up to 65,536 of them). It is a read-only
``Sequence[Mapping]`` (indexing gives a ``Mapping``, slicing a table), so code that iterates a handful of
mappings works unchanged; code that walks all of them takes the columns. :class:`MappingTableBuilder` collects
one from pieces, as a streaming parser reads a DUT's listing.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np

from natbench.plugins.tester import Mapping

_PORT = np.uint16


def _index_dtype(count: int) -> type[np.unsignedinteger[Any]]:
    """The smallest unsigned type that indexes ``count`` addresses."""
    if count <= 1 << 8:
        return np.uint8
    if count <= 1 << 16:
        return np.uint16
    return np.uint32


def _frozen(values: Any, dtype: Any) -> np.ndarray:
    arr = np.ascontiguousarray(values, dtype=dtype)
    arr.flags.writeable = False
    return arr


def _ports(values: Any, what: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.size and (arr.dtype.kind not in "iu" or int(arr.min()) < 0 or int(arr.max()) > 0xFFFF):
        raise ValueError(f"{what}: ports must be integers in 0..65535")
    return _frozen(arr, _PORT)


class MappingTable(Sequence[Mapping]):
    """The translated tuples a DUT holds (``Dut.mappings``), in columns: a read-only ``Sequence[Mapping]``.

    Row ``i`` is ``Mapping(addresses[address[i]], public_port[i], remote_port[i], private_port[i] or None)``;
    ``private_port`` 0 means the DUT did not tell (no UDP connection has port 0).
    """

    __slots__ = ("_hash", "address", "addresses", "private_port", "public_port", "remote_port")

    addresses: tuple[str, ...]
    """The distinct public addresses, in the order first seen."""
    address: np.ndarray
    """Per row: the index of its public address in :attr:`addresses` (uint8, uint16 or uint32)."""
    public_port: np.ndarray
    """Per row: the public port the DUT chose (uint16)."""
    remote_port: np.ndarray
    """Per row: the Responder port, the phase-1 destination port (uint16)."""
    private_port: np.ndarray
    """Per row: the Initiator's original source port, 0 when the DUT did not tell (uint16)."""

    def __init__(
        self,
        addresses: Sequence[str],
        address: Any,
        public_port: Any,
        remote_port: Any,
        private_port: Any | None = None,
    ) -> None:
        self.addresses = tuple(str(a) for a in addresses)
        self.public_port = _ports(public_port, "public_port")
        self.remote_port = _ports(remote_port, "remote_port")
        n = len(self.public_port)
        self.private_port = _ports(np.zeros(n, dtype=_PORT) if private_port is None else private_port, "private_port")
        index = np.asarray(address)
        if index.size and (index.dtype.kind not in "iu" or int(index.min()) < 0 or int(index.max()) >= len(addresses)):
            raise ValueError(f"address: indices must lie in 0..{len(addresses) - 1}")
        self.address = _frozen(index, _index_dtype(len(self.addresses)))
        if not (len(self.address) == n == len(self.remote_port) == len(self.private_port)):
            raise ValueError("MappingTable: columns of different lengths")
        self._hash: int | None = None

    # -- building -------------------------------------------------------------------------------

    @classmethod
    def of(cls, mappings: Iterable[Mapping]) -> MappingTable:
        """``mappings`` as a table (the same object when it is one already)."""
        if isinstance(mappings, MappingTable):
            return mappings
        builder = MappingTableBuilder()
        builder.extend(mappings)
        return builder.build()

    @classmethod
    def concat(cls, tables: Sequence[MappingTable]) -> MappingTable:
        """The rows of ``tables`` one after the other (one table: itself)."""
        if len(tables) == 1:
            return tables[0]
        builder = MappingTableBuilder()
        for t in tables:
            builder.add_table(t)
        return builder.build()

    # -- the Sequence -----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.public_port)

    @overload
    def __getitem__(self, index: int) -> Mapping: ...
    @overload
    def __getitem__(self, index: slice) -> MappingTable: ...

    def __getitem__(self, index: int | slice) -> Mapping | MappingTable:
        if isinstance(index, slice):
            return self.take(index)
        i = int(index)
        private = int(self.private_port[i])
        return Mapping(
            self.addresses[int(self.address[i])], int(self.public_port[i]), int(self.remote_port[i]), private or None
        )

    def __iter__(self) -> Iterator[Mapping]:
        for start in range(0, len(self), 4096):  # ints in blocks: a Python loop over numpy scalars is slow
            stop = min(start + 4096, len(self))
            addrs = [self.addresses[i] for i in self.address[start:stop].tolist()]
            for a, p, r, q in zip(
                addrs,
                self.public_port[start:stop].tolist(),
                self.remote_port[start:stop].tolist(),
                self.private_port[start:stop].tolist(),
                strict=True,
            ):
                yield Mapping(a, p, r, q or None)

    def take(self, rows: slice | np.ndarray) -> MappingTable:
        """The rows ``rows`` (a slice gives views of the columns, an index array copies them)."""
        return MappingTable(
            self.addresses, self.address[rows], self.public_port[rows], self.remote_port[rows], self.private_port[rows]
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MappingTable):
            if other is self:
                return True
            if len(self) != len(other) or not (
                np.array_equal(self.public_port, other.public_port)
                and np.array_equal(self.remote_port, other.remote_port)
                and np.array_equal(self.private_port, other.private_port)
            ):
                return False
            if self.addresses == other.addresses:
                return bool(np.array_equal(self.address, other.address))
            theirs = {a: i for i, a in enumerate(other.addresses)}
            remap = np.asarray([theirs.get(a, -1) for a in self.addresses], dtype=np.int64)
            return bool(np.array_equal(remap[self.address], other.address)) if len(self) else True
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self))
        return self._hash

    def __repr__(self) -> str:
        head = ", ".join(repr(m) for m in self[:2])
        more = f", ... ({len(self):,} in all)" if len(self) > 2 else ""
        return f"MappingTable([{head}{more}])"

    # -- columns ------------------------------------------------------------------------------------

    @property
    def nbytes(self) -> int:
        """Bytes the columns take (what natbench holds per table: 7 bytes a row, 8 with over 256 addresses, x rows)."""
        return int(self.address.nbytes + self.public_port.nbytes + self.remote_port.nbytes + self.private_port.nbytes)

    @property
    def private_ports_known(self) -> bool:
        """True when the DUT told every row's Initiator port."""
        return bool(len(self) and self.private_port.all())

    def ipv4_addresses(self) -> np.ndarray:
        """Per row the public address as an IPv4 integer (uint32); ValueError naming one that is not IPv4."""
        values = []
        for a in self.addresses:
            ip = ipaddress.ip_address(a)
            if ip.version != 4:
                raise ValueError(f"public address {a} is not IPv4")
            values.append(int(ip))
        return np.asarray(values, dtype=np.uint32)[self.address] if values else np.zeros(0, dtype=np.uint32)


class MappingTableBuilder:
    """Collects a :class:`MappingTable` from pieces: single mappings, column blocks (a streaming parser's),
    other tables. Memory: the columns' bytes, twice while :meth:`build` joins the blocks."""

    def __init__(self) -> None:
        self._index: dict[str, int] = {}
        self._blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._pending: list[tuple[int, int, int, int]] = []
        self._rows = 0

    def __len__(self) -> int:
        return self._rows + len(self._pending)

    def address_index(self, address: str) -> int:
        """The index of ``address`` in the table being built (a new one is appended)."""
        i = self._index.get(address)
        if i is None:
            i = self._index[address] = len(self._index)
        return i

    def append(self, mapping: Mapping) -> None:
        """One mapping."""
        self._pending.append(
            (self.address_index(mapping.public_address), mapping.public_port, mapping.remote_port,
             mapping.private_port or 0)
        )  # fmt: skip
        if len(self._pending) >= 65536:
            self._flush()

    def extend(self, mappings: Iterable[Mapping]) -> None:
        """Several mappings."""
        for m in mappings:
            self.append(m)

    def add_columns(
        self, address: np.ndarray, public_port: np.ndarray, remote_port: np.ndarray, private_port: np.ndarray
    ) -> None:
        """A block of rows as columns; ``address`` holds indices from :meth:`address_index`."""
        if self._pending:
            self._flush()
        index = np.asarray(address)
        cols = (
            index.astype(_index_dtype(int(index.max()) + 1 if index.size else 0), copy=False),
            _ports(public_port, "public_port"),
            _ports(remote_port, "remote_port"),
            _ports(private_port, "private_port"),
        )
        if len({len(c) for c in cols}) != 1:
            raise ValueError("column blocks of different lengths")
        if len(cols[0]):
            self._blocks.append(cols)
            self._rows += len(cols[0])

    def add_table(self, table: MappingTable) -> None:
        """The rows of ``table``."""
        remap = np.asarray([self.address_index(a) for a in table.addresses], dtype=np.uint32)
        address = remap[table.address] if len(remap) else np.zeros(0, dtype=np.uint32)
        self.add_columns(address, table.public_port, table.remote_port, table.private_port)

    def _flush(self) -> None:
        if not self._pending:
            return
        block = np.asarray(self._pending, dtype=np.int64)
        self._pending = []
        self.add_columns(block[:, 0], block[:, 1], block[:, 2], block[:, 3])

    def build(self) -> MappingTable:
        """The table of every row added, in order; the builder is empty afterwards."""
        self._flush()
        addresses = list(self._index)
        blocks, self._blocks, self._index, self._rows = self._blocks, [], {}, 0
        if not blocks:
            return MappingTable(addresses, np.zeros(0, np.uint8), np.zeros(0, _PORT), np.zeros(0, _PORT))
        cols = []
        for k in range(4):  # one column at a time: the blocks of the others are let go as it goes
            cols.append(np.concatenate([b[k] for b in blocks]) if len(blocks) > 1 else blocks[0][k])
        del blocks
        return MappingTable(addresses, cols[0], cols[1], cols[2], cols[3])
