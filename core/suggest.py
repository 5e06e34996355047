"""Did-you-mean: the known name closest to a mistyped one (config keys, components, hooks)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to ``name``: a case-insensitive match first, then difflib's
    closest above 0.6 similarity; None when nothing is close."""
    options = list(candidates)
    by_lower = {option.lower(): option for option in options}
    if name.lower() in by_lower:
        return by_lower[name.lower()]
    close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    return close[0] if close else None
