"""The files of a run directory as text and back: run.json, points.json and campaign.yaml.

Decoding takes a file's bytes and the path they came from and returns the typed model, or raises one
:class:`~natbench.errors.StoreError` naming the file and the field (``run.json: status: expected ...``).
Encoding gives the exact text natbench writes (run.json: sorted keys, indented; points.json: indented).
The record lines of trials.jsonl have their own codec (:mod:`natbench.run.format.lines`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from natbench.errors import StoreError
from natbench.run.format.campaign import NestingError, StoredCampaign
from natbench.run.format.fields import MAX_DEPTH, DuplicateKey, FieldError, depth, no_duplicate_keys
from natbench.run.format.meta import RunMeta
from natbench.run.format.points import PointRecord, points_from_json, points_to_json


def load_json(raw: bytes, path: Path) -> Any:
    """The JSON value of a file's bytes (StoreError naming the file when it is no UTF-8 JSON, or when an object names
    a key twice: which of the two a reader keeps is no more than chance)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StoreError(f"{path}: not UTF-8 text (byte at offset {exc.start})") from None
    try:
        value = json.loads(text, object_pairs_hook=no_duplicate_keys)
    except DuplicateKey as exc:
        raise StoreError(f"{path}: {exc}") from None
    except RecursionError:
        raise StoreError(
            f"{path}: nested more than {MAX_DEPTH} levels deep (natbench writes a dozen at most)"
        ) from None
    except ValueError as exc:
        raise StoreError(f"{path}: not valid JSON: {exc}") from None
    if depth(value) > MAX_DEPTH:
        raise StoreError(f"{path}: nested more than {MAX_DEPTH} levels deep (natbench writes a dozen at most)")
    return value


def decode_meta(raw: bytes, path: Path) -> RunMeta:
    """run.json's bytes as :class:`RunMeta`."""
    data = load_json(raw, path)
    if not isinstance(data, dict):
        raise StoreError(f"{path}: expected a JSON object")
    try:
        return RunMeta.from_dict(data)
    except FieldError as exc:
        raise StoreError(f"{path}: {exc}") from None


def encode_meta(meta: RunMeta) -> str:
    """run.json's text."""
    return json.dumps(meta.to_dict(), indent=2, sort_keys=True, default=str) + "\n"


def decode_points(raw: bytes, path: Path) -> list[PointRecord]:
    """points.json's bytes as its :class:`PointRecord` list."""
    data = load_json(raw, path)
    if not isinstance(data, list):
        raise StoreError(f"{path}: expected a list of working points")
    try:
        return points_from_json(data)
    except FieldError as exc:
        raise StoreError(f"{path}: {exc}") from None


def encode_points(points: Iterable[PointRecord]) -> str:
    """points.json's text."""
    return json.dumps(points_to_json(points), indent=2) + "\n"


def decode_campaign(raw: bytes, path: Path) -> StoredCampaign:
    """campaign.yaml's bytes as :class:`StoredCampaign` (StoreError when they are no UTF-8 text, or beyond the YAML
    reader's limits: nested deeper than any campaign, an alias bomb; a YAML file that does not parse otherwise reads
    leniently, as one that says nothing)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StoreError(f"{path}: cannot be read as UTF-8 text (byte at offset {exc.start})") from None
    try:
        return StoredCampaign.parse(text)
    except NestingError as exc:
        raise StoreError(f"{path}: {exc}") from None
