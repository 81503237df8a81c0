"""Checks for the fields of imported JSON lines: each raises ValueError naming the field (e.g.
`rubrics[2].points`), which the readers turn into a file:line error for that line alone."""

from __future__ import annotations

import json
import math
from collections.abc import Sized
from typing import Any

MAX_POINTS = 1_000_000.0  # |points| above this is refused: sums of such points overflow or swamp the rest


def kind_of(value: Any) -> str:
    """How a JSON value is called in a message: object, list, string, number, boolean, null."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number" if isinstance(value, int | float) else type(value).__name__)


def text(value: Any, field: str, *, required: bool = True) -> str:
    """A string field, stripped; missing or blank is an error when `required`."""
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{field}: expected a string, got {kind_of(value)}")
    if required and not value.strip():
        raise ValueError(f"{field}: must not be empty")
    return value.strip()


def string_list(value: Any, field: str, *, unique: bool = False) -> list[str]:
    """A list of strings (missing or null: empty); `unique` refuses a repeated entry."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{field}: expected a list of strings, got {kind_of(value)}")
    for index, entry in enumerate(value):
        if not isinstance(entry, str):
            raise ValueError(f"{field}[{index}]: expected a string, got {kind_of(entry)}")
    if unique and len(set(value)) != len(value):
        repeated = next(v for i, v in enumerate(value) if v in value[:i])
        raise ValueError(f"{field}: {repeated!r} appears twice")
    return list(value)


def points(value: Any, field: str) -> float:
    """A finite number of points within ±MAX_POINTS (JSON's NaN, Infinity and 1e999 are refused)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{field}: expected a number, got {kind_of(value)}")
    try:
        number = float(value)
    except OverflowError:
        raise ValueError(f"{field}: the number is too large") from None
    if not math.isfinite(number):
        raise ValueError(f"{field}: expected a finite number, got {number}")
    if abs(number) > MAX_POINTS:
        raise ValueError(f"{field}: {number:g} is out of range (at most ±{MAX_POINTS:,.0f})")
    return number


def at_most(items: Sized, field: str, limit: int | None, setting: str) -> None:
    """Refuse more than `limit` entries, naming the setting that raises it."""
    if limit is not None and len(items) > limit:
        raise ValueError(f"{field}: {len(items):,} entries, over the limit of {limit:,} ({setting})")


def finite_everywhere(data: Any) -> None:
    """Refuse NaN and ±Infinity anywhere in a JSON value (Python's json accepts them; stores and
    strict JSON readers do not), naming the first field that holds one. The common case (none) is
    one pass without building field names."""
    if _all_finite(data):
        return
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{where.lstrip('.') or 'line'}: expected a finite number, got {value}")
        if isinstance(value, dict):
            stack.extend((f"{where}.{key}", item) for key, item in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((f"{where}[{i}]", item) for i, item in reversed(list(enumerate(value))))


def _all_finite(data: Any) -> bool:
    """One pass in C: the JSON encoder refuses NaN and ±Infinity (`allow_nan=False`)."""
    try:
        json.dumps(data, allow_nan=False, check_circular=False)
    except ValueError:
        return False
    return True
