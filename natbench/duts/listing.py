"""Streaming parsers of a DUT's listing of mappings (``conntrack -L``, ``jool session display``, ``pfctl -ss``).

At 4,000,000 connections ``conntrack -L`` prints 575 MB of text. A :class:`MappingListing` reads it as it
arrives (``Executor.run_streaming``): the bytes are cut into batches of whole lines (at most
:data:`BATCH_BYTES` plus one line), each batch is parsed at once into column blocks of a
:class:`~natbench.plugins.MappingTableBuilder`, and nothing of the text is kept. natbench's memory for a listing
is therefore the table (7-8 bytes a connection, twice while its blocks are joined) plus one batch, whatever N.

A listing's parser supplies one function, ``batch(text, first_line, builder)``: it parses the whole lines of
``text`` (``first_line`` is the number of its first line in the output, for messages) into ``builder``, and raises
:class:`~natbench.plugins.ParseError` naming the first line it cannot read. Called with the whole output at once
(an executor that cannot stream), the parser gives the same table.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

import numpy as np

from natbench.plugins import MappingTable, MappingTableBuilder, ParseError

BATCH_BYTES = 1 << 20
"""Bytes of whole lines parsed at once."""
MAX_LINE = 1 << 16
"""Longest line a listing may have (a line growing beyond it is an error, not a memory sink)."""

BatchReader = Callable[[bytes, int, MappingTableBuilder], None]
"""Parses the whole lines of one batch into a builder: ``(text, number of its first line, builder)``."""


def add_numeric_rows(builder: MappingTableBuilder, octets: np.ndarray, ports: np.ndarray) -> bool:
    """Add the rows a fast parser read as numbers: ``octets`` (n x 4, the public IPv4 address) and ``ports`` (n x 3:
    public, remote, private). False, adding nothing, when a value is out of range (the caller then reads the
    batch line by line, which names the line at fault)."""
    if not (ports.min() > 0 and ports.max() < 65536 and octets.max() < 256):
        return False
    ipv4 = (octets[:, 0] << 24) | (octets[:, 1] << 16) | (octets[:, 2] << 8) | octets[:, 3]
    distinct, inverse = np.unique(ipv4, return_inverse=True)
    index = np.asarray([builder.address_index(str(ipaddress.IPv4Address(int(a)))) for a in distinct])
    builder.add_columns(index[inverse], ports[:, 0], ports[:, 1], ports[:, 2])
    return True


def line_excerpt(line: bytes | str) -> str:
    """A line as shown in a message: decoded, at most 120 characters."""
    text = line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line
    text = text.rstrip("\r\n")
    return text if len(text) <= 120 else text[:117] + "..."


class _ListingSink:
    """One streaming read of a listing (a :class:`~natbench.plugins.ParseSink`)."""

    def __init__(self, name: str, batch: BatchReader) -> None:
        self._name = name
        self._batch = batch
        self._builder = MappingTableBuilder()
        self._pending = bytearray()
        self._line = 1
        self._done = False

    def feed(self, data: bytes) -> None:
        """The next piece of output."""
        if self._done:
            raise ParseError(self._name, "output fed after the end")
        self._pending += data
        if len(self._pending) < BATCH_BYTES:
            if b"\n" not in data and len(self._pending) > MAX_LINE and b"\n" not in self._pending:
                raise ParseError(self._name, f"line {self._line} is longer than {MAX_LINE} bytes")
            return
        cut = self._pending.rfind(b"\n") + 1
        if cut == 0:
            raise ParseError(self._name, f"line {self._line} is longer than {MAX_LINE} bytes")
        self._parse(bytes(self._pending[:cut]))
        del self._pending[:cut]
        if len(self._pending) > MAX_LINE:
            raise ParseError(self._name, f"line {self._line} is longer than {MAX_LINE} bytes")

    def _parse(self, text: bytes) -> None:
        self._batch(text, self._line, self._builder)
        self._line += text.count(b"\n")

    def finish(self) -> MappingTable:
        """The table of every mapping listed."""
        if not self._done:
            self._done = True
            if self._pending:
                tail = bytes(self._pending)
                self._pending = bytearray()
                self._parse(tail if tail.endswith(b"\n") else tail + b"\n")
        return self._builder.build()


class MappingListing:
    """A parser of a DUT's listing of mappings that also streams (a :class:`~natbench.plugins.StreamingParser`):
    registered under its name, it turns a listing into a :class:`~natbench.plugins.MappingTable`."""

    def __init__(self, name: str, batch: BatchReader, doc: str = "") -> None:
        self.name = name
        """The parser's registered name (a recipe step's ``parse:``)."""
        self._batch = batch
        self.__doc__ = doc or f"The mappings of a DUT's listing (parser {name}), as a MappingTable."

    def __call__(self, out: str) -> MappingTable:
        """The whole output at once."""
        sink = self.stream()
        sink.feed(out.encode("utf-8", errors="surrogateescape"))
        return sink.finish()

    def stream(self) -> _ListingSink:
        """A sink for one command's output."""
        return _ListingSink(self.name, self._batch)

    def __repr__(self) -> str:
        return f"MappingListing({self.name!r})"
