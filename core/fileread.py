"""Reading a file nodehost did not write, whatever the path turns out to be.

Every file nodehost reads -- the node config, the files it names
(certificates, keys, CA bundles, kubeconfigs, resolv.conf, DNS records), pid
files and ledgers of its own state -- goes through :func:`read_file`:

* opened with ``O_NONBLOCK`` (a FIFO without a writer cannot block the open)
  and, with ``follow_symlinks=False``, ``O_NOFOLLOW``;
* refused unless it is a regular file (a FIFO, ``/dev/zero``, a socket or a
  directory never reaches a parser);
* refused past a size limit fitting its kind (:data:`PEM_LIMIT`,
  :data:`KUBECONFIG_LIMIT`, :data:`CONFIG_LIMIT`, ...), checked on the size
  the file claims and again while reading (a file growing under us);

so a hostile or mistaken path costs at most ``limit`` bytes of memory and
never hangs.  :func:`check_file` applies the same rules without reading, for
validation (``stat``, then an open and close of a regular file: is it readable?).

A refusal raises :class:`UnusableFile`, an :class:`OSError` whose ``strerror``
is the reason (``not a regular file (a named pipe)``, ``larger than the 1 MiB
limit``), so every ``except OSError`` that prints ``error.strerror`` already
words it; other ``OSError`` (missing, unreadable) pass through unchanged.
"""

from __future__ import annotations

import errno
import os
import stat

MiB = 1 << 20

#: node-config.yaml and YAML documents of the same weight (component configs).
CONFIG_LIMIT = 4 * MiB
#: A DNS records file: a whole cluster's services and endpoints (10,000 and 50,000 are ~5 MiB).
RECORDS_LIMIT = 16 * MiB
#: A certificate, a key or a CA bundle (PEM).
PEM_LIMIT = MiB
#: A kubeconfig (inline certificates included).
KUBECONFIG_LIMIT = MiB
#: Small text files: resolv.conf, JSON ledgers, CNI configuration lists.
TEXT_LIMIT = MiB
#: Kernel files of a process (``/proc/<pid>/environ`` is bounded by ARG_MAX).
PROC_LIMIT = 4 * MiB
#: Files nodehost writes for itself and reads back (pid files, serial numbers).
STATE_LIMIT = 64 * 1024

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


class UnusableFile(OSError):
    """The path exists but is not a file nodehost will read; ``strerror`` says why."""


def describe_limit(limit: int) -> str:
    """``1 MiB`` for whole MiB, else bytes."""
    return f"{limit // MiB} MiB" if limit % MiB == 0 else f"{limit} bytes"


def file_kind(mode: int) -> str | None:
    """What a file of ``mode`` is when it is not a regular file (``a directory``,
    ``a named pipe`` ...); None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refuse(info: os.stat_result, path: str, limit: int) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise UnusableFile(errno.EISDIR, "is a directory", path)
    if not stat.S_ISREG(info.st_mode):
        raise UnusableFile(errno.EINVAL, f"not a regular file ({file_kind(info.st_mode)})", path)
    if info.st_size > limit:
        raise too_large(path, limit)


def too_large(path: str, limit: int) -> UnusableFile:
    """The error for a file over ``limit`` bytes."""
    return UnusableFile(errno.EFBIG, f"larger than the {describe_limit(limit)} limit", path)


def check_file(path: str, limit: int, *, directory_ok: bool = False) -> None:
    """Raise as :func:`read_file` would, without reading (symlinks followed).

    ``stat`` first; a regular file within ``limit`` is then opened and closed
    unread (``O_NONBLOCK``), so that a file this process may not read raises
    ``PermissionError`` here as it would there.  ``directory_ok`` accepts a
    directory too (a kubelet manifest path may be one).  Raises :class:`OSError`
    (``FileNotFoundError``, ``PermissionError`` ...) or :class:`UnusableFile`;
    a path with a NUL byte raises ``UnusableFile`` (``EINVAL``) too.
    """
    try:
        info = os.stat(path)
    except ValueError:
        raise UnusableFile(errno.EINVAL, "the path contains a NUL byte", path) from None
    if directory_ok and stat.S_ISDIR(info.st_mode):
        return
    _refuse(info, path, limit)
    os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY))


def read_file(path: str | os.PathLike[str], limit: int, *, follow_symlinks: bool = True) -> bytes:
    """The whole content of the regular file ``path``, at most ``limit`` bytes.

    See the module docstring.  Raises :class:`OSError` as the open or read did,
    or :class:`UnusableFile` for a file of the wrong kind or size, or for a
    path holding a NUL byte.  With ``follow_symlinks=False`` a symbolic link
    as the last component is refused (``ELOOP``).
    """
    name = os.fspath(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(name, flags)
    except ValueError:
        raise UnusableFile(errno.EINVAL, "the path contains a NUL byte", name) from None
    try:
        _refuse(os.fstat(fd), name, limit)
        chunks, total = [], 0
        while chunk := os.read(fd, min(1 << 16, limit + 1 - total)):
            total += len(chunk)
            if total > limit:
                raise too_large(name, limit)
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike[str], limit: int, *, follow_symlinks: bool = True) -> str:
    """:func:`read_file` decoded as UTF-8 (undecodable bytes replaced)."""
    return read_file(path, limit, follow_symlinks=follow_symlinks).decode("utf-8", "replace")


FileState = tuple[int, int, int] | None


def file_state(path: str) -> FileState:
    """What tells a changed file (symlinks followed): (inode, size, modification time in
    ns); None if it cannot be stat-ed.  Cheap enough to ask before every use."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return (status.st_ino, status.st_size, status.st_mtime_ns)
