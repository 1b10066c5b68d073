"""A model of how a TRex v3.x server runs one compiled stream on C data-plane cores.

Input is the stream's JSON (``STLStream.to_json()``), i.e. exactly what the
client sends to the server; output is the field values every core writes into
its frames, in order. The model follows the server's rules (read from
trex-core ``src/stx/stl``; nothing copied):

* burst split: a single burst of N frames on C cores gives ``N div C`` frames
  to each core and one more to the first ``N mod C``; a stream with a pinned
  core, fewer frames than cores, or C = 1 runs unsplit on one core;
* split of a variable with ``split_to_cores``: core i starts ``i`` steps ahead
  (phase) and strides ``step * C``; ``split_to_cores = False`` variables are
  cloned unchanged to every core; a variable named by another's ``next_var``
  must not be split (the server rejects it);
* value-list variable: each frame writes ``list[index]`` then advances
  ``index = (index + step) mod len`` by one conditional subtraction;
* ``next_var`` chaining: the chained variable runs only on frames where the
  pointing variable's current index is below its (per-core) step, i.e. on
  its first frame and right after each wrap; otherwise it keeps its last value;
* a variable's memory starts at ``peek_prev()`` of its initial index, so a
  chained variable skipped on the first frame would write an index, not a value.

Only what natbench's programs use is modelled (``inc`` value lists and
min..max ``inc`` variables, plain 16/32-bit writes); anything else raises.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class SplitModelError(ValueError):
    """The program uses something the model does not cover, or the server would reject it."""


@dataclass
class _Var:
    name: str
    values: list[int] | None
    lo: int
    hi: int
    step: int
    wa: int
    index: int
    split: bool
    next_var: str | None
    has_previous: bool = False
    memory: int = 0

    @property
    def size(self) -> int:
        return len(self.values) if self.values is not None else self.hi - self.lo + 1


@dataclass(frozen=True)
class CoreTrace:
    """What one core sent: per write offset, the values of its frames in order."""

    core: int
    """Core index within the port."""
    frames: int
    """Frames this core sent."""
    fields: dict[int, list[int]]
    """Packet offset -> value written in each frame."""


def _core_frames(total: int, cores: int) -> list[int]:
    per, rem = divmod(total, cores)
    return [per + (1 if i < rem else 0) for i in range(cores)]


def _make_vars(instructions: list[dict[str, Any]]) -> list[_Var]:
    out: list[_Var] = []
    for ins in instructions:
        if ins["type"] != "flow_var":
            continue
        if ins["op"] != "inc":
            raise SplitModelError(f"variable {ins['name']}: op {ins['op']} not modelled")
        values = ins.get("value_list")
        if values is not None:
            values = [int(v) for v in values]
            lo, hi, init = 0, len(values) - 1, 0
        else:
            lo, hi, init = int(ins["min_value"]), int(ins["max_value"]), int(ins["init_value"])
        rng = hi - lo + 1
        step = int(ins["step"])
        out.append(
            _Var(
                ins["name"], values, lo, hi, step % rng, step // rng, init, bool(ins["split_to_cores"]), ins["next_var"]
            )
        )
    for i, v in enumerate(out):
        if v.next_var is None:
            continue
        if i + 1 >= len(out) or out[i + 1].name != v.next_var:
            raise SplitModelError(f"next_var of {v.name} must name the variable right after it")
        if out[i + 1].split:
            raise SplitModelError("a variable that is pointed at by next_var must run on a single core")
        out[i + 1].has_previous = True
    return out


def _peek(v: _Var, steps: int) -> int:
    """Index/value ``steps`` steps ahead of the initial one (TRex peek_next), ``v.lo``-based."""
    rng = v.size
    base = v.index if v.values is not None else v.index - v.lo
    return (base + (v.step * steps) % rng) % rng


def _check_instructions(instructions: list[dict[str, Any]]) -> None:
    for ins in instructions:
        if ins["type"] not in ("flow_var", "write_flow_var", "fix_checksum_hw", "fix_checksum_ipv4"):
            raise SplitModelError(f"instruction {ins['type']} not modelled")


def _core_plan(stream_json: dict[str, Any], total: int, cores: int) -> list[tuple[int, int, int, int]]:
    """``(core, frames, step multiplier, phase)`` of every core that sends (the burst split rule)."""
    pinned = int(stream_json.get("core_id", -1)) >= 0
    if cores == 1 or pinned or total < cores:
        return [(int(stream_json.get("core_id", 0)) if pinned else 0, total, 1, 0)]
    return [(i, n, cores, i) for i, n in enumerate(_core_frames(total, cores))]


def _place(v: _Var, phase: int, mul: int, any_split: bool) -> None:
    """Move ``v`` to its core: ``phase`` steps ahead with its step multiplied (split variables), memory at peek_prev."""
    if v.split and any_split and mul > 1:
        # TRex update(phase, step_mul): init moves ``phase`` steps ahead, step multiplied
        new_init = _peek(v, phase)
        full = v.wa * v.size + v.step
        v.step, v.wa = (full * mul) % v.size, (full * mul) // v.size
        v.index = new_init if v.values is not None else v.lo + new_init
    # memory initialised to peek_prev(): one step back from the initial index/value
    back = ((v.index if v.values is not None else v.index - v.lo) - v.step) % v.size
    v.memory = back if v.values is not None else v.lo + back
    # the data plane keeps only ``step mod size`` (the wrap count ``wa`` is lost), so a
    # per-core stride of a whole list or more silently breaks the enumeration: modelled as is


def _next_frame(variables: list[_Var]) -> None:
    """Advance every variable by one frame (a chained variable only where the one pointing at it wrapped)."""
    skip_next = False
    for v in variables:
        if v.has_previous and skip_next:
            skip_next = False
            continue
        skip_next = False
        if v.values is not None:
            if v.next_var is not None and v.index >= v.step:
                skip_next = True
            v.memory = v.values[v.index]
            nxt = v.index + v.step
            v.index = nxt - v.size if nxt >= v.size else nxt
        else:
            if v.next_var is not None and (v.hi - v.memory) >= v.step:
                skip_next = True
            v.memory = v.lo + ((v.memory - v.lo + v.step) % v.size)


def run_stream(stream_json: dict[str, Any], cores: int) -> list[CoreTrace]:
    """Replay ``stream_json`` (single burst) on ``cores`` cores; return one trace per core that sent."""
    mode = stream_json["mode"]
    if mode["type"] != "single_burst":
        raise SplitModelError("only single bursts are modelled")
    total = int(mode["total_pkts"])
    instructions = stream_json["vm"]["instructions"]
    writes = [ins for ins in instructions if ins["type"] == "write_flow_var"]
    _check_instructions(instructions)
    template = _make_vars(instructions)
    any_split = any(v.split for v in template)
    traces: list[CoreTrace] = []
    for core, n_frames, mul, phase in _core_plan(stream_json, total, cores):
        variables = [_Var(**vars(v)) for v in template]
        for v in variables:
            _place(v, phase, mul, any_split)
        by_name = {v.name: v for v in variables}
        fields: dict[int, list[int]] = {int(w["pkt_offset"]): [] for w in writes}
        for _ in range(n_frames):
            _next_frame(variables)
            for w in writes:
                fields[int(w["pkt_offset"])].append(by_name[w["name"]].memory + int(w.get("add_value", 0)))
        traces.append(CoreTrace(core, n_frames, fields))
    return traces
