"""Go's text parsers, with Go's exact error texts: strconv, encoding/csv, sloppy IPs, taints.

Every parser raises :class:`FlagError` whose message is what the Go code
prints (``strconv.ParseInt: parsing "invalid-value": invalid syntax``), so
nodehost can show users the words the real program would.  Durations come
from :mod:`nodehost.config.goduration`, host:port from
:mod:`nodehost.config.hostport`, quantities from
:mod:`nodehost.config.quantity`; this module only adapts their errors.
"""

from __future__ import annotations

import ipaddress
import math
import re

from nodehost.flagsline import go_quote


class FlagError(ValueError):
    """A flag name or value was rejected; ``str()`` is the Go program's own text."""


def _num_error(func: str, text: str, reason: str) -> FlagError:
    return FlagError(f"strconv.{func}: parsing {go_quote(text)}: {reason}")


_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def parse_bool(text: str) -> bool:
    """Go's ``strconv.ParseBool``."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise _num_error("ParseBool", text, "invalid syntax")


def _underscore_ok(text: str) -> bool:
    """Go's ``underscoreOK``: ``_`` only between digits (or after a base prefix)."""
    saw = "^"
    if text[:1] in ("+", "-"):
        text = text[1:]
    index, hexadecimal = 0, False
    if len(text) >= 2 and text[0] == "0" and text[1].lower() in "box":
        index, saw, hexadecimal = 2, "0", text[1].lower() == "x"
    for char in text[index:]:
        if (char.isascii() and char.isdigit()) or (hexadecimal and char.lower() in "abcdef"):
            saw = "0"
        elif char == "_":
            if saw != "0":
                return False
            saw = "_"
        elif saw == "_":
            return False
        else:
            saw = "!"
    return saw != "_"


def _parse_magnitude(func: str, original: str, text: str, base: int) -> int:
    """Digits of ``text`` in ``base`` (0: Go's prefix rules), as ParseUint reads them."""
    if not text:
        raise _num_error(func, original, "invalid syntax")
    base0 = base == 0
    if base0:
        base = 10
        if text[0] == "0":
            prefix = text[1:2].lower()
            if len(text) >= 3 and prefix in ("b", "o", "x"):
                base, text = {"b": 2, "o": 8, "x": 16}[prefix], text[2:]
            else:
                base, text = 8, text[1:]
    value, underscores = 0, False
    for char in text:
        if char == "_" and base0:
            underscores = True
            continue
        digit = int(char, 36) if char.isascii() and char.isalnum() else 99
        if digit >= base:
            raise _num_error(func, original, "invalid syntax")
        value = value * base + digit
    if underscores and not _underscore_ok(original.lstrip("+-")):
        raise _num_error(func, original, "invalid syntax")
    return value


def parse_int(text: str, bits: int = 64, base: int = 0) -> int:
    """Go's ``strconv.ParseInt(text, base, bits)``, error texts included."""
    if not text:
        raise _num_error("ParseInt", text, "invalid syntax")
    negative = text[0] == "-"
    digits = text[1:] if text[0] in "+-" else text
    magnitude = _parse_magnitude("ParseInt", text, digits, base)
    limit = 1 << (bits - 1)
    if magnitude > limit or (magnitude == limit and not negative):
        raise _num_error("ParseInt", text, "value out of range")
    return -magnitude if negative else magnitude


def parse_uint(text: str, bits: int = 64, base: int = 0) -> int:
    """Go's ``strconv.ParseUint(text, base, bits)``, error texts included."""
    magnitude = _parse_magnitude("ParseUint", text, text, base)
    if magnitude >= 1 << bits:
        raise _num_error("ParseUint", text, "value out of range")
    return magnitude


#: Patterns compiled on first use (``re``'s cache), not when the module is imported.
_FLOAT = (
    r"[+-]?(?:inf(?:inity)?|nan|(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?"
    r"|0x(?:[0-9a-f]+(?:\.[0-9a-f]*)?|\.[0-9a-f]+)p[+-]?\d+)"
)
_FLOAT32_MAX = 3.4028234663852886e38


def parse_float(text: str, bits: int = 64) -> float:
    """Go's ``strconv.ParseFloat(text, bits)`` (decimal, hex, inf/nan), error texts included."""
    plain = text.replace("_", "") if _underscore_ok(text) else text
    if not re.fullmatch(_FLOAT, plain, re.IGNORECASE):
        raise _num_error("ParseFloat", text, "invalid syntax")
    unsigned = plain.lstrip("+-")
    if unsigned[:2].lower() == "0x":
        value = float.fromhex(plain)
    else:
        try:
            value = float(plain)
        except OverflowError:  # pragma: no cover - float() returns inf instead
            value = math.inf
    if math.isinf(value) and "inf" not in plain.lower():
        raise _num_error("ParseFloat", text, "value out of range")
    if bits == 32 and math.isfinite(value) and abs(value) > _FLOAT32_MAX:
        raise _num_error("ParseFloat", text, "value out of range")
    return value


_IPV4_SLOPPY = r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})"


def parse_ip_sloppy(text: str) -> str | None:
    """Kubernetes' ``netutils.ParseIPSloppy``: the IP's canonical text, or None.

    Like Go's old ``net.ParseIP``, IPv4 octets may have leading zeros (read as
    decimal); zones are not IPs.
    """
    sloppy = re.fullmatch(_IPV4_SLOPPY, text)
    if sloppy:
        octets = [int(part) for part in sloppy.groups()]
        return ".".join(map(str, octets)) if all(octet <= 255 for octet in octets) else None
    if "%" in text or ":" not in text:
        return None
    try:
        return str(ipaddress.IPv6Address(text))
    except ValueError:
        return None


def split_host_port(text: str) -> tuple[str, str]:
    """Go's ``net.SplitHostPort``; raise :class:`FlagError` with Go's text."""
    from nodehost.config import hostport

    try:
        return hostport.split_host_port(text)
    except ValueError as error:
        raise FlagError(str(error)) from None


def parse_duration(text: str) -> float:
    """Go's ``time.ParseDuration`` in seconds; raise :class:`FlagError` with Go's text."""
    from nodehost.config import goduration

    try:
        return goduration.parse_go_duration(text)
    except ValueError as error:
        raise FlagError(str(error)) from None


def parse_quantity_text(text: str) -> str:
    """A Kubernetes quantity, returned as written; :class:`FlagError` with its message."""
    from nodehost.config.quantity import parse_quantity

    try:
        parse_quantity(text)
    except ValueError as error:
        raise FlagError(str(error)) from None
    return text


def read_csv_line(text: str) -> list[str]:
    """Go's ``encoding/csv`` reading of one line, as pflag's ``readAsCSV`` does."""
    if text == "":
        return []
    fields: list[str] = []
    index, length = 0, len(text)
    while True:
        start = index
        if index < length and text[index] == '"':
            value, index = _quoted_csv_field(text, index + 1, start)
        else:
            end = text.find(",", index)
            end = length if end < 0 else end
            value = text[index:end]
            quote = value.find('"')
            if quote >= 0:
                raise FlagError(
                    f'parse error on line 1, column {index + quote + 1}: bare " in non-quoted-field'
                )
            index = end
        fields.append(value)
        if index >= length:
            return fields
        index += 1  # the comma


def _csv_quote_error(column: int) -> FlagError:
    return FlagError(
        f'parse error on line 1, column {column}: extraneous or missing " in quoted-field'
    )


def _quoted_csv_field(text: str, index: int, start: int) -> tuple[str, int]:
    chunks: list[str] = []
    while True:
        quote = text.find('"', index)
        if quote < 0:
            raise _csv_quote_error(len(text) + 1)
        chunks.append(text[index:quote])
        after = quote + 1
        if text[after : after + 1] == '"':
            chunks.append('"')
            index = after + 1
        elif after >= len(text) or text[after] == ",":
            return "".join(chunks), after
        else:
            raise _csv_quote_error(after + 1)


_QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def is_qualified_name(key: str) -> bool:
    """apimachinery's ``IsQualifiedName``: ``[DNS-subdomain prefix/]name``, name 1-63 characters."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not re.fullmatch(_DNS_SUBDOMAIN, prefix)):
        return False
    return 0 < len(name) <= 63 and bool(re.fullmatch(_QUALIFIED_NAME, name))


def is_label_value(value: str) -> bool:
    """apimachinery's ``IsValidLabelValue``: empty, or 1-63 characters of a qualified name."""
    return value == "" or (len(value) <= 63 and bool(re.fullmatch(_QUALIFIED_NAME, value)))


def parse_taint(spec: str) -> dict[str, str]:
    """One ``key[=value]:Effect`` taint as Kubernetes' ``ParseTaints`` reads it for adding."""
    parts = spec.split(":")
    if len(parts) != 2:
        raise FlagError(f"invalid taint spec: {spec}")
    key_value, effect = parts
    if effect not in TAINT_EFFECTS:
        raise FlagError(f"invalid taint effect: {effect}, unsupported taint effect")
    key, *rest = key_value.split("=")
    if len(rest) > 1 or (rest and not is_label_value(rest[0])) or not is_qualified_name(key):
        raise FlagError(f"invalid taint spec: {spec}")
    taint = {"key": key, "effect": effect}
    if rest and rest[0]:
        taint["value"] = rest[0]
    return taint
