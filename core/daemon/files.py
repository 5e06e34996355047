"""Writing a plan's files: atomically, with their modes, before the component runs."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from nodehost.component import FileSpec


class FileWriteError(OSError):
    """A plan file could not be written; the message names the file and the cause."""


def write_plan_files(files: Iterable[FileSpec], state_dir: str | None = None) -> None:
    """Write a plan's files atomically with their modes (folders made as needed).

    A folder inside ``state_dir`` is made and checked without following a
    symlink (:func:`nodehost.daemon.pidfiles.make_state_folder`): root writes
    nothing through a symlink or into a folder another user could change.
    Raises :class:`FileWriteError` ("cannot write <path>: <cause>") at the first failure.
    """
    from nodehost.daemon.pidfiles import UnsafeStateDirectory, make_state_folder
    from nodehost.pki.atomic import make_directories, write_atomic

    for spec in files:
        path = Path(spec.path)
        try:
            if state_dir is None or not make_state_folder(state_dir, path.parent):
                make_directories(path.parent)
            write_atomic(path, spec.content, spec.mode)
        except UnsafeStateDirectory as error:
            raise FileWriteError(f"cannot write {spec.path}: {error}") from None
        except OSError as error:
            raise FileWriteError(f"cannot write {spec.path}: {error.strerror or error}") from None
