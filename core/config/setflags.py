"""``--set SECTION.KEY=VALUE``: keys of a config generated from flags, set from the command line.

Each ``--set`` names a path of mapping keys (``bridgeNetwork.mtu``, deeper
paths too) and a value read as one YAML document by the bounded loader
(:func:`nodehost.config.yamlsafe.parse_yaml`), so ``true``, ``1500`` and
``"x"`` mean what they mean in the file; an empty value is null.  The settings
go into the raw mapping before the plugins adjust it and before it is typed
and validated, so a bad value is a problem of the file at its field path
(``bridgeNetwork.mtu: Invalid value: ...``, exit 255) and a later ``--set`` of
one path wins.  The first key must be a top-level NodeConfig key or a section
a loaded plugin owns; any other is a usage error naming it (exit 2).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, MutableMapping, Sequence
from typing import Any

from nodehost.errors import UsageError

FLAG = "--set"


def parse_setting(text: str) -> tuple[tuple[str, ...], Any]:
    """``"a.b=v"`` -> ``(("a", "b"), v)``; ``UsageError`` naming ``--set`` unless well formed."""
    from nodehost.config.yamlsafe import YAMLFileError, parse_yaml

    path, equals, value = text.partition("=")
    keys = tuple(path.strip().split("."))
    if not equals or len(keys) < 2 or not all(keys):
        raise UsageError(f"{text!r} is not SECTION.KEY=VALUE", FLAG)
    if not value.strip():
        return keys, None
    try:
        return keys, parse_yaml(value).data
    except YAMLFileError as error:
        raise UsageError(f"{text!r}: the value is not YAML: {error}", FLAG) from None


def check_sections(settings: Iterable[str], known: Collection[str]) -> None:
    """``UsageError`` naming the first setting whose section no one owns."""
    for text in settings:
        section = parse_setting(text)[0][0]
        if section not in known:
            raise UsageError(
                f"{text!r}: no NodeConfig key or plugin section is named {section!r}", FLAG
            )


def apply_settings(raw: MutableMapping[str, Any], settings: Sequence[str]) -> None:
    """Set each ``--set`` in ``raw`` in place, creating mappings on the way; a key on the
    way that holds something else than a mapping is a ``UsageError`` naming it."""
    for text in settings:
        keys, value = parse_setting(text)
        target = raw
        for depth, key in enumerate(keys[:-1]):
            inner = target.setdefault(key, {})
            if inner is None:
                inner = target[key] = {}
            if not isinstance(inner, MutableMapping):
                where = ".".join(keys[: depth + 1])
                raise UsageError(f"{text!r}: {where} is not a mapping", FLAG)
            target = inner
        target[keys[-1]] = value
