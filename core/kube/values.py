"""pflag value types as the Kubernetes programs define them.

A :class:`Value` is set from text exactly as its Go type's ``Set`` does
(``ParseInt(text, 0, 32)`` for an ``int32``, CSV for a ``stringSlice``, merged
``k=v`` pairs for a ``mapStringString``, ...) and raises
:class:`~nodehost.kube.goparse.FlagError` with the Go text.  ``config()`` is
the JSON-ready value a config-file field holds once the flag is set, and
``config_kind`` names the kind of that value, which
:func:`check_config_value` checks in a file read back.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar

from nodehost.flagsline import go_quote
from nodehost.kube.goparse import (
    FlagError,
    parse_bool,
    parse_duration,
    parse_float,
    parse_int,
    parse_ip_sloppy,
    parse_quantity_text,
    parse_taint,
    parse_uint,
    read_csv_line,
    split_host_port,
)


class Value:
    """One flag's value: ``set`` it from text like its Go type; read ``config()``.

    ``type_name`` is pflag's ``Type()``; ``is_bool`` means the flag may be given
    bare (pflag's ``NoOptDefVal`` is ``"true"``).  ``set`` raises
    :class:`FlagError` with the Go text; ``config()`` is the JSON-ready value the
    field of a config file holds once the flag is set.
    """

    type_name: ClassVar[str] = "string"
    is_bool: ClassVar[bool] = False
    config_kind: ClassVar[str] = "string"

    def set(self, text: str) -> None:
        raise NotImplementedError

    def config(self) -> Any:
        raise NotImplementedError


class _Scalar(Value):
    """A value whose last ``set`` wins."""

    def __init__(self) -> None:
        self.value: Any = None

    def set(self, text: str) -> None:
        self.value = self.parse(text)

    def parse(self, text: str) -> Any:
        return text

    def config(self) -> Any:
        return self.value


class StringValue(_Scalar):
    """pflag ``string``: any text."""


class BoolValue(_Scalar):
    """pflag ``bool``: Go's ``ParseBool``; may be given bare."""

    type_name = "bool"
    is_bool = True
    config_kind = "boolean"

    def parse(self, text: str) -> bool:
        return parse_bool(text)


class Int32Value(_Scalar):
    """pflag ``int32``: ``ParseInt(text, 0, 32)``."""

    type_name = "int32"
    config_kind = "integer"
    bits = 32

    def parse(self, text: str) -> int:
        return parse_int(text, self.bits)


class Int64Value(Int32Value):
    """pflag ``int64``."""

    type_name = "int64"
    bits = 64


class IntValue(Int32Value):
    """pflag ``int`` (64-bit)."""

    type_name = "int"
    bits = 64


class UintValue(_Scalar):
    """pflag ``uint``: ``ParseUint(text, 0, 64)``."""

    type_name = "uint"
    config_kind = "integer"

    def parse(self, text: str) -> int:
        return parse_uint(text, 64)


class Float32Value(_Scalar):
    """pflag ``float32``."""

    type_name = "float32"
    config_kind = "number"
    bits = 32

    def parse(self, text: str) -> float:
        return parse_float(text, self.bits)


class Float64Value(Float32Value):
    """pflag ``float64``."""

    type_name = "float64"
    bits = 64


class DurationValue(_Scalar):
    """pflag ``duration``: Go's ``time.ParseDuration``; the config holds the text as given."""

    type_name = "duration"
    config_kind = "duration"

    def parse(self, text: str) -> str:
        parse_duration(text)
        return text


class QuantityValue(_Scalar):
    """``resource.QuantityValue`` (``quantity``): a Kubernetes quantity such as ``64Ki``."""

    type_name = "quantity"
    config_kind = "quantity"

    def parse(self, text: str) -> str:
        return parse_quantity_text(text)


class IPValue(_Scalar):
    """Kubernetes' ``IPVar`` (``ip``): an IP address, or empty for none."""

    type_name = "ip"

    def parse(self, text: str) -> str:
        if text and parse_ip_sloppy(text) is None:
            raise FlagError(f"{go_quote(text)} is not a valid IP address")
        return text


class IPPortValue(_Scalar):
    """Kubernetes' ``IPPortVar`` (``ipport``): ``ip`` or ``ip:port``, or empty for none."""

    type_name = "ipport"

    def parse(self, text: str) -> str:
        if not text or parse_ip_sloppy(text) is not None:
            return text
        try:
            host, port = split_host_port(text)
        except FlagError as error:
            raise FlagError(
                f"{go_quote(text)} is not in a valid format (ip or ip:port): {error}"
            ) from None
        if parse_ip_sloppy(host) is None:
            raise FlagError(f"{go_quote(host)} is not a valid IP address")
        if not port.isdigit() or int(port) > 65535:
            raise FlagError(f"{go_quote(port)} is not a valid number")
        return text


def text_value(type_name: str) -> type[Value]:
    """A string-typed Go value whose ``Set`` accepts anything (``ProxyMode``, ``LocalMode``)."""
    return type(f"{type_name}Value", (StringValue,), {"type_name": type_name})


class VersionValue(_Scalar):
    """component-base's ``--version`` (``version[=true]``): true, false, raw or vX.Y.Z."""

    type_name = "version"
    is_bool = True

    def parse(self, text: str) -> str:
        if text == "raw" or re.fullmatch(r"v\d+\.\d+\.\d+(?:[-+].*)?", text):
            return text
        if text.startswith("v"):
            raise FlagError(f"version {go_quote(text)} is not in the format vX.Y.Z")
        return "true" if parse_bool(text) else "false"


class VerbosityValue(_Scalar):
    """component-base's ``-v``/``--v`` level: ``ParseUint(text, 10, 31)``."""

    type_name = "Level"
    config_kind = "integer"

    def parse(self, text: str) -> int:
        return parse_uint(text, 31, base=10)


class VModuleValue(Value):
    """component-base's ``--vmodule`` (``pattern=N,...``); each ``set`` appends."""

    type_name = "pattern=N,..."
    config_kind = "list"

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def set(self, text: str) -> None:
        for pattern in text.split(","):
            if not pattern:
                continue
            parts = pattern.split("=")
            if len(parts) != 2 or not parts[0] or not parts[1]:
                raise FlagError(f"{go_quote(pattern)} does not have the pattern=N format")
            try:
                level = parse_uint(parts[1], 31, base=10)
            except FlagError as error:
                raise FlagError(f"parsing verbosity in {go_quote(pattern)}: {error}") from None
            self.items.append({"filePattern": parts[0], "verbosity": level})

    def config(self) -> list[dict[str, Any]]:
        return list(self.items)


class StringSliceValue(Value):
    """pflag ``stringSlice`` (``strings``): CSV; the first ``set`` replaces, later ones append."""

    type_name = "stringSlice"
    config_kind = "string list"

    def __init__(self) -> None:
        self.items: list[str] = []

    def set(self, text: str) -> None:
        self.items.extend(read_csv_line(text))

    def config(self) -> list[str]:
        return list(self.items)


class MapStringBoolValue(Value):
    """component-base's ``MapStringBool`` (``mapStringBool``): ``k=bool,...``, merged."""

    type_name = "mapStringBool"
    config_kind = "boolean map"

    def __init__(self) -> None:
        self.items: dict[str, bool] = {}

    def set(self, text: str) -> None:
        for pair in text.split(","):
            pair = pair.strip()
            if not pair:
                continue
            key, sep, raw = pair.partition("=")
            if not sep:
                raise FlagError("malformed pair, expect string=bool")
            key, raw = key.strip(), raw.strip()
            try:
                self.items[key] = parse_bool(raw)
            except FlagError as error:
                raise FlagError(f"invalid value of {key}: {raw}, err: {error}") from None

    def config(self) -> dict[str, bool]:
        return dict(self.items)


class MapStringStringValue(Value):
    """component-base's ``MapStringString`` (``mapStringString``): ``k=v,...``, merged.

    ``no_split`` (``NewMapStringStringNoSplit``) takes one ``k=v`` per ``set``.
    ``separator`` ``<`` makes it ``LangleSeparatedMapStringString`` (``k<v,...``).
    """

    type_name = "mapStringString"
    config_kind = "string map"

    def __init__(self, *, no_split: bool = False, separator: str = "=") -> None:
        self.items: dict[str, str] = {}
        self.no_split = no_split
        self.separator = separator

    def set(self, text: str) -> None:
        for pair in self._pairs(text):
            key, sep, value = pair.partition(self.separator)
            if not sep:
                raise FlagError(f"malformed pair, expect string{self.separator}string")
            self.items[key.strip()] = value.strip()

    def _pairs(self, text: str) -> list[str]:
        if self.no_split:
            return [text]
        if self.separator == "=":
            return [pair.strip() for pair in text.split(",") if pair.strip()]
        return [pair for pair in text.split(",") if pair]

    def config(self) -> dict[str, str]:
        return dict(self.items)


class ConfigurationMapValue(Value):
    """component-base's ``ConfigurationMap`` (``--node-labels``): ``k=v`` or ``k``; never fails."""

    type_name = "mapStringString"
    config_kind = "string map"

    def __init__(self) -> None:
        self.items: dict[str, str] = {}

    def set(self, text: str) -> None:
        for pair in text.split(","):
            if not pair:
                continue
            key, _, value = pair.partition("=")
            self.items[key.strip()] = value.strip()

    def config(self) -> dict[str, str]:
        return dict(self.items)


class ColonMultimapValue(Value):
    """component-base's ``ColonSeparatedMultimapStringString``: ``k:v,...``, values appended."""

    type_name = "colonSeparatedMultimapStringString"
    config_kind = "string list map"

    def __init__(self) -> None:
        self.items: dict[str, list[str]] = {}

    def set(self, text: str) -> None:
        for pair in text.split(","):
            if not pair:
                continue
            key, sep, value = pair.partition(":")
            if not sep:
                raise FlagError("malformed pair, expect string:string")
            self.items.setdefault(key.strip(), []).append(value.strip())

    def config(self) -> dict[str, list[str]]:
        return {key: list(values) for key, values in self.items.items()}


class TaintsValue(_Scalar):
    """Kubernetes' ``RegisterWithTaintsVar`` (``[]v1.Taint``): ``k=v:Effect,...``; last wins."""

    type_name = "[]v1.Taint"
    config_kind = "list"

    def parse(self, text: str) -> list[dict[str, str]]:
        if not text:
            return []
        return [parse_taint(spec) for spec in text.split(",") if not spec.endswith("-")]


#: A hugepages resource name; compiled on first use (``re``'s cache), not at import.
_HUGEPAGES = r"hugepages-.+"


class ReservedMemoryValue(Value):
    """Kubernetes' ``ReservedMemoryVar``: ``numa:type=quantity[,...][;numa:...]``, appended."""

    type_name = "reserved-memory"
    config_kind = "list"

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def set(self, text: str) -> None:
        if not text:
            self.items = []
            return
        for reservation in text.split(";"):
            node, sep, limits_text = reservation.partition(":")
            if not sep or ":" in limits_text:
                raise FlagError(
                    "the reserved memory has incorrect format, expected "
                    f"numaNodeID:type=quantity[,type=quantity...], got {reservation}"
                )
            try:
                numa_node = parse_int(node, 64, base=10)
            except FlagError:
                raise FlagError(
                    f"failed to convert the NUMA node ID, exptected integer, got {node}"
                ) from None
            self.items.append({"numaNode": numa_node, "limits": self._limits(limits_text)})

    @staticmethod
    def _limits(text: str) -> dict[str, str]:
        limits: dict[str, str] = {}
        for entry in text.split(","):
            parts = entry.split("=")
            if len(parts) != 2:
                raise FlagError(
                    f"the reserved limit has incorrect value, expected type=quantatity, got {entry}"
                )
            name, amount = parts
            if name != "memory" and not re.fullmatch(_HUGEPAGES, name):
                raise FlagError(f"memory type conversion error, unknown type: {go_quote(name)}")
            try:
                limits[name] = parse_quantity_text(amount)
            except FlagError:
                raise FlagError(
                    f"failed to parse the quantatity, expected quantatity, got {amount}"
                ) from None
        return limits

    def config(self) -> list[dict[str, Any]]:
        return list(self.items)


def _is_string_map(obj: Any, item_ok: Callable[[Any], bool]) -> bool:
    return isinstance(obj, dict) and all(
        isinstance(key, str) and item_ok(item) for key, item in obj.items()
    )


def _duration_ok(obj: Any) -> bool:
    if not isinstance(obj, str):
        return False
    try:
        parse_duration(obj)
    except FlagError:
        return False
    return True


def _quantity_ok(obj: Any) -> bool:
    if isinstance(obj, bool) or not isinstance(obj, (str, int)):
        return False
    try:
        parse_quantity_text(str(obj))
    except FlagError:
        return False
    return True


_KIND_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda obj: isinstance(obj, str),
    "boolean": lambda obj: isinstance(obj, bool),
    "integer": lambda obj: isinstance(obj, int) and not isinstance(obj, bool),
    "number": lambda obj: isinstance(obj, (int, float)) and not isinstance(obj, bool),
    "duration": _duration_ok,
    "quantity": _quantity_ok,
    "list": lambda obj: isinstance(obj, list),
    "string list": lambda obj: isinstance(obj, list) and all(isinstance(i, str) for i in obj),
    "boolean map": lambda obj: _is_string_map(obj, lambda item: isinstance(item, bool)),
    "string map": lambda obj: _is_string_map(obj, lambda item: isinstance(item, str)),
    "string list map": lambda obj: _is_string_map(
        obj, lambda item: isinstance(item, list) and all(isinstance(i, str) for i in item)
    ),
}


def check_config_value(kind: str, obj: Any) -> bool:
    """Whether ``obj`` is a valid config-file value of ``kind`` (a ``Value.config_kind``)."""
    return _KIND_CHECKS[kind](obj)
