"""Atomic file writes: a reader sees the old file or the whole new one, never a part.

Every file is created exclusively with its final mode (so a key is 0600 from
its first byte) and flushed to disk before anyone can see it: either as a
temporary file in the destination's own folder that is then moved into place
(:func:`write_atomic`, after which the folder is flushed), or inside a staging
folder that appears as a whole (:mod:`nodehost.pki.commit`).  Standard library
only, so any part of nodehost may use it.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

#: The name of a temporary file beside the one being written (``.<name>.tmp-XXXXXXXX``):
#: what a kill between creating it and renaming it leaves.
TEMPORARY_NAME = re.compile(r"^\..+\.tmp-[0-9a-f]{8}$")


def fsync_directory(path: Path) -> None:
    """Flush a folder's entries (a rename or link inside it) to disk."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_new_file(path: Path, data: bytes, mode: int) -> int:
    """Create ``path`` exclusively with exactly ``mode`` and write ``data``: its open descriptor.

    The file has its final mode before its first byte (the umask cannot widen
    or narrow it).  Not flushed: :func:`create_file` and :func:`create_files`
    do that.  Raises :class:`FileExistsError` if ``path`` exists and
    :class:`OSError` otherwise, removing the partial file.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except BaseException:
        os.close(fd)
        Path(path).unlink(missing_ok=True)
        raise
    return fd


def create_file(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` exclusively with exactly ``mode``, write ``data`` and flush it to disk.

    Raises :class:`FileExistsError` if ``path`` exists and :class:`OSError`
    otherwise, removing the partial file.  Not atomic by itself: use it inside
    a folder nobody else sees yet, or via :func:`write_atomic`.
    """
    create_files(Path(path).parent, [(Path(path).name, data, mode)])


def create_files(folder: Path, files: Sequence[tuple[str, bytes, int]]) -> None:
    """:func:`create_file` for each ``(name, data, mode)`` in ``folder``, all or none.

    Every file is written first, then each is flushed with ``fsync``.  Between
    the two, writeback of all of them is started (``POSIX_FADV_DONTNEED``, as
    PostgreSQL's ``pg_flush_data`` does without ``sync_file_range``), so the
    file system can commit them together instead of one journal commit per
    file; the flushes are the same.  On any error the files created are removed.
    """
    created: list[tuple[Path, int]] = []
    try:
        for name, data, mode in files:
            path = Path(folder) / name
            created.append((path, open_new_file(path, data, mode)))
        for _, fd in created:
            with contextlib.suppress(OSError):  # only a hint
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        for _, fd in created:
            os.fsync(fd)
    except BaseException:
        for path, _ in created:
            path.unlink(missing_ok=True)
        raise
    finally:
        for _, fd in created:
            os.close(fd)


def write_atomic(
    path: Path, data: bytes, mode: int, *, replace: bool = True, sync_directory: bool = True
) -> None:
    """Write ``data`` to ``path`` atomically, the file having exactly ``mode``.

    The data goes to a temporary file beside ``path`` (:func:`create_file`),
    which then takes ``path``'s place.  ``replace=True`` renames over an
    existing file.  ``replace=False`` never touches an existing file: the new
    file is hard-linked into place, which fails with :class:`FileExistsError`
    if ``path`` exists, even when another process creates it at the same
    moment (use it for private keys).  ``sync_directory=False`` leaves flushing
    the folder to the caller (who writes several files, then flushes once).

    Raises :class:`OSError` naming ``path`` (the obstacle, never the temporary
    file: ``File exists (a dangling symbolic link)``); on error no temporary
    file is left behind.
    """
    path = Path(path)
    temporary = _create_temporary(path, data, mode)
    try:
        if replace:
            os.replace(temporary, path)
        else:
            os.link(temporary, path)
            temporary.unlink()
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise _about(error, path) from None
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    if sync_directory:
        fsync_directory(path.parent)


def _create_temporary(path: Path, data: bytes, mode: int) -> Path:
    """A new ``.<name>.tmp-XXXXXXXX`` beside ``path`` holding ``data``."""
    import secrets

    while True:
        temporary = path.with_name(f".{path.name}.tmp-{secrets.token_hex(4)}")
        try:
            create_file(temporary, data, mode)
        except FileExistsError:
            continue
        return temporary


def remove_temporaries(folder: Path | str) -> list[Path]:
    """Remove the temporaries (:data:`TEMPORARY_NAME`, files or symlinks, never followed) a
    killed writer left in ``folder``; return them.  Only for a folder no one else writes
    in at the same time (its owner holds a lock)."""
    removed = []
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for entry in os.scandir(folder):
            if TEMPORARY_NAME.match(entry.name) and not entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
    return removed


def _about(error: OSError, path: Path) -> OSError:
    """``error`` (from putting a temporary file in place) as the same error about ``path``."""
    reason = error.strerror or str(error)
    if path.is_symlink():
        reason += " (a symbolic link)" if path.exists() else " (a dangling symbolic link)"
    return type(error)(error.errno, reason, str(path))


def remove_tree(path: Path | str) -> None:
    """Remove a folder and everything in it, best effort (``shutil`` loads only when needed)."""
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def make_directories(path: Path, mode: int = 0o755) -> list[Path]:
    """Create ``path`` and its missing parents with ``mode``; return those created.

    The list runs outermost first, so removing it in reverse undoes the call.
    Directories get exactly ``mode`` (as Origin's 0755), whatever the umask.
    """
    path = Path(path)
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    created: list[Path] = []
    for directory in reversed(missing):
        try:
            directory.mkdir(mode)
        except FileExistsError:
            continue
        except OSError:
            remove_empty_directories(created)
            raise
        os.chmod(directory, mode)
        created.append(directory)
    return created


def remove_empty_directories(directories: list[Path]) -> None:
    """Remove ``directories`` innermost first, best effort: any that is not empty stays."""
    for directory in reversed(directories):
        with contextlib.suppress(OSError):
            directory.rmdir()
