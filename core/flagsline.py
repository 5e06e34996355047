"""Origin's ``--write-flags`` output: arguments on one line, quoted as Go's ``%q``
(:ref:`origin-write-flags`)."""

from __future__ import annotations

import re
from collections.abc import Iterable

#: What is printed bare; compiled on first use (``re``'s cache), not at import.
_BARE = r"^[0-9a-zA-Z\-=_.,/:]+$"
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


def go_quote(text: str) -> str:
    """``text`` as Go's ``strconv.Quote`` writes it."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char == " " or char.isprintable():
            out.append(char)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def quote_flag(arg: str) -> str:
    """``arg`` bare when it matches ``^[0-9a-zA-Z\\-=_.,/:]+$``, else Go-quoted."""
    return arg if re.match(_BARE, arg) else go_quote(arg)


def format_flags_line(args: Iterable[str]) -> str:
    """All arguments on one line, separated by spaces, quoted as Origin does."""
    return " ".join(quote_flag(arg) for arg in args)
