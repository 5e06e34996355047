"""Reading API objects whose shape the server does not guarantee: typed fields or one error.

An API server (or a proxy in front of it) can hand nodehost an object that
parses as JSON but is not the shape its kind has: ``metadata`` missing or
null, ``data`` a list, a Service's ``ports`` a string or a ``port`` of
"eighty".  Every consumer of API objects reads fields through these helpers:
a field of the wrong type raises :class:`MalformedObject` naming the field, so
the consumer ignores that object with one log line and keeps its last good
state, instead of failing on whatever Python raises deep inside (the
contract of docs/operating/reliability.rst, "A misbehaving API server").

A missing or null field is its type's empty value, as Go's JSON decoding of
an API object leaves it; only a value of another type is malformed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class MalformedObject(ValueError):
    """An API object (or one of its fields) is not the shape its kind has."""


def mapping(value: Any, where: str) -> Mapping[str, Any]:
    """``value`` as a JSON object (null or missing: empty); :class:`MalformedObject` else."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MalformedObject(f"{where} is {_kind(value)}, not an object")
    return value


def sequence(value: Any, where: str) -> list[Any]:
    """``value`` as a JSON array (null or missing: empty); :class:`MalformedObject` else."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedObject(f"{where} is {_kind(value)}, not a list")
    return value


def text(value: Any, where: str, default: str = "") -> str:
    """``value`` as a string (null or missing: ``default``); :class:`MalformedObject` else."""
    if value is None:
        return default
    if not isinstance(value, str):
        raise MalformedObject(f"{where} is {_kind(value)}, not a string")
    return value


def integer(value: Any, where: str, low: int = 0, high: int = 65535) -> int:
    """``value`` as a whole number in ``[low, high]`` (null or missing: 0);
    :class:`MalformedObject` else (a string such as "eighty" or "80" included, as Go's
    decoder refuses a string for an integer field)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedObject(f"{where} is {_kind(value)}, not a number")
    if not low <= value <= high:
        raise MalformedObject(f"{where} is {value}, outside {low}..{high}")
    return value


def metadata(obj: Any) -> Mapping[str, Any]:
    """The ``metadata`` of object ``obj`` (null or missing: empty)."""
    return mapping(mapping(obj, "the object").get("metadata"), "metadata")


def name_of(obj: Any) -> str:
    """``metadata.name``, which every object has; :class:`MalformedObject` when it is not
    a non-empty string."""
    name = text(metadata(obj).get("name"), "metadata.name")
    if not name:
        raise MalformedObject("metadata.name is missing")
    return name


def version_of(obj: Any, default: str = "") -> str:
    """``metadata.resourceVersion``, or ``default`` when the object has none it can give
    (this one never raises: a version is only a hint where to resume)."""
    try:
        return text(metadata(obj).get("resourceVersion"), "resourceVersion") or default
    except MalformedObject:
        return default


def _kind(value: Any) -> str:
    """What a JSON value is, for a message: "a list", "a string ('eighty')"..."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
             int: "a number", float: "a number"}  # fmt: skip
    kind = names.get(type(value), type(value).__name__)
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        kind += f" ({str(value)[:40]!r})"
    return kind
