"""Exec mode (Origin's ``start node`` with only the kubelet): become the component's program.

When exactly one component is selected and its :class:`ProcessSpec` has
``exec_allowed`` (and ``--no-exec`` was not given), the CLI calls
:func:`exec_single`: the component's files are written, then nodehost replaces
itself with the program.  The environment is passed on unchanged, including
``NOTIFY_SOCKET``: the program is now the service's main process and talks to
systemd itself.
"""

from __future__ import annotations

import os
from typing import NoReturn

from nodehost.component import ProcessSpec
from nodehost.daemon.files import FileWriteError, write_plan_files
from nodehost.errors import RuntimeFailure
from nodehost.plan import PlannedComponent


def can_exec(component: PlannedComponent) -> bool:
    """True if ``component`` runs a process that allows exec mode."""
    run = component.plan.run
    return isinstance(run, ProcessSpec) and run.exec_allowed


def exec_single(component: PlannedComponent, state_dir: str | None = None) -> NoReturn:
    """Write ``component``'s files and replace this process with its program.

    Raises :class:`RuntimeFailure` (naming the component and the cause) if the
    component cannot be exec'd, a file cannot be written, or ``execvpe`` fails.
    """
    run = component.plan.run
    if not isinstance(run, ProcessSpec) or not run.exec_allowed:
        raise RuntimeFailure(f"component {component.name} cannot replace nodehost (exec mode)")
    try:
        write_plan_files(component.plan.files, state_dir)
    except FileWriteError as error:
        raise RuntimeFailure(f"component {component.name}: {error}") from None
    environment = {**os.environ, **run.env}
    try:
        if run.cwd is not None:
            os.chdir(run.cwd)
        os.execvpe(run.argv[0], list(run.argv), environment)
    except OSError as error:
        raise RuntimeFailure(
            f"component {component.name}: cannot execute {run.argv[0]}: {error.strerror or error}"
        ) from None
