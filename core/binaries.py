"""Finding the programs components run: overrides, ``PATH``, or stand-ins.

A component names its program (``ProcessSpec.argv[0]``, e.g. ``kubelet``); the
core resolves it, in order:

1. ``--binary NAME=PATH`` (the user's explicit choice);
2. with ``--standins=always``, the program's stand-in: the one its component's
   record names (``ComponentRecord.standins``);
3. ``NAME`` on ``PATH``;
4. with ``--standins=missing``, the stand-in for a program not found on ``PATH``.

A program that cannot be found is a :class:`~nodehost.errors.RuntimeFailure`
at plan time that says what to do, never a crash loop.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Literal

from nodehost.errors import RuntimeFailure, UsageError
from nodehost.frozen import frozen

StandinMode = Literal["never", "missing", "always"]
STANDIN_MODES: tuple[str, ...] = ("never", "missing", "always")


@frozen
class ResolvedProgram:
    """Where a program was found; ``standin`` is true for a ``nodehost.testing`` stand-in."""

    path: str
    standin: bool = False


def parse_binary_overrides(values: tuple[str, ...]) -> dict[str, str]:
    """``("kubelet=/opt/bin/kubelet", ...)`` -> mapping; ``UsageError`` naming ``--binary``."""
    overrides: dict[str, str] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"{value!r} is not NAME=PATH", "--binary")
        overrides[name] = path
    return overrides


def check_overrides_used(overrides: Mapping[str, str], programs: Iterable[str]) -> None:
    """``UsageError`` (``--binary``) for an override naming a program no planned component
    runs -- a typo would otherwise be ignored -- with the closest program named."""
    known = sorted(set(programs))
    for name in overrides:
        if name in known:
            continue
        from nodehost.suggest import closest  # difflib: for a typo only

        suggestion = closest(name, known)
        hint = f" (did you mean {suggestion!r}?)" if suggestion else ""
        runs = ", ".join(known) if known else "none"
        raise UsageError(
            f"no selected component runs a program named {name!r}{hint}; "
            f"the selected components run: {runs}",
            "--binary",
        )


def resolve_program(
    component: str,
    program: str,
    *,
    overrides: Mapping[str, str],
    standins: StandinMode = "never",
    standin_scripts: Mapping[str, str] | None = None,
) -> ResolvedProgram:
    """Resolve ``program`` for ``component`` as the module docstring says.

    ``standin_scripts`` maps program names to the stand-in the component's
    record names (a console script, or an absolute path).
    """
    if program in overrides:
        return ResolvedProgram(_check_executable(component, overrides[program]))
    if os.sep in program:
        return ResolvedProgram(_check_executable(component, program))
    standin = _standin_path(program, standin_scripts or {}) if standins != "never" else None
    if standin and standins == "always":
        return ResolvedProgram(standin, standin=True)
    found = which(program)
    if found:
        return ResolvedProgram(found)
    if standin:
        return ResolvedProgram(standin, standin=True)
    raise RuntimeFailure(
        f"component {component}: program {program!r} was not found on PATH; install it, "
        f"or give its path with --binary {program}=PATH"
        + ("" if standins != "never" else ", or use --standins=missing for a CI smoke run")
    )


def _check_executable(component: str, path: str) -> str:
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise RuntimeFailure(f"component {component}: {path} is not an executable file")
    return os.path.abspath(path)


def _standin_path(program: str, scripts: Mapping[str, str]) -> str | None:
    """The stand-in's console script: beside this interpreter (a venv), else on ``PATH``."""
    import sys

    script = scripts.get(program)
    if not script:
        return None
    if os.path.isabs(script):
        return script if os.access(script, os.X_OK) else None
    beside = os.path.join(os.path.dirname(sys.executable), script)
    if os.access(beside, os.X_OK):
        return beside
    return which(script)


def which(program: str, path: str | None = None) -> str | None:
    """What ``shutil.which(program, path=path)`` answers on Linux, without importing ``shutil``.

    ``shutil`` imports ``bz2``, ``lzma`` and ``zlib`` as it loads (0.4 MiB of a running
    node, which compresses nothing).  A ``program`` with a folder in it is returned if it
    is an executable file; a bare name is looked up in each folder of ``path`` (default:
    ``$PATH``, else the system's default search path) in order, duplicates skipped, and the
    first executable file found is returned as joined (relative if the folder is).  None
    when there is none.
    """
    if os.path.dirname(program):
        return program if _executable_file(program) else None
    if path is None:
        path = os.environ.get("PATH")
        if path is None:
            try:
                path = os.confstr("CS_PATH")
            except (AttributeError, ValueError):
                path = os.defpath
    if not path:
        return None
    for folder in dict.fromkeys(path.split(os.pathsep)):
        candidate = os.path.join(folder, program)
        if _executable_file(candidate):
            return candidate
    return None


def _executable_file(path: str) -> bool:
    try:
        return os.access(path, os.F_OK | os.X_OK) and not os.path.isdir(path)
    except ValueError:  # a NUL byte: no such file, as shutil.which answers
        return False
