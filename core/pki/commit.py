"""Write a set of files into a folder: all of them, or none.

A generated folder is computed completely in memory first (keys, certificates,
kubeconfig, config); :func:`commit_files` then only writes.  If the folder does
not exist yet, the files go into a staging folder beside it (each created with
its final mode and flushed, then the folder flushed once) that is renamed into
place at the end, so the folder appears whole or not at all.  If it exists,
each file is written atomically and, should a later one fail, the files written
so far are put back: new ones removed, replaced ones restored to their old
bytes and mode.  Files of the folder that are not in the set are never touched.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

from nodehost.fileread import CONFIG_LIMIT, read_file
from nodehost.frozen import frozen
from nodehost.pki.atomic import (
    create_files,
    fsync_directory,
    make_directories,
    remove_empty_directories,
    remove_tree,
    write_atomic,
)

FOLDER_MODE = 0o755
CERT_MODE = 0o644
KEY_MODE = 0o600


@frozen
class PlannedFile:
    """One file to write: ``name`` inside the folder, its bytes and mode.

    ``replace=False`` marks a file that must not exist yet (a private key):
    if it does, the commit fails with :class:`FileExistsError` and changes nothing.
    """

    name: str
    data: bytes
    mode: int
    replace: bool = True


@frozen
class _Previous:
    path: Path
    data: bytes | None
    mode: int


def commit_files(folder: Path, files: Sequence[PlannedFile]) -> None:
    """Write ``files`` into ``folder`` (created with 0755 if missing), all or nothing.

    Raises :class:`OSError` (including :class:`FileExistsError` for a
    ``replace=False`` file that exists); the folder is then as it was before.
    """
    folder = Path(folder)
    if folder.is_dir():
        _write_into_existing(folder, files)
    else:
        _write_new_folder(folder, files)


def _write_new_folder(folder: Path, files: Sequence[PlannedFile]) -> None:
    created_parents = make_directories(folder.parent, FOLDER_MODE)
    staging = folder.with_name(f".{folder.name}.staging-{secrets.token_hex(4)}")
    try:
        staging.mkdir(FOLDER_MODE)
        os.chmod(staging, FOLDER_MODE)
        create_files(staging, [(planned.name, planned.data, planned.mode) for planned in files])
        fsync_directory(staging)
        os.rename(staging, folder)
        fsync_directory(folder.parent)
    except BaseException:
        remove_tree(staging)
        remove_empty_directories(created_parents)
        raise


def _write_into_existing(folder: Path, files: Sequence[PlannedFile]) -> None:
    for planned in files:
        if not planned.replace and (folder / planned.name).exists():
            raise FileExistsError(0, "File exists", str(folder / planned.name))
    written: list[_Previous] = []
    try:
        for planned in files:
            path = folder / planned.name
            previous = _remember(path)
            write_atomic(
                path, planned.data, planned.mode, replace=planned.replace, sync_directory=False
            )
            written.append(previous)
        fsync_directory(folder)
    except BaseException:
        _restore(written)
        raise


def _remember(path: Path) -> _Previous:
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        return _Previous(path, None, 0)
    return _Previous(path, read_file(path, CONFIG_LIMIT), mode)


def _restore(written: list[_Previous]) -> None:
    """Undo the writes in ``written``, newest first, best effort."""
    for previous in reversed(written):
        with contextlib.suppress(OSError):
            if previous.data is None:
                previous.path.unlink(missing_ok=True)
            else:
                write_atomic(previous.path, previous.data, previous.mode)


def describe_os_error(error: OSError) -> str:
    """``Permission denied: /path`` -- the reason and the file, for one-line messages."""
    where = f": {error.filename}" if error.filename else ""
    return f"{error.strerror or error}{where}"
