"""``nodehost.folderwatch``: files completed in a folder (closed after writing, or moved in),
reported once each through inotify; the folder going away ends the watch."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from nodehost.folderwatch import FolderGone, FolderWatch


def run(coroutine):  # type: ignore[no-untyped-def]
    return asyncio.run(asyncio.wait_for(coroutine, 10))


def test_a_file_is_reported_once_it_is_closed_not_while_it_is_written(tmp_path: Path) -> None:
    async def scenario() -> set[str]:
        async with FolderWatch(str(tmp_path)) as watch:
            with open(tmp_path / "big.tar", "wb") as stream:
                stream.write(b"part")
                stream.flush()
                waiting = asyncio.ensure_future(watch.changed())
                await asyncio.sleep(0)  # the loop reads the descriptor: nothing completed yet
                assert not waiting.done()
            return await waiting

    assert run(scenario()) == {"big.tar"}


def test_files_moved_in_are_reported_and_names_are_gathered_between_calls(tmp_path: Path) -> None:
    (tmp_path / "watched").mkdir()
    (tmp_path / "a.tar").write_bytes(b"a")
    (tmp_path / "b.tar").write_bytes(b"b")

    async def scenario() -> set[str]:
        async with FolderWatch(str(tmp_path / "watched")) as watch:
            os.rename(tmp_path / "a.tar", tmp_path / "watched" / "a.tar")
            os.rename(tmp_path / "b.tar", tmp_path / "watched" / "b.tar")
            found = await watch.changed()
            while len(found) < 2:
                found |= await watch.changed()
            return found

    assert run(scenario()) == {"a.tar", "b.tar"}


def test_the_folder_going_away_ends_the_watch(tmp_path: Path) -> None:
    folder = tmp_path / "gone"
    folder.mkdir()

    async def scenario() -> None:
        async with FolderWatch(str(folder)) as watch:
            folder.rmdir()
            await watch.changed()

    with pytest.raises(FolderGone):
        run(scenario())


def test_a_missing_folder_cannot_be_watched_and_is_named(tmp_path: Path) -> None:
    async def scenario() -> None:
        FolderWatch(str(tmp_path / "missing"))

    with pytest.raises(OSError) as raised:
        run(scenario())
    assert raised.value.filename == str(tmp_path / "missing")
    assert raised.value.strerror == "cannot watch the folder: No such file or directory"
