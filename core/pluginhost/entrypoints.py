"""The entry points of one group, read straight from the installed distributions' files.

:func:`entry_points` returns what ``importlib.metadata`` would (every
distribution on ``sys.path``, first one of a name wins) without its cost:
``importlib.metadata`` parses every distribution's ``METADATA`` as an e-mail
message (and imports ``email``, ``zipfile``, ``csv``...) to answer a question
about a few lines of ``entry_points.txt``.  Here each folder on ``sys.path`` is
listed once, only ``entry_points.txt`` files are read, and only a distribution
that has an entry point in the group has the head of its ``METADATA`` read,
for its name and version.

Nothing is cached between processes: a distribution installed, removed or
upgraded is seen by the next call, in this process too.  A ``sys.path`` entry
that is not a folder (a zip file) is searched by ``importlib.metadata`` itself,
which then is imported; so it is when a finder on ``sys.meta_path`` other than
the standard one finds distributions.

A distribution is known by its normalized name taken from its
``.dist-info``/``.egg-info`` folder name, as ``importlib.metadata`` finds it;
a line of the group's section that is not ``name = value`` becomes an entry
point that fails to load, so a broken file fails that distribution alone.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

from nodehost.frozen import frozen

#: What ``importlib.metadata.EntryPoint`` accepts as a value (``module[:attr][ [extras]]``);
#: compiled when an entry point is loaded (``re``'s cache), not at import.
_VALUE = r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$"
_METADATA_FILES = ("METADATA", "PKG-INFO")


@frozen
class EntryPoint:
    """One entry point and the distribution that declares it."""

    name: str
    value: str
    group: str
    distribution: str | None
    version: str | None

    def load(self) -> Any:
        """Import the module and return the attribute the value names, as
        ``importlib.metadata.EntryPoint.load`` does; ``ValueError`` for a malformed value."""
        match = re.match(_VALUE, self.value)
        if match is None:
            raise ValueError(f"malformed entry point value {self.value!r}")
        module = importlib.import_module(match.group("module"))
        attributes = filter(None, (match.group("attr") or "").split("."))
        return functools.reduce(getattr, attributes, module)


def entry_points(group: str) -> list[EntryPoint]:
    """Every entry point of ``group``, in ``sys.path`` order, once per distribution name."""
    if _other_finders():
        return list(_from_importlib(group, None))
    found: list[EntryPoint] = []
    seen: set[str] = set()
    for entry, names in _path_listings():
        if names is None:
            found += _from_importlib(group, entry, seen)
            continue
        for key, info in _distributions(names):
            if key not in seen:
                seen.add(key)
                found += _read_group(os.path.join(entry or ".", info), group)
    return found


def distribution_version(name: str) -> str | None:
    """The version of the first distribution called ``name`` on ``sys.path``, None when none
    is installed (or its metadata names no version): what ``importlib.metadata.version``
    returns, without importing it for plain folders on ``sys.path``.

    ``importlib.metadata`` itself answers for what is no plain folder (a zip file, an
    ``.egg``) and for a distribution found here whose version this reader cannot read
    (an ``.egg-info`` file, an empty ``METADATA``)."""
    if _other_finders():
        return _version_from_importlib(name, None)
    key = normalize(name)
    for entry, names in _path_listings():
        if names is None:
            found = _version_from_importlib(name, entry)
            if found is not None:
                return found
            continue
        for found_key, info in _distributions(names):
            if found_key == key:
                version = _name_and_version(os.path.join(entry or ".", info))[1]
                return version if version is not None else _version_from_importlib(name, entry)
    return None


def _path_listings() -> Iterator[tuple[str, list[str] | None]]:
    """Each ``sys.path`` entry with its folder's listing; None for an entry that is no
    plain folder (a zip file, an ``.egg``: ``importlib.metadata`` reads those); an entry
    that cannot be listed is left out, as ``importlib.metadata`` leaves it."""
    for entry in sys.path:
        folder = entry or "."
        if folder.endswith(".egg"):
            yield entry, None
            continue
        try:
            names: list[str] | None = os.listdir(folder)
        except NotADirectoryError:
            names = None
        except OSError:
            continue
        yield entry, names


def _other_finders() -> bool:
    """Whether a finder other than the standard path finder can find distributions."""
    from importlib.machinery import PathFinder

    return any(
        hasattr(finder, "find_distributions") and finder is not PathFinder
        for finder in sys.meta_path
    )


def normalize(name: str) -> str:
    """A distribution name as ``importlib.metadata`` compares them (PEP 503, ``_`` for ``-``)."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _distributions(names: list[str]) -> Iterator[tuple[str, str]]:
    """``(normalized name, folder)`` of each ``.dist-info``/``.egg-info`` among ``names``,
    in listing order: the caller takes the first folder of each name, as
    ``importlib.metadata`` does."""
    for name in names:
        low = name.lower()
        if low.endswith((".dist-info", ".egg-info")):
            yield normalize(low.rpartition(".")[0].partition("-")[0]), name


def _read_group(info: str, group: str) -> list[EntryPoint]:
    """The entry points of ``group`` in the distribution folder ``info`` (none if unreadable)."""
    try:
        with open(os.path.join(info, "entry_points.txt"), encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return []
    pairs = list(_section(text, group))
    if not pairs:
        return []
    name, version = _name_and_version(info)
    return [EntryPoint(key, value, group, name, version) for key, value in pairs]


def _section(text: str, group: str) -> Iterator[tuple[str, str]]:
    """``(name, value)`` of each line of section ``[group]`` (the ``Sectioned`` format)."""
    current = None
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line.strip("[]")
        elif current == group:
            name, equals, value = line.partition("=")
            yield (name.strip(), value.strip()) if equals else (line, "")


def _name_and_version(info: str) -> tuple[str | None, str | None]:
    """``Name`` and ``Version`` from the head of the distribution's metadata file."""
    fields: dict[str, str] = {}
    for file_name in _METADATA_FILES:
        try:
            with open(os.path.join(info, file_name), encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    if not line.strip():
                        break
                    key, colon, value = line.partition(":")
                    if colon and key in ("Name", "Version"):
                        fields.setdefault(key, value.strip())
        except OSError:
            continue
        break
    return fields.get("Name"), fields.get("Version")


def _version_from_importlib(name: str, path: str | None) -> str | None:
    """The version ``importlib.metadata`` finds for ``name`` (in ``path`` alone, if given)."""
    from importlib import metadata

    dists = (
        metadata.distributions(name=name)
        if path is None
        else (metadata.distributions(name=name, path=[path]))
    )
    return next((dist.version for dist in dists), None)


def _from_importlib(group: str, path: str | None, seen: set[str] | None = None) -> list[EntryPoint]:
    """Entry points found by ``importlib.metadata`` (in ``path`` alone, if given)."""
    from importlib import metadata

    seen = set() if seen is None else seen
    found = []
    dists = metadata.distributions() if path is None else metadata.distributions(path=[path])
    for dist in dists:
        key = normalize(dist.metadata["Name"] or "")
        if key in seen:
            continue
        seen.add(key)
        found += [
            EntryPoint(ep.name, ep.value, group, dist.metadata["Name"], dist.version)
            for ep in dist.entry_points
            if ep.group == group
        ]
    return found
