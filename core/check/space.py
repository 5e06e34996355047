"""Free space and inodes of the file system a path is (or will be) on."""

from __future__ import annotations

import os

from nodehost.frozen import frozen


@frozen
class Space:
    """``path``'s file system as ``statvfs`` gives it to an unprivileged writer (``f_bavail``).

    ``measured`` is the existing folder actually measured (``path`` itself, or
    its nearest existing parent when ``path`` is not made yet).
    """

    path: str
    measured: str
    free_bytes: int
    total_bytes: int
    free_inodes: int
    total_inodes: int

    def free_fraction(self) -> float:
        return self.free_bytes / self.total_bytes if self.total_bytes else 1.0

    def inode_fraction(self) -> float:
        return self.free_inodes / self.total_inodes if self.total_inodes else 1.0

    def at_or_below(self, limit: str, inodes: bool = False) -> bool:
        """Whether the free bytes (``inodes``: free inodes) are at or below ``limit``, a
        kubelet eviction threshold: a percentage of the total (``"10%"``) or a quantity
        (``"1Gi"``; a count for inodes).  False for a limit that is neither (validation
        reports it) and for a percentage of nothing."""
        free, total = (
            (self.free_inodes, self.total_inodes) if inodes else (self.free_bytes, self.total_bytes)
        )
        if limit.endswith("%"):
            return total > 0 and free * 100 <= total * float(limit[:-1])
        from nodehost.config.quantity import parse_quantity

        try:
            return free <= parse_quantity(limit).value
        except ValueError:
            return False

    def describe(self) -> str:
        return (
            f"{self.measured}: {_size(self.free_bytes)} of {_size(self.total_bytes)} free "
            f"({self.free_fraction():.0%}), {self.inode_fraction():.0%} of inodes free"
        )


def space_of(path: str) -> Space:
    """The :class:`Space` of ``path`` (or of its nearest existing parent); ``OSError`` if none."""
    measured = os.path.abspath(path)
    while not os.path.exists(measured) and measured != os.path.dirname(measured):
        measured = os.path.dirname(measured)
    stats = os.statvfs(measured)
    return Space(
        path=path,
        measured=measured,
        free_bytes=stats.f_bavail * stats.f_frsize,
        total_bytes=stats.f_blocks * stats.f_frsize,
        free_inodes=stats.f_favail,
        total_inodes=stats.f_files,
    )


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} B"
