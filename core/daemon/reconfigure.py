"""A new configuration for a running host: validated, written, applied, rolled back if it breaks.

Both ways a running node takes a new configuration go through
:meth:`ConfigApplier.apply`: SIGHUP (``systemctl reload``) re-reads the node's
config file, and a task component hands the host new content for it
(:meth:`nodehost.component.TaskContext.apply_config`; the ``bootstrap``
component follows its config map this way).  One apply runs at a time; the
next waits.  An apply of content equal to the running configuration is
``unchanged`` and does nothing.  Otherwise:

1. **validate** -- the content is written beside the config file as
   ``.<name>.candidate`` (0600, removed afterwards, so relative paths resolve
   as in the real file) and resolved, validated and planned exactly as
   ``nodehost start`` does (the :class:`Replanner` the CLI gives the host).
   Any error -- every validation problem, or a plan that cannot be made --
   **rejects** it: nothing is written, nothing restarts;
2. **write** -- the previous content goes to ``<file>.prev``, then the new
   content to the file, each atomically with the file's mode;
3. **restart** -- the components whose plan changed (:func:`changed_components`:
   their files, arguments, environment, probe, settings) get their new plan
   (:meth:`~nodehost.daemon.supervisor.ComponentSupervisor.replan`), in start
   order, each once the changed components it starts after are ready again;
   the others keep running;
4. **wait** -- until every restarted component, and every component that was
   ready before the apply, is ready: at most ``rollback_after`` seconds.  A
   restarted component that fails past its restart budget ends the wait at
   once (it does not fail the node);
5. **roll back** otherwise -- the previous content back in the file (the
   failed one kept as ``<file>.rolled-back``), the same components restarted
   with their previous plans, and the apply reported **rolled back** with the
   components that were not ready and why (each once).  A file that changed
   after this apply wrote it (an operator's newer edit) is not overwritten:
   it stays for the next apply (the SIGHUP that follows the edit) to read.  A
   rollback that cannot write the file, or after which the components are
   still not ready, is reported as **rollback failed** with those reasons.

The configuration **generation** starts at 1 and grows by one each time the
running configuration changes (an apply, a rollback).  Every result but
``unchanged`` is the *last apply* in ``/status`` (``configuration``) and in
``/metrics``, and one log line (``config applied``, ``config rejected`` with
every problem, ``config rolled back``, ``config rollback failed``).  Under
systemd the apply is framed by ``RELOADING=1`` and ``READY=1`` once the node
has been ready.
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from nodehost.errors import ConfigInvalid, NodehostError
from nodehost.fileread import FileState, file_state
from nodehost.frozen import frozen

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.daemon.host import Host
    from nodehost.plan import Plan

APPLIED = "applied"
REJECTED = "rejected"
ROLLED_BACK = "rolled back"
ROLLBACK_FAILED = "rollback failed"
UNCHANGED = "unchanged"
#: The results that count as an apply (``unchanged`` is not one).
RESULTS = (APPLIED, REJECTED, ROLLED_BACK, ROLLBACK_FAILED)
CONFIG_MODE = 0o600
CANNOT_REREAD = "this host cannot re-read its configuration"


@frozen
class ApplyResult:
    """How one apply ended.

    ``result``     one of ``applied``, ``rejected``, ``rolled back``, ``rollback failed``,
                   ``unchanged``;
    ``origin``     who asked (``SIGHUP``, ``config map openshift-node/x ...``);
    ``generation`` the generation running afterwards;
    ``at``         Unix time the apply ended;
    ``problems``   why it was rejected (every problem) or rolled back, then what went
                   wrong in the rollback, each once;
    ``restarted``  the components restarted for it (start order);
    ``warnings``   the new configuration's validation warnings.
    """

    result: str
    origin: str
    generation: int
    at: float
    problems: tuple[str, ...] = ()
    restarted: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with ``seconds_ago`` from now."""
        return {
            "result": self.result,
            "origin": self.origin,
            "generation": self.generation,
            "at": round(self.at, 3),
            "seconds_ago": round(max(0.0, time.time() - self.at), 3),
            "problems": list(self.problems),
            "restarted": list(self.restarted),
            "warnings": list(self.warnings),
        }


class Replanner(Protocol):
    """Builds the plan of a configuration file as ``nodehost start`` does (the CLI's)."""

    def __call__(self, path: str, source: str) -> tuple[Plan, tuple[str, ...]]:
        """Resolve, validate and plan the file at ``path`` as if it were ``source``.

        Returns the plan and the validation warnings (rendered lines).  Raises
        :class:`~nodehost.errors.ConfigInvalid` with every problem, or another
        :class:`~nodehost.errors.NodehostError` when the file cannot be read or
        planned.  Blocking: the host calls it in a worker thread.
        """
        ...


def changed_components(old: Plan, new: Plan) -> list[str]:
    """The components whose planned value differs between ``old`` and ``new``, in start order.

    Plans compare as values (files with their content, argv, environment,
    probe, a task's callable); see :class:`~nodehost.component.TaskSpec`.
    Raises :class:`ValueError` when the two plans do not run the same components.
    """
    names = [component.name for component in new.components]
    if sorted(names) != sorted(component.name for component in old.components):
        raise ValueError("the new configuration changes which components run; restart nodehost")
    return [name for name in names if old.get(name) != new.get(name)]


class ConfigApplier:
    """Runs the flow of the module docstring against one :class:`~nodehost.daemon.host.Host`."""

    def __init__(
        self, host: Host, replanner: Replanner | None, rollback_after: float, log: Any
    ) -> None:
        self.host = host
        self.replanner = replanner
        self.rollback_after = rollback_after
        self.log = log
        self.path = Path(host.plan.config_source)
        self.content = _read_or_none(self.path)
        self.written: FileState = None
        self.generation = 1
        self.last: ApplyResult | None = None
        self.counts = dict.fromkeys(RESULTS, 0)
        self.absorbing: frozenset[str] = frozenset()
        self._lock = asyncio.Lock()

    def absorbs(self, name: str) -> bool:
        """Whether a failure of component ``name`` ends an apply's wait instead of the node."""
        return name in self.absorbing

    def status(self) -> dict[str, Any]:
        """``/status``'s ``configuration``: the file, generation, last apply, counts."""
        return {
            "file": str(self.path),
            "generation": self.generation,
            "reload": self.replanner is not None and self.content is not None,
            "applying": self._lock.locked(),
            "rollback_after_seconds": self.rollback_after,
            "last_apply": None if self.last is None else self.last.as_dict(),
            "applies": {result.replace(" ", "_"): n for result, n in self.counts.items()},
        }

    async def apply(self, content: bytes | None, origin: str) -> ApplyResult:
        """Apply ``content`` (None: the config file as it is now) as the module docstring says.

        Never raises for a bad configuration: the result says what happened.
        """
        async with self._lock:
            reloading = self.host.notify_reloading(f"applying a new configuration ({origin})")
            try:
                result = await self._apply(content, origin)
            finally:
                if reloading:
                    self.host.notify_reloaded()
            self._record(result)
            return result

    async def follow_host(self, origin: str) -> ApplyResult:
        """Plan the running configuration again because the host changed (its node IP).

        Nothing is written and nothing rolls back (the old plan's host is gone):
        the new plan is adopted, the components whose plan changed are
        restarted in start order, and the result is ``applied`` (``problems``:
        those not ready in time), ``unchanged`` (nothing changed, nothing
        restarted) or ``rejected`` (the configuration no longer plans here; the
        old plan keeps running).  Not counted as an apply; the caller logs it.
        """
        async with self._lock:
            if self.replanner is None or self.content is None:
                return self._result(REJECTED, origin, (CANNOT_REREAD,))
            try:
                plan, _ = await self._validate(self.content)
                changed = changed_components(self.host.plan, plan)
            except Exception as error:  # a plugin's bug too: said, never a crash
                return self._result(REJECTED, origin, self._problems(error))
            self.host.plan = plan
            if not changed:
                return self._result(UNCHANGED, origin)
            restarted, problems = await self._restart(plan, changed, (), absorb=False)
            return self._result(APPLIED, origin, tuple(problems), tuple(restarted))

    # --- the flow ---------------------------------------------------------------------

    async def _apply(self, content: bytes | None, origin: str) -> ApplyResult:
        if self.replanner is None or self.content is None:
            return self._result(REJECTED, origin, (CANNOT_REREAD,))
        if content is None:
            try:
                content = _read_config(self.path)
            except OSError as error:
                why = await asyncio.to_thread(_unreadable, self.path, error)
                return self._result(REJECTED, origin, (why,))
        if content == self.content:
            return self._result(UNCHANGED, origin)
        try:
            plan, warnings = await self._validate(content)
            changed = changed_components(self.host.plan, plan)
            self._write(content)
        except Exception as error:  # a plugin's bug too: rejected and said, never a crash
            return self._result(REJECTED, origin, self._problems(error))
        return await self._switch(plan, content, changed, origin, warnings)

    async def _validate(self, content: bytes) -> tuple[Plan, tuple[str, ...]]:
        """The plan of ``content``, from a candidate file beside the config file."""
        from nodehost.pki.atomic import write_atomic

        assert self.replanner is not None
        candidate = self._candidate()
        try:
            write_atomic(candidate, content, CONFIG_MODE, sync_directory=False)
            return await asyncio.to_thread(self.replanner, str(candidate), str(self.path))
        finally:
            candidate.unlink(missing_ok=True)

    def _candidate(self) -> Path:
        return self.path.with_name(f".{self.path.name}.candidate")

    def _write(self, content: bytes) -> None:
        """``<file>.prev`` = the running content, then the file = ``content``; both atomic."""
        from nodehost.pki.atomic import write_atomic

        assert self.content is not None
        mode = _mode(self.path)
        write_atomic(_beside(self.path, "prev"), self.content, mode)
        _write_config(self.path, content, mode)
        self.written = file_state(str(self.path))

    async def _switch(
        self, plan: Plan, content: bytes, changed: list[str], origin: str, warnings: tuple[str, ...]
    ) -> ApplyResult:
        """Run ``plan`` (steps 3-5), rolling back (step 6) if it does not become ready."""
        old_plan, previous = self.host.plan, self.content
        assert previous is not None
        ready_before = [s.name for s in self.host.supervisors.values() if s.ready]
        self._adopt(plan, content)
        restarted, problems = await self._restart(plan, changed, ready_before, absorb=True)
        if not problems:
            return self._result(APPLIED, origin, (), tuple(restarted), warnings)
        self.log.warning("new configuration not ready; rolling back", restarted=restarted)
        failures = await self._roll_back(old_plan, previous, content, restarted)
        result = ROLLBACK_FAILED if failures else ROLLED_BACK
        lines = tuple(dict.fromkeys([*problems, *failures]))
        return self._result(result, origin, lines, tuple(restarted), warnings)

    def _adopt(self, plan: Plan, content: bytes) -> None:
        self.host.plan = plan
        self.content = content
        self.generation += 1

    async def _restart(
        self, plan: Plan, changed: list[str], also_ready: Iterable[str], *, absorb: bool
    ) -> tuple[list[str], list[str]]:
        """Give ``changed`` their plans in start order; (restarted, why not ready: [] if all are).

        With ``absorb`` a restarted component's failure ends the wait instead of the node.
        """
        deadline = asyncio.get_running_loop().time() + self.rollback_after
        restarted: list[str] = []
        try:
            for name in changed:
                waits = [n for n in plan.get(name).after if n in restarted]
                if not await self._ready_by(waits, deadline):
                    return restarted, self._unready(waits)
                if absorb:
                    self.absorbing |= {name}
                self.host.supervisors[name].replan(plan.get(name))
                restarted.append(name)
            wanted = list(dict.fromkeys([*restarted, *also_ready]))
            if not await self._ready_by(wanted, deadline):
                return restarted, self._unready(wanted)
            return restarted, []
        finally:
            self.absorbing = frozenset()

    async def _ready_by(self, names: list[str], deadline: float) -> bool:
        """Wait until every one of ``names`` is ready (True), one failed or the deadline passed."""
        supervisors = [self.host.supervisors[name] for name in names]

        def settled() -> bool:
            return all(s.ready for s in supervisors) or any(s.failure for s in supervisors)

        remaining = deadline - asyncio.get_running_loop().time()
        await self.host.wait_until(settled, remaining)
        return all(s.ready for s in supervisors)

    def _unready(self, names: Iterable[str]) -> list[str]:
        """One line per component of ``names`` that is not ready: failed, or not in time."""
        lines = []
        for name in names:
            supervisor = self.host.supervisors[name]
            if supervisor.failure:
                lines.append(f"{name} failed: {supervisor.failure}")
            elif not supervisor.ready:
                lines.append(
                    f"{name} not ready within {self.rollback_after:g}s: {supervisor.reason}"
                )
        return lines

    async def _roll_back(
        self, old_plan: Plan, previous: bytes, failed: bytes, restarted: list[str]
    ) -> list[str]:
        """The previous plans back (``restarted`` restarted with them) and the previous
        content back in the file; what went wrong ([] when nothing did).

        The file is restored only if it is still what this apply wrote: a file changed
        since (an operator's newer edit) is left as it is, for the next apply to read.
        """
        failures = self._restore(previous, failed)
        self._adopt(old_plan, previous)
        _, problems = await self._restart(old_plan, restarted, (), absorb=False)
        return [*failures, *(f"after the rollback: {line}" for line in problems)]

    def _restore(self, previous: bytes, failed: bytes) -> list[str]:
        """``previous`` back in the file, the failed content kept as ``<file>.rolled-back``;
        the lines that say why the file does not hold ``previous`` now ([] if it does)."""
        from nodehost.pki.atomic import write_atomic

        if file_state(str(self.path)) != self.written or _read_or_none(self.path) != failed:
            self.log.warning(
                "config file changed during the apply; left as it is for the next apply",
                file=str(self.path),
            )
            return []
        mode = _mode(self.path)
        try:
            write_atomic(_beside(self.path, "rolled-back"), failed, mode)
            _write_config(self.path, previous, mode)
        except OSError as error:
            return [
                f"cannot restore the previous config file {self.path}: {_why(error)}; "
                "it still holds the configuration that was rolled back"
            ]
        return []

    # --- reporting ----------------------------------------------------------------------

    def _problems(self, error: Exception) -> tuple[str, ...]:
        """The lines that say why a candidate was refused (every validation problem)."""
        if isinstance(error, ConfigInvalid):
            return tuple(problem.render() for problem in error.errors)
        if isinstance(error, OSError):
            return (f"cannot write {error.filename or self.path}: {_why(error)}",)
        if not isinstance(error, NodehostError | ValueError):
            return (f"internal error: {type(error).__name__}: {error}",)
        return (str(error).replace(str(self._candidate()), str(self.path)),)

    def _result(
        self,
        result: str,
        origin: str,
        problems: tuple[str, ...] = (),
        restarted: tuple[str, ...] = (),
        warnings: tuple[str, ...] = (),
    ) -> ApplyResult:
        return ApplyResult(
            result, origin, self.generation, time.time(), problems, restarted, warnings
        )

    def _record(self, result: ApplyResult) -> None:
        """Count, keep as the last apply, and log ``result`` in one line."""
        fields = {"origin": result.origin, "generation": result.generation, "file": str(self.path)}
        if result.result == UNCHANGED:
            self.log.info("config unchanged", **fields)
            return
        self.last = result
        self.counts[result.result] += 1
        if result.warnings:
            fields["warnings"] = list(result.warnings)
        if result.result == APPLIED:
            self.log.info("config applied", restarted=list(result.restarted), **fields)
        else:
            self.log.error(
                f"config {result.result}",
                problems=list(result.problems),
                restarted=list(result.restarted),
                **fields,
            )


def _beside(path: Path, suffix: str) -> Path:
    return path.with_name(f"{path.name}.{suffix}")


def _mode(path: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return CONFIG_MODE


def _why(error: OSError) -> str:
    return error.strerror or str(error)


def _read_config(path: Path) -> bytes:
    """The config file's bytes, read as every config file is (bounded: ``read_file``)."""
    from nodehost.fileread import CONFIG_LIMIT, read_file

    return read_file(path, CONFIG_LIMIT)


def _unreadable(path: Path, error: OSError) -> str:
    """Why the config file cannot be read, as loading it words it: the same line for a
    file that is too large (or unreadable) whether SIGHUP or a config map brought it."""
    from nodehost.config.load import read_config_file
    from nodehost.errors import ConfigError

    try:
        read_config_file(str(path))
    except ConfigError as refused:
        return str(refused)
    return f"cannot read {path}: {_why(error)}"


def _read_or_none(path: Path) -> bytes | None:
    try:
        return _read_config(path)
    except OSError:
        return None


def _write_config(path: Path, content: bytes, mode: int) -> None:
    """``content`` into the config file, atomically; in a versioned node folder (a
    bootstrapped one, :mod:`nodehost.pki.versioned`) as a new version of that file."""
    from nodehost.pki.atomic import write_atomic
    from nodehost.pki.commit import PlannedFile
    from nodehost.pki.versioned import commit_versioned, is_managed

    if is_managed(path.parent, path.name):
        commit_versioned(path.parent, [PlannedFile(path.name, content, mode)])
    else:
        write_atomic(path, content, mode)
