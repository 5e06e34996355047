"""Hostile YAML documents a config map, a file or a SIGHUP may bring (the fault class of
docs/operating/cluster.rst, config sync): each is refused by the one bounded loader with its line
and column, whatever the source.

:func:`refused_documents` gives them by name; each value is the document's text, built
on ``base`` (a valid node config in YAML) so that only the hostile part is wrong.
"""

from __future__ import annotations


def alias_bomb(levels: int, width: int) -> str:
    """``levels`` anchors each holding ``width`` aliases of the one before: width**levels
    nodes once expanded, a few hundred bytes written."""
    lines = ["bomb0: &a0 [" + ", ".join(["x"] * width) + "]"]
    for level in range(1, levels):
        lines.append(f"bomb{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def deep_sequence(depth: int) -> str:
    """A value nested ``depth`` sequences deep, in flow style."""
    return "deep: " + "[" * depth + "]" * depth + "\n"


def refused_documents(base: str) -> dict[str, str]:
    """Name -> hostile document (``base`` plus the hostile part)."""
    return {
        "alias bomb 7x7": base + alias_bomb(7, 7),
        "alias bomb 9x9": base + alias_bomb(9, 9),
        "sequence 400 deep": base + deep_sequence(400),
        "a lone surrogate": base + 'surrogate: "\\ud800"\n',
        "a duplicate key": base + base.splitlines()[0] + "\n",
        "1 and '1' as keys": base + "1: a\n'1': b\n",
    }
