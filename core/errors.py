"""The errors a user can see, each carrying its exit code and rendering itself.

One exception type per kind of user-visible failure, rendered in one place
(:func:`nodehost.cli.main`).  Code that detects a user's mistake raises one of
these; it never prints and never calls ``sys.exit`` itself.

Exit codes (:data:`EXIT_CODES`, rendered into the documentation's reference):
``0`` success; ``1`` runtime failure (:class:`RuntimeFailure`,
:class:`PluginError`, :class:`PKIError`); ``2`` usage error
(:class:`UsageError`); ``255`` invalid configuration (:class:`ConfigError`,
:class:`ConfigInvalid`, :class:`InvalidSetting`), as Origin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.pluginhost.records import Problem

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INVALID_CONFIG = 255

#: Exit code -> what it means (reStructuredText), for every command; listed in
#: :doc:`/reference/exitcodes`.
#:
#: :meta hide-value:
EXIT_CODES: dict[int, str] = {
    EXIT_OK: "success",
    EXIT_FAILURE: (
        "runtime failure: a component failed past its restart budget, a program is missing, "
        "a plugin failed under ``--strict-plugins``, certificate material is unusable, the "
        "state directory is unusable or unsafe; a component's ``plan()`` that raises (a bug "
        "in its plugin, not a config problem: ``component X (plugin 'x' (dist 1.0)) failed "
        "to plan: ...``) -- for ``config validate`` too, which plans every selected component"
    ),
    EXIT_USAGE: "usage error: a flag or argument is wrong (the message names it)",
    EXIT_INVALID_CONFIG: (
        "invalid configuration: ``Invalid NodeConfig <file>`` then one line per problem, "
        "``<field.path>: <message>`` indented by two spaces, or a config file that cannot "
        "be read or parsed (missing, a directory, a FIFO, too large) -- for "
        "``config validate``, ``config show`` and ``start`` alike"
    ),
}


class NodehostError(Exception):
    """Base of every error shown to a user as text (never as a traceback)."""

    exit_code = EXIT_FAILURE

    def render(self) -> str:
        """Return the complete text printed to stderr for this error."""
        return f"error: {self}"


class UsageError(NodehostError):
    """A flag, argument or environment variable is wrong (exit 2).

    ``param`` names the offending flag (``--components``) when there is one.
    """

    exit_code = EXIT_USAGE

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param

    def render(self) -> str:
        if self.param and not str(self).startswith(self.param):
            return f"error: invalid value for {self.param}: {self}"
        return f"error: {self}"


class ConfigError(NodehostError):
    """A configuration file cannot be read or parsed at all (exit 255).

    The message names the file and, where known, the line and column.
    """

    exit_code = EXIT_INVALID_CONFIG


class ConfigInvalid(NodehostError):
    """A configuration parsed but failed validation (exit 255).

    Renders as Origin does: ``Invalid NodeConfig <file>`` followed by one line per
    error, ``<field.path>: <message>`` indented by two spaces, all of them at once.
    """

    exit_code = EXIT_INVALID_CONFIG

    def __init__(self, source: str, errors: Sequence[Problem]) -> None:
        super().__init__(f"Invalid NodeConfig {source}")
        self.source = source
        self.errors = list(errors)

    def render(self) -> str:
        lines = [f"Invalid NodeConfig {self.source}"]
        lines.extend(f"  {problem.render()}" for problem in self.errors)
        return "\n".join(lines).replace("\x00", "\\x00")  # a NUL never reaches the terminal


class InvalidSetting(NodehostError):
    """A component, planning, found a problem in the config (exit 255).

    Raise it from ``plan()`` for what is knowable from the config alone (a bad
    argument, an unknown name); the core lists ``problems`` under ``Invalid
    NodeConfig <file>`` for ``start``, ``--dry-run`` and ``config validate``
    alike.  A problem of the host (a missing program, an unwritable folder)
    stays a :class:`RuntimeFailure`.
    """

    exit_code = EXIT_INVALID_CONFIG

    def __init__(self, *problems: Problem) -> None:
        super().__init__("; ".join(problem.render() for problem in problems))
        self.problems = list(problems)


class PluginError(NodehostError):
    """A plugin could not be loaded, clashes with another, or misbehaved (exit 1)."""


class RuntimeFailure(NodehostError):
    """A component failed past its restart budget, or a prerequisite is missing (exit 1)."""


class PKIError(NodehostError):
    """Certificate or key material is unusable, or would be overwritten (exit 1)."""
