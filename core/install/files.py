"""The two files ``nodehost install`` writes: rendered, checked for local changes, written.

Every file nodehost writes here ends its comment header with a line
``# nodehost-install-sha256: <digest>``, the SHA-256 of the rest of the file.
A file whose digest still matches is nodehost's own and may be replaced; one
whose digest does not match (or that has none) was changed by someone else
and is replaced only when forced (:func:`write_owned_file`).

The environment file is in the syntax systemd's ``EnvironmentFile=`` and a
POSIX shell both read: one ``NAME="value"`` per line, ``\\``, ``"``, ``$`` and
`````` escaped with a backslash (:func:`environment_text`,
:func:`parse_environment`).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from nodehost import __version__
from nodehost.errors import RuntimeFailure
from nodehost.frozen import frozen

DIGEST_PREFIX = "# nodehost-install-sha256: "
_ESCAPED = re.compile(r'([\\"$`])')
_ASSIGNMENT = re.compile(r'^([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"$')


@frozen
class Written:
    """What :func:`write_owned_file` did: ``"created"``, ``"updated"`` or ``"unchanged"``."""

    path: str
    outcome: str


def packaged_unit() -> str:
    """The unit shipped with nodehost (``contrib/systemd/nodehost.service`` links to it)."""
    return resources.files("nodehost.install").joinpath("nodehost.service").read_text()


def unit_text(executable: str) -> str:
    """The packaged unit with ``ExecStart`` running ``executable``, marked as nodehost's."""
    lines = []
    for line in packaged_unit().splitlines():
        if line.startswith("ExecStart="):
            words = line.split()
            line = " ".join([f"ExecStart={executable}", *words[1:]])
        lines.append(line)
    header = f"# Written by 'nodehost install' (nodehost {__version__}); see the comment below."
    return with_digest(header + "\n" + "\n".join(lines) + "\n")


def environment_text(variables: Mapping[str, str]) -> str:
    """The environment file holding ``variables`` (names sorted), marked as nodehost's.

    Raises :class:`ValueError` for a value holding a line break (no file
    format keeps one on one line for both readers).
    """
    lines = [
        f"# Written by 'nodehost install' (nodehost {__version__}): the flags it was given,",
        "# as the NODEHOST_* variables 'nodehost start' reads (see 'nodehost start --help').",
        "# Run 'nodehost install' again to change them, or edit this file and pass --force",
        "# to the next install.",
    ]
    for name in sorted(variables):
        value = variables[name]
        if "\n" in value or "\r" in value:
            raise ValueError(f"{name}: a value cannot hold a line break")
        escaped = _ESCAPED.sub(r"\\\1", value)
        lines.append(f'{name}="{escaped}"')
    return with_digest("\n".join(lines) + "\n")


def parse_environment(text: str) -> dict[str, str]:
    """The variables of an environment file :func:`environment_text` wrote (comments skipped).

    Lines of another form (an operator's ``NAME=value``) are read as systemd
    reads an unquoted value: stripped, taken as is.
    """
    found: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        quoted = _ASSIGNMENT.match(line)
        if quoted:
            found[quoted.group(1)] = re.sub(r"\\(.)", r"\1", quoted.group(2))
        elif "=" in line:
            name, _, value = line.partition("=")
            found[name.strip()] = value.strip()
    return found


def unit_environment(text: str) -> dict[str, str]:
    """The ``Environment=NAME=value`` settings of a unit's text (the defaults it sets)."""
    found = {}
    for line in text.splitlines():
        if line.startswith("Environment="):
            name, _, value = line.removeprefix("Environment=").partition("=")
            found[name] = value
    return found


def with_digest(text: str) -> str:
    """``text`` with the digest line after its leading comment lines."""
    lines = text.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
    return "".join([*lines[:at], f"{DIGEST_PREFIX}{_digest(text)}\n", *lines[at:]])


def is_nodehosts(text: str) -> bool:
    """``text`` carries a digest line, and the digest of the rest still matches."""
    lines = text.splitlines(keepends=True)
    marks = [line for line in lines if line.startswith(DIGEST_PREFIX)]
    if len(marks) != 1:
        return False
    rest = "".join(line for line in lines if not line.startswith(DIGEST_PREFIX))
    return marks[0].removeprefix(DIGEST_PREFIX).strip() == _digest(rest)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def read_if_present(path: str) -> str | None:
    """``path``'s text, ``None`` if it does not exist; never through a symbolic link.

    Raises :class:`RuntimeFailure` naming ``path`` when it cannot be read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise RuntimeFailure(f"cannot read {path}: {error.strerror}") from None
    with os.fdopen(fd, encoding="utf-8", errors="replace") as stream:
        return stream.read()


def write_owned_file(path: str, text: str, mode: int, force: bool, keep_hint: str) -> Written:
    """Put ``text`` at ``path`` atomically unless it is there already.

    An existing file that is not nodehost's (:func:`is_nodehosts`) is replaced
    only with ``force``; otherwise :class:`RuntimeFailure` says so and how to
    keep the change (``keep_hint``).  A symbolic link at ``path`` is replaced, never followed;
    the temporary files of an earlier write that was killed are removed.
    """
    from nodehost.pki.atomic import make_directories, write_atomic

    current = read_if_present(path)
    if current == text:
        return Written(path, "unchanged")
    if current is not None and not force and not is_nodehosts(current):
        raise RuntimeFailure(
            f"{path} was changed since nodehost wrote it; {keep_hint}, "
            "or pass --force to overwrite it"
        )
    try:
        make_directories(Path(path).parent)
        _remove_temporaries(Path(path))
        write_atomic(Path(path), text.encode(), mode)
    except OSError as error:
        raise RuntimeFailure(f"cannot write {path}: {error.strerror or error}") from None
    return Written(path, "created" if current is None else "updated")


def _remove_temporaries(path: Path) -> None:
    """The ``.<name>.tmp-*`` files :func:`nodehost.pki.atomic.write_atomic` left when killed."""
    for stray in path.parent.glob(f".{path.name}.tmp-*"):
        stray.unlink(missing_ok=True)
