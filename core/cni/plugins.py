"""Finding CNI plugin binaries in the CNI binary directories (``CNI_PATH``).

Debian's ``containernetworking-plugins`` installs them in ``/usr/lib/cni``, the
upstream release tarball in ``/opt/cni/bin``; a network may name other
directories.  Lookup is in order, first match wins, as libcni's ``FindInPath``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from nodehost.errors import RuntimeFailure

#: Where CNI plugin binaries are looked for when a network names no directories.
DEFAULT_BIN_DIRS: tuple[str, ...] = ("/usr/lib/cni", "/opt/cni/bin")


def find_plugin(plugin_type: str, bin_dirs: Sequence[str]) -> str | None:
    """The path of the executable ``plugin_type`` in the first of ``bin_dirs`` holding it."""
    if not plugin_type or "/" in plugin_type or plugin_type in (".", ".."):
        return None
    for directory in bin_dirs:
        path = os.path.join(directory, plugin_type)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def missing_plugins(plugin_types: Iterable[str], bin_dirs: Sequence[str]) -> list[str]:
    """The plugin types (in first-seen order, once each) that none of ``bin_dirs`` holds."""
    missing: list[str] = []
    for plugin_type in plugin_types:
        if plugin_type not in missing and find_plugin(plugin_type, bin_dirs) is None:
            missing.append(plugin_type)
    return missing


def require_plugins(plugin_types: Iterable[str], bin_dirs: Sequence[str], who: str) -> None:
    """Raise :class:`RuntimeFailure` naming every missing plugin and the directories searched.

    ``who`` starts the message (``component sdn (network provider bridge)``).
    """
    missing = missing_plugins(plugin_types, bin_dirs)
    if not missing:
        return
    plural = "s" if len(missing) > 1 else ""
    raise RuntimeFailure(
        f"{who}: CNI plugin{plural} {', '.join(missing)} not found in "
        f"{', '.join(bin_dirs) or '(no directories)'}; install them (Debian: apt-get install "
        "containernetworking-plugins; upstream: the release tarball in /opt/cni/bin) or "
        "point the provider's cniBinDirs at them"
    )
