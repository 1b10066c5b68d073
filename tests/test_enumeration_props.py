"""Property tests of the phase-1 port enumeration (the RFC 4814 bijection every backend uses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from natbench.traffic import PortEnumeration, PortRange


@st.composite
def enumerations(draw: st.DrawFn, max_src: int = 300, max_dst: int = 40, min_src: int = 1) -> PortEnumeration:
    n_src = draw(st.integers(min_src, max_src))
    n_dst = draw(st.integers(1, max_dst))
    s0 = draw(st.integers(1, 65536 - n_src))
    d0 = draw(st.integers(1, 65536 - n_dst))
    seed = draw(st.integers(0, 2**64 - 1))
    return PortEnumeration(PortRange(s0, s0 + n_src - 1), PortRange(d0, d0 + n_dst - 1), seed)


@settings(max_examples=150, deadline=None)
@given(enumerations())
def test_enumeration_is_a_bijection(e: PortEnumeration) -> None:
    src, dst = e.pairs()
    pairs = set(zip(src.tolist(), dst.tolist(), strict=True))
    assert len(src) == e.size == len(e.src) * len(e.dst)
    assert len(pairs) == e.size  # injective ...
    assert all(s in e.src and d in e.dst for s, d in pairs)  # ... into the product, hence onto it
    # the scalar and vectorised forms agree
    for k in {0, e.size // 2, e.size - 1}:
        assert e.pair(k) == (int(src[k]), int(dst[k]))


@settings(max_examples=100, deadline=None)
@given(enumerations(max_src=2000, max_dst=300, min_src=64))
def test_adjacent_indices_map_to_distant_pairs(e: PortEnumeration) -> None:
    src, _ = e.pairs(0, min(e.size, 20_000))
    n = len(e.src)
    steps = [abs(int(a) - int(b)) for a, b in zip(src[1:].tolist(), src[:-1].tolist(), strict=True)]
    # a sequential enumeration steps by 1; a random permutation's neighbours are |S|/3 apart on average
    assert sum(steps) / len(steps) > n / 8
    assert sum(1 for s in steps if s == 1) <= 0.2 * len(steps)
    if len(e.dst) >= 64:
        d_steps = [
            abs(int(a) - int(b)) for a, b in zip(e.destinations[1:].tolist(), e.destinations[:-1].tolist(), strict=True)
        ]
        assert sum(d_steps) / len(d_steps) > len(e.dst) / 8
    # the order differs from the natural one in most places
    natural = [e.src.first + k % n for k in range(len(src))]
    assert sum(1 for a, b in zip(src.tolist(), natural, strict=True) if a == b) <= 0.2 * len(src) + 1


@settings(max_examples=5, deadline=None)
@given(st.lists(enumerations(), min_size=5, max_size=5))
def test_enumeration_is_reproducible_across_processes(es: list[PortEnumeration]) -> None:
    cases = [[e.src.first, e.src.last, e.dst.first, e.dst.last, e.seed] for e in es]
    code = (
        "import json,sys\n"
        "from natbench.traffic import PortEnumeration, PortRange\n"
        "out=[]\n"
        "for a,b,c,d,seed in json.loads(sys.argv[1]):\n"
        "    e=PortEnumeration(PortRange(a,b),PortRange(c,d),seed)\n"
        "    s,t=e.pairs()\n"
        "    out.append([s.tolist(),t.tolist()])\n"
        "print(json.dumps(out))\n"
    )
    # a different hash seed in the child: nothing may depend on Python's hash randomisation
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(cases)], capture_output=True, text=True, check=True, env=env
    ).stdout
    theirs = json.loads(out)
    ours = [[e.pairs()[0].tolist(), e.pairs()[1].tolist()] for e in es]
    assert theirs == ours
