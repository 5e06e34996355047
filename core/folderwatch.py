"""Files completed in one folder, as an asyncio loop sees them (Linux inotify through ctypes).

:class:`FolderWatch` watches one folder for files that are *complete*: written
and closed (``IN_CLOSE_WRITE``) or moved in (``IN_MOVED_TO``: ``cp`` to a
temporary name then ``mv``, ``rsync``), never for each write of a file still
being copied.  :meth:`FolderWatch.changed` waits until at least one such event
came and returns the names (files directly in the folder) since the last call;
an empty set means the kernel's queue overflowed (``IN_Q_OVERFLOW``) and the
caller should look at the whole folder.  No polling: the loop reads the
inotify descriptor when the kernel says it is readable.

The watch ends with :meth:`close` (or the ``async with`` block), or when the
folder itself is removed or moved away: :meth:`changed` then raises
:class:`FolderGone`.  Creating a watch raises :class:`OSError` (``ENOENT``,
``ENOTDIR``, ``ENOSPC`` for the per-user watch limit...) with the folder named.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import os
import struct

IN_CLOSE_WRITE = 0x00000008
IN_MOVED_TO = 0x00000080
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (of the NUL-padded name that follows)
_GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED
_READ_SIZE = 64 * 1024


class FolderGone(OSError):
    """The watched folder was removed or moved away."""


class FolderWatch:
    """An inotify watch of ``folder`` for completed files; use inside a running loop."""

    def __init__(self, folder: str) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.folder = folder
        self._fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if self._fd < 0:
            raise _os_error(folder)
        mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR
        if libc.inotify_add_watch(self._fd, os.fsencode(folder), mask) < 0:
            error = _os_error(folder)
            os.close(self._fd)
            raise error
        self._names: set[str] = set()
        self._overflow = False
        self._gone = False
        self._event = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._fd, self._read)

    def _read(self) -> None:
        try:
            data = os.read(self._fd, _READ_SIZE)
        except BlockingIOError:
            return
        for mask, name in parse_events(data):
            if mask & IN_Q_OVERFLOW:
                self._overflow = True
            elif mask & _GONE:
                self._gone = True
            elif name:
                self._names.add(name)
        self._event.set()

    async def changed(self) -> set[str]:
        """The names of files completed since the last call, waiting for one; an empty set
        after an overflow (look at the whole folder).  Raises :class:`FolderGone`."""
        while not (self._names or self._overflow or self._gone):
            self._event.clear()
            await self._event.wait()
        if self._gone:
            raise FolderGone(errno.ENOENT, "the watched folder went away", self.folder)
        names, self._names, self._overflow = self._names, set(), False
        return names

    def close(self) -> None:
        """Stop watching (idempotent)."""
        if self._fd >= 0:
            self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1

    async def __aenter__(self) -> FolderWatch:
        return self

    async def __aexit__(self, *_: object) -> None:
        self.close()


def parse_events(data: bytes) -> list[tuple[int, str]]:
    """``(mask, name)`` of each ``struct inotify_event`` in ``data`` (name "" for the folder)."""
    found, offset = [], 0
    while offset + _EVENT.size <= len(data):
        _, mask, _, length = _EVENT.unpack_from(data, offset)
        start = offset + _EVENT.size
        name = data[start : start + length].split(b"\0", 1)[0]
        found.append((mask, os.fsdecode(name)))
        offset = start + length
    return found


def _os_error(folder: str) -> OSError:
    code = ctypes.get_errno()
    return OSError(code, f"cannot watch the folder: {os.strerror(code)}", folder)
