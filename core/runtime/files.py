"""Writing a plan's files: atomically, with their modes, before the component runs."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from nodehost.component import FileSpec


class FileWriteError(OSError):
    """A plan file could not be written; the message names the file and the cause."""


def write_plan_files(files: Iterable[FileSpec]) -> None:
    """Write a plan's files atomically with their modes (folders made as needed).

    Raises :class:`FileWriteError` ("cannot write <path>: <cause>") at the first failure.
    """
    from nodehost.pki.atomic import make_directories, write_atomic

    for spec in files:
        path = Path(spec.path)
        try:
            make_directories(path.parent)
            write_atomic(path, spec.content, spec.mode)
        except OSError as error:
            raise FileWriteError(f"cannot write {spec.path}: {error.strerror or error}") from None
