"""A folder of files that changes from one complete set to the next with one rename.

The node folder keeps Origin's flat layout -- ``server.crt``, ``server.key``,
``node.kubeconfig``, ``node-config.yaml`` ... at the paths users, configs and
the kubelet name -- but each file nodehost manages there is a relative
symlink into the *current version*::

    node/
      server.crt          -> .nodehost-current/server.crt
      server.key          -> .nodehost-current/server.key
      ...
      .nodehost-current   -> .nodehost-v-1f2e3d4c     (the one switch)
      .nodehost-v-1f2e3d4c/                           (the files themselves)

:func:`commit_versioned` writes the new set into a new version folder beside
the current one (each file created with its final mode and flushed, then the
folder flushed), makes sure every name is such a symlink, and then points
``.nodehost-current`` at the new version by renaming a new symlink over it:
that rename is the only step a reader can see, so the folder shows the old
set or the new set, never a mix -- also when the process is killed at any
point.  The old version is removed afterwards.

A folder in the plain layout (made by Origin or an older nodehost, or a file
a user replaced by hand) is adopted file by file first: the file's bytes and
mode are put into the current version and the name becomes the symlink to
them, so every step of the adoption shows the same content.  Files the
commit does not name are never touched.  A new folder is assembled in a
staging folder beside it and renamed into place.

A version folder is never followed: ``.nodehost-current`` naming a symlink
is refused (``OSError`` ELOOP naming it, nothing changed), a symlink named
like a version folder that nothing points at is removed, not followed, so
no file is written, nor hard-linked from, outside the folder.

What a kill can leave -- a version folder nobody points at, ``.<name>.tmp-*``
files and symlinks, ``.<folder>.staging-*`` folders beside it (keys included)
-- is removed by the next commit on that folder (:func:`clean_stale`).  Commits
take an ``flock`` on the parent folder, so two never interleave.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from nodehost.fileread import CONFIG_LIMIT, read_file
from nodehost.pki.atomic import (
    TEMPORARY_NAME,
    create_file,
    create_files,
    fsync_directory,
    make_directories,
    remove_empty_directories,
    remove_tree,
)
from nodehost.pki.commit import FOLDER_MODE, PlannedFile

CURRENT = ".nodehost-current"
VERSION_PREFIX = ".nodehost-v-"
#: What follows ``.<folder>.staging-`` in a staging folder's name (no pattern per folder).
_TOKEN = re.compile(r"[0-9a-f]{8}")


def _token() -> str:
    return secrets.token_hex(4)


def link_target(name: str) -> str:
    """What the symlink ``name`` in a versioned folder points at."""
    return f"{CURRENT}/{name}"


def is_managed(folder: Path, name: str) -> bool:
    """Whether ``folder/name`` is already the symlink into the current version."""
    path = folder / name
    return path.is_symlink() and os.readlink(path) == link_target(name)


def commit_versioned(folder: Path, files: Sequence[PlannedFile]) -> None:
    """Make ``files`` the content of ``folder`` (created 0755 if missing), all or nothing.

    One commit at a time per parent folder (an ``flock`` on it).  Raises
    :class:`OSError` -- :class:`FileExistsError` for a ``replace=False`` file
    that exists -- leaving the folder's visible content as it was.
    """
    folder = Path(folder)
    created_parents = make_directories(folder.parent, FOLDER_MODE)
    try:
        with _locked(folder.parent):
            if folder.is_dir():
                _update(folder, files)
            else:
                _create(folder, files)
    except BaseException:
        remove_empty_directories(created_parents)
        raise


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# --- a new folder ----------------------------------------------------------------------------


def _create(folder: Path, files: Sequence[PlannedFile]) -> None:
    _remove_staging(folder)
    staging = folder.with_name(f".{folder.name}.staging-{_token()}")
    try:
        staging.mkdir(FOLDER_MODE)
        os.chmod(staging, FOLDER_MODE)
        version = _new_version(staging, files, carried=())
        os.symlink(version.name, staging / CURRENT)
        for planned in files:
            os.symlink(link_target(planned.name), staging / planned.name)
        fsync_directory(staging)
        os.rename(staging, folder)
        fsync_directory(folder.parent)
    except BaseException:
        remove_tree(staging)
        raise


# --- an existing folder ----------------------------------------------------------------------


def _update(folder: Path, files: Sequence[PlannedFile]) -> None:
    clean_stale(folder)
    for planned in files:
        if not planned.replace and (folder / planned.name).exists():
            raise FileExistsError(0, "File exists", str(folder / planned.name))
    current = _adopt(folder, [planned.name for planned in files])
    planned_names = {planned.name for planned in files}
    carried = [(current, name) for name in os.listdir(current) if name not in planned_names]
    version = _new_version(folder, files, carried)
    try:
        for planned in files:
            if not is_managed(folder, planned.name):
                _replace_with_link(folder, planned.name)
        _point_current(folder, version)  # the commit point
    except BaseException:
        remove_tree(version)
        raise
    fsync_directory(folder)
    remove_tree(current)


def _current_version(folder: Path) -> Path | None:
    """The version folder ``.nodehost-current`` names (None: none, or a name that is not one).

    Raises ``OSError`` (ELOOP) naming it when that entry is a symlink: its
    files would be written, and hard-linked into the next version, outside
    the folder.
    """
    link = folder / CURRENT
    if not link.is_symlink():
        return None
    target = os.readlink(link)
    if "/" in target or not target.startswith(VERSION_PREFIX):
        return None
    version = folder / target
    if version.is_symlink():
        raise OSError(
            errno.ELOOP,
            "a version folder that is a symbolic link (nodehost follows none; remove it)",
            str(version),
        )
    return version


def _adopt(folder: Path, names: Sequence[str]) -> Path:
    """The current version folder, made first if the folder has none; every file in
    ``names`` that is not yet managed has its bytes and mode copied into it."""
    current = _current_version(folder)
    if current is None or not current.is_dir():
        current = folder / f"{VERSION_PREFIX}{_token()}"
        current.mkdir(FOLDER_MODE)
        os.chmod(current, FOLDER_MODE)
        fsync_directory(current)
        _point_current(folder, current)
    for name in names:
        if is_managed(folder, name):
            continue
        content = _plain_file(folder / name)
        if content is not None:
            (current / name).unlink(missing_ok=True)
            create_file(current / name, *content)
    fsync_directory(current)
    return current


def _plain_file(path: Path) -> tuple[bytes, int] | None:
    """The bytes and mode of a file to adopt (None when there is none to keep)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return None  # absent, or a dangling symlink
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(0, "Is a directory", str(path))
    return read_file(path, CONFIG_LIMIT), stat.S_IMODE(info.st_mode)


def _new_version(
    folder: Path, files: Sequence[PlannedFile], carried: Sequence[tuple[Path, str]]
) -> Path:
    """A new version folder holding ``files`` and the ``carried`` (folder, name) entries."""
    version = folder / f"{VERSION_PREFIX}{_token()}"
    version.mkdir(FOLDER_MODE)
    try:
        os.chmod(version, FOLDER_MODE)
        create_files(version, [(planned.name, planned.data, planned.mode) for planned in files])
        for source, name in carried:
            os.link(source / name, version / name, follow_symlinks=False)
        fsync_directory(version)
    except BaseException:
        remove_tree(version)
        raise
    return version


def _replace_with_link(folder: Path, name: str) -> None:
    """Make ``folder/name`` the symlink into the current version, in one rename."""
    _swap_symlink(folder / name, link_target(name))


def _point_current(folder: Path, version: Path) -> None:
    _swap_symlink(folder / CURRENT, version.name)


def _swap_symlink(path: Path, target: str) -> None:
    """Make ``path`` a symlink to ``target`` in one rename, through a ``.<name>.tmp-*``."""
    temporary = path.with_name(f".{path.name}.tmp-{_token()}")
    os.symlink(target, temporary)
    try:
        os.rename(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


# --- what a killed commit leaves -------------------------------------------------------------


def clean_stale(folder: Path) -> list[str]:
    """Remove what an interrupted commit left in and beside ``folder``; the names removed.

    Version folders ``.nodehost-current`` does not name, ``.<name>.tmp-XXXXXXXX``
    entries (temporary files and symlinks), and ``.<folder>.staging-XXXXXXXX``
    folders beside it.  Call it under the parent folder's lock.
    """
    current = _current_version(folder)
    removed = []
    for entry in os.scandir(folder):
        if entry.name.startswith(VERSION_PREFIX) and folder / entry.name != current:
            if entry.is_dir(follow_symlinks=False):
                remove_tree(entry.path)
            else:  # a symlink is removed, never followed
                os.unlink(entry.path)
        elif TEMPORARY_NAME.match(entry.name) and not entry.is_dir(follow_symlinks=False):
            os.unlink(entry.path)
        else:
            continue
        removed.append(entry.name)
    return removed + _remove_staging(folder)


def _remove_staging(folder: Path) -> list[str]:
    prefix = f".{folder.name}.staging-"
    removed = []
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(folder.parent):
            staging = entry.name.startswith(prefix) and _TOKEN.fullmatch(entry.name, len(prefix))
            if staging and entry.is_dir(follow_symlinks=False):
                remove_tree(entry.path)
                removed.append(entry.name)
    return removed
