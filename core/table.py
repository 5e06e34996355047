"""Plain-text tables: ``components``, ``plugins``, ``network providers``, ``status``, readiness.

:func:`format_table` lays rows out in left-aligned columns two spaces apart.
Given a ``width`` (commands pass :func:`terminal_width`), no line is longer:
the widest columns are narrowed first and their cells wrap onto further lines
-- after spaces and commas where possible, mid-word only for longer words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: Columns are never narrowed below this (a narrower terminal gets longer lines).
MIN_COLUMN = 8
_GAP = "  "
_BREAK = re.compile(r"(?<=[\s,])")


def terminal_width(fallback: int = 100) -> int:
    """The terminal's width (``COLUMNS`` first), ``fallback`` when there is no terminal."""
    import shutil  # and its compressors: not for a table of no width (exit-on-ready summary)

    return shutil.get_terminal_size((fallback, 24)).columns


def format_table(rows: Sequence[Sequence[str]], width: int | None = None) -> str:
    """Left-aligned columns separated by two spaces; the last column is not padded.

    With ``width``, cells wrap so that lines fit in it (see the module docstring).
    """
    natural = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    widths = natural if width is None else fit_widths(natural, width)
    lines = []
    for row in rows:
        cells = [wrap_cell(cell, size) for cell, size in zip(row, widths, strict=False)]
        for index in range(max(len(cell) for cell in cells)):
            parts = [cell[index] if index < len(cell) else "" for cell in cells]
            padded = [part.ljust(size) for part, size in zip(parts[:-1], widths, strict=False)]
            lines.append(_GAP.join([*padded, parts[-1]]).rstrip())
    return "\n".join(lines)


def fit_widths(natural: Sequence[int], width: int) -> list[int]:
    """Column widths whose sum (with gaps) fits ``width``, narrowing the widest column first."""
    widths = list(natural)
    budget = width - len(_GAP) * (len(widths) - 1)
    while sum(widths) > budget:
        widest = max(range(len(widths)), key=lambda index: widths[index])
        if widths[widest] <= MIN_COLUMN:
            break
        widths[widest] -= 1
    return widths


def wrap_cell(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width``: breaks after spaces and commas, else mid-word."""
    if len(text) <= width:
        return [text]
    lines: list[str] = []
    current = ""
    for token in _BREAK.split(text):
        while len(token) > width:
            if current:
                lines.append(current.rstrip())
                current = ""
            lines.append(token[:width])
            token = token[width:]
        if len((current + token).rstrip()) > width:
            lines.append(current.rstrip())
            current = token.lstrip()
        else:
            current += token
    if current.strip():
        lines.append(current.rstrip())
    return lines or [""]
