"""The signer's serial file: the last serial number issued, as hexadecimal text.

Format (Origin's ``SerialFileGenerator``, readable by ``openssl ca``): upper-case
hex padded to an even number of digits (``0A``).  A new CA writes ``00``; a
value below 1 counts as 1 (the CA certificate itself is serial 1), so the first
certificate a new CA issues is serial 2 and, after N issued certificates, the
file holds N + 1: one more than the number of leaf certificates, i.e. the
number of certificates the CA has signed including its own.

Every update happens under an exclusive ``flock`` on ``<serial file>.lock``
(created next to it, never deleted), so processes sharing a CA never issue the
same serial.  The new value is written atomically and keeps the file's mode.
Unlike Origin, text that is not a hex number is an error rather than "1":
silently restarting the count would reissue serials.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from nodehost.errors import PKIError
from nodehost.fileread import STATE_LIMIT, read_file
from nodehost.pki.atomic import write_atomic

#: The content of a new CA's serial file.
INITIAL_SERIAL_TEXT = b"00"
SERIAL_FILE_MODE = 0o640
LOCK_SUFFIX = ".lock"


def format_serial(serial: int) -> bytes:
    """``10`` -> ``b"0A"``: upper-case hex, left-padded to an even length."""
    text = f"{serial:X}"
    if len(text) % 2:
        text = "0" + text
    return text.encode("ascii")


def parse_serial(data: bytes, source: str) -> int:
    """The number in a serial file's ``data`` (values below 1 count as 1)."""
    text = data.decode("ascii", errors="replace").strip()
    try:
        value = int(text, 16)
    except ValueError:
        raise PKIError(
            f"serial file {source} does not hold a hexadecimal number: {text[:40]!r}"
        ) from None
    return max(value, 1)


def read_serial(path: Path) -> int:
    """The last serial recorded in ``path``; :class:`PKIError` if unreadable."""
    try:
        data = read_file(path, STATE_LIMIT)
    except OSError as error:
        raise PKIError(f"cannot read serial file {path}: {error.strerror}") from None
    return parse_serial(data, str(path))


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    lock_path = path.with_name(path.name + LOCK_SUFFIX)
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, SERIAL_FILE_MODE)
    except OSError as error:
        raise PKIError(
            f"cannot lock serial file {path}: cannot open {lock_path}: {error.strerror}"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def reserve_serials(path: Path, count: int = 1) -> range:
    """Reserve the next ``count`` serial numbers of the CA whose serial file is ``path``.

    Read, increment and atomic write happen under the exclusive lock, so
    concurrent callers (threads or processes) get distinct, increasing numbers.
    Raises :class:`PKIError` if the file is missing, unreadable, not hex, or
    cannot be replaced.
    """
    path = Path(path)
    with _locked(path):
        first = read_serial(path) + 1
        last = first + count - 1
        try:
            mode = path.stat().st_mode & 0o7777
            write_atomic(path, format_serial(last), mode)
        except OSError as error:
            raise PKIError(f"cannot update serial file {path}: {error.strerror}") from None
    return range(first, last + 1)
