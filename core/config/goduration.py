"""Go's ``time.ParseDuration``, with Go's exact error messages.

Origin validates ``iptablesSyncPeriod`` and the ``authConfig`` TTLs with Go's
parser; nodehost must accept and reject exactly the same strings.
"""

from __future__ import annotations

_NANOSECOND = 1
_UNITS = {
    "ns": _NANOSECOND,
    "us": 1_000,
    "\u00b5s": 1_000,  # U+00B5 micro sign
    "\u03bcs": 1_000,  # U+03BC Greek letter mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_LIMIT = 1 << 63
_DIGITS = "0123456789"


def go_quote(text: str) -> str:
    """Quote ``text`` as Go's time package does in errors (non-ASCII, controls as ``\\xNN``)."""
    out = ['"']
    for char in text:
        if ord(char) >= 0x80 or char < " ":
            out.extend(f"\\x{byte:02x}" for byte in char.encode("utf-8", "surrogatepass"))
        elif char in '"\\':
            out.append("\\" + char)
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _leading_int(text: str) -> tuple[int, str]:
    """Consume ``[0-9]*``; raise ``OverflowError`` past 1<<63."""
    value, index = 0, 0
    while index < len(text) and text[index] in _DIGITS:
        if value > _LIMIT // 10:
            raise OverflowError
        value = value * 10 + int(text[index])
        if value > _LIMIT:
            raise OverflowError
        index += 1
    return value, text[index:]


def _leading_fraction(text: str) -> tuple[int, float, str]:
    """Consume ``[0-9]*`` after a '.', keeping the digits that fit (Go's leadingFraction)."""
    value, scale, index, overflow = 0, 1.0, 0, False
    while index < len(text) and text[index] in _DIGITS:
        if not overflow:
            if value > (_LIMIT - 1) // 10:
                overflow = True
            else:
                candidate = value * 10 + int(text[index])
                if candidate > _LIMIT:
                    overflow = True
                else:
                    value = candidate
                    scale *= 10
        index += 1
    return value, scale, text[index:]


def parse_go_duration_ns(text: str) -> int:
    """Parse a Go duration (``300ms``, ``-1.5h``, ``2h45m``) to nanoseconds.

    Raises ``ValueError`` with Go's message: ``time: invalid duration "x"``,
    ``time: missing unit in duration "5"`` or ``time: unknown unit "d" in duration "1d"``.
    """
    invalid = ValueError(f"time: invalid duration {go_quote(text)}")
    rest, negative = text, False
    if rest and rest[0] in "+-":
        negative = rest[0] == "-"
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise invalid
    total = 0
    while rest:
        if rest[0] != "." and rest[0] not in _DIGITS:
            raise invalid
        before = len(rest)
        try:
            whole, rest = _leading_int(rest)
        except OverflowError:
            raise invalid from None
        had_whole = before != len(rest)
        fraction, scale, had_fraction = 0, 1.0, False
        if rest and rest[0] == ".":
            rest = rest[1:]
            before = len(rest)
            fraction, scale, rest = _leading_fraction(rest)
            had_fraction = before != len(rest)
        if not had_whole and not had_fraction:
            raise invalid
        end = 0
        while end < len(rest) and rest[end] != "." and rest[end] not in _DIGITS:
            end += 1
        if end == 0:
            raise ValueError(f"time: missing unit in duration {go_quote(text)}")
        unit_name, rest = rest[:end], rest[end:]
        unit = _UNITS.get(unit_name)
        if unit is None:
            raise ValueError(
                f"time: unknown unit {go_quote(unit_name)} in duration {go_quote(text)}"
            )
        if whole > _LIMIT // unit:
            raise invalid
        whole *= unit
        if fraction > 0:
            whole += int(float(fraction) * (float(unit) / scale))
            if whole > _LIMIT:
                raise invalid
        total += whole
        if total > _LIMIT:
            raise invalid
    if negative:
        return -total
    if total > _LIMIT - 1:
        raise invalid
    return total


def parse_go_duration(text: str) -> float:
    """Parse a Go duration to seconds (a float); errors as :func:`parse_go_duration_ns`."""
    return parse_go_duration_ns(text) / 1e9


def flag_duration(text: str, flag: str) -> float:
    """A flag's Go duration in seconds; :class:`~nodehost.errors.UsageError` naming ``flag``
    unless it parses and is positive."""
    from nodehost.errors import UsageError

    try:
        seconds = parse_go_duration(text)
    except ValueError as error:
        raise UsageError(str(error), flag) from error
    if seconds <= 0:
        raise UsageError(f"{text!r} must be positive", flag)
    return seconds
