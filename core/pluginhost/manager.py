"""The plugin manager: loads built-in and third-party plugins, and the typed hook facade.

Core code never touches ``pm.hook``; it calls :class:`Hooks`, which has one
method per hook and calls implementations one at a time (last registered
first, honouring ``tryfirst``/``trylast``) so that a failure can name the plugin
behind it.  Hook wrappers are therefore not supported.

Loading (:meth:`PluginHost.load`), in order:

1. blocked names (``--disable-plugin``, ``NODEHOST_DISABLE_PLUGINS=a,b``) are
   set before anything is imported, so a disabled plugin is never imported;
2. the built-ins of :data:`BUILTIN_PLUGINS` are imported and registered (a
   broken built-in is a bug and raises);
3. unless switched off (``--no-plugins``, ``NODEHOST_NO_PLUGINS=1``), every
   entry point of group ``nodehost`` is loaded one at a time.

A third-party plugin fails alone: an import error, an unknown hook, a name
clash (:mod:`nodehost.pluginhost.inventory`) or an exception from any of its hooks
unregisters that plugin only, records it (entry point, distribution, version,
hook, error: :meth:`PluginInfo.failure_line`) and logs it as one line -- with
the traceback at debug verbosity (``-v 4``); under ``--strict-plugins`` /
``NODEHOST_STRICT_PLUGINS=1`` the failure raises :class:`PluginError`
instead.  A built-in that fails is a bug and raises.
"""

from __future__ import annotations

import importlib
import inspect
import os
import time
import types
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

import pluggy

from nodehost import PROJECT_NAME
from nodehost.errors import PluginError
from nodehost.frozen import frozen

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.check import Check, CheckContext
    from nodehost.config.schema import NodeConfig
    from nodehost.options import StartOptions
    from nodehost.pluginhost.entrypoints import EntryPoint
    from nodehost.pluginhost.records import (
        ApiRoute,
        ComponentRecord,
        NetworkProviderRecord,
        OptionRecord,
        Problem,
        ValidationScope,
    )

#: Built-in plugins, loaded by module name exactly as entry points are.
BUILTIN_PLUGINS: tuple[str, ...] = (
    "nodehost.plugins.kubelet",
    "nodehost.plugins.sdn",
    "nodehost.plugins.proxy",
    "nodehost.plugins.dns",
    "nodehost.plugins.bootstrap",
    "nodehost.plugins.runtime",
    "nodehost.plugins.localcluster",
    "nodehost.plugins.apilb",
)

ENTRY_POINT_GROUP = PROJECT_NAME
ENV_DISABLE = "NODEHOST_DISABLE_PLUGINS"
ENV_NO_PLUGINS = "NODEHOST_NO_PLUGINS"
ENV_STRICT = "NODEHOST_STRICT_PLUGINS"

T = TypeVar("T")


class Named(Protocol):
    """What :func:`index_by_name` needs of a record: a name and its aliases."""

    @property
    def name(self) -> str: ...

    @property
    def aliases(self) -> tuple[str, ...]: ...


N = TypeVar("N", bound=Named)


_TRUE = ("1", "true", "t", "yes", "y", "on")
_FALSE = ("", "0", "false", "f", "no", "n", "off")


def _env_flag(name: str) -> bool:
    """Environment variable ``name`` as a boolean (the values click accepts for a flag's
    variable); anything else is a ``UsageError`` naming it, never silently false."""
    from nodehost.errors import UsageError

    value = os.environ.get(name, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise UsageError(
        f"{os.environ[name]!r} is not a valid boolean; recognized values: "
        f"{', '.join(sorted({*_TRUE, *_FALSE} - {''}))} (or empty)",
        name,
    )


def _env_list(name: str) -> frozenset[str]:
    return frozenset(item.strip() for item in os.environ.get(name, "").split(",") if item.strip())


@frozen
class LoadOptions:
    """How to load plugins; :meth:`from_environment` merges CLI flags with the environment."""

    disabled: frozenset[str] = frozenset()
    strict: bool = False
    entry_points: bool = True

    @classmethod
    def from_environment(
        cls, disabled: Iterable[str] = (), strict: bool = False, no_plugins: bool = False
    ) -> LoadOptions:
        return cls(
            disabled=frozenset(disabled) | _env_list(ENV_DISABLE),
            strict=strict or _env_flag(ENV_STRICT),
            entry_points=not (no_plugins or _env_flag(ENV_NO_PLUGINS)),
        )


#: Built-ins and entry points, nothing disabled, failures not fatal.
DEFAULT_LOAD_OPTIONS = LoadOptions()


@frozen
class PluginInfo:
    """One plugin as ``nodehost plugins`` lists it.

    ``status`` is ``active``, ``blocked`` or ``failed``; ``error`` is the
    one-line reason of a failure and ``hook`` the hook it failed in (None:
    while loading).
    """

    name: str
    kind: str
    status: str
    module: str
    distribution: str | None = None
    version: str | None = None
    hooks: tuple[str, ...] = ()
    error: str | None = None
    hook: str | None = None

    @property
    def dist_label(self) -> str:
        if self.distribution is None:
            return "nodehost (built-in)" if self.kind == "builtin" else "-"
        return f"{self.distribution} {self.version or ''}".strip()

    @property
    def entry_point(self) -> str:
        """``name = module`` as the entry point declares it (the module for a built-in)."""
        return f"{self.name} = {self.module}"

    def failure_line(self) -> str:
        """The failure in one line: plugin, entry point, distribution and version, hook, error."""
        where = f"in hook {self.hook}" if self.hook else "to load"
        return (
            f"plugin {self.name!r} (entry point {self.entry_point}, {self.dist_label}) "
            f"failed {where}: {self.error}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "status": self.status,
            "module": self.module,
            "distribution": self.distribution,
            "version": self.version,
            "hooks": list(self.hooks),
            "error": self.error,
            "hook": self.hook,
        }


def _ours(error: BaseException) -> bool:
    """A failure nodehost itself described (a clash, an unknown hook): no traceback to show."""
    return isinstance(error, WrongResult) or (
        isinstance(error, PluginError) and error.__cause__ is None
    )


def _failed_how(error: BaseException) -> str:
    """``raised Type: message``, or what a hook wrongly returned."""
    if isinstance(error, WrongResult):
        return str(error)
    return f"raised {_one_line(error)}"


def _one_line(error: BaseException) -> str:
    """``Type: message`` on one line (a :class:`PluginError`'s or :class:`WrongResult`'s
    message alone: it is ours)."""
    text = " ".join(str(error).split())
    if isinstance(error, (PluginError, WrongResult)):
        return text
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class WrongResult(TypeError):
    """A hook returned something its hookspec does not allow (the plugin's failure)."""


def _kind(expected: type | tuple[type, ...]) -> str:
    kinds = expected if isinstance(expected, tuple) else (expected,)
    return " or ".join(kind.__name__ for kind in kinds)


def checked_items(result: object, expected: type | tuple[type, ...]) -> list[Any]:
    """``result`` as a list whose every item is an ``expected``; None is empty.

    Raises :class:`WrongResult` naming what was returned instead: a string,
    bytes or a mapping is not a sequence of records, however iterable.
    """
    if result is None:
        return []
    if isinstance(result, (str, bytes, Mapping)) or not isinstance(result, Iterable):
        raise WrongResult(f"returned {type(result).__name__}, not a list of {_kind(expected)}")
    items = list(result)
    for index, item in enumerate(items):
        if not isinstance(item, expected):
            raise WrongResult(
                f"returned a list whose item {index} is {type(item).__name__} "
                f"({_short_repr(item)}), not {_kind(expected)}"
            )
    return items


def checked_none(result: object) -> None:
    """Raise :class:`WrongResult` unless ``result`` is None (hooks that return nothing)."""
    if result is not None:
        raise WrongResult(
            f"returned {type(result).__name__} ({_short_repr(result)}); this hook returns None"
        )


def _short_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


@frozen
class Provided(Generic[T]):
    """A record with the plugin (and distribution) that provided it."""

    record: T
    plugin: str
    distribution: str | None = None

    def source(self) -> str:
        return f"plugin {self.plugin!r}" + (f" ({self.distribution})" if self.distribution else "")


class PluginHost:
    """Owns the pluggy manager, the loading bookkeeping and the :class:`Hooks` facade.

    ``quiet``: record failures without logging or raising them (collecting declared
    options before the command line is parsed; the command loads again and reports).
    A plain class: loading sets its fields, so it cannot be a ``@frozen`` record, and
    the stdlib's mutable dataclass would compile its methods on every command.
    """

    def __init__(self, *, quiet: bool = False) -> None:
        self.pm: pluggy.PluginManager = _new_manager()
        self.infos: dict[str, PluginInfo] = {}
        self.builtins: Sequence[str] = BUILTIN_PLUGINS
        self.strict = False
        self.quiet = quiet
        #: Failures recorded while quiet, reported by :meth:`adopt`.
        self.unreported: list[tuple[PluginInfo, BaseException]] = []
        #: A built-in's run-time hook that raised (it stays loaded): (plugin, hook) -> error.
        self.builtin_hook_errors: dict[tuple[str, str], str] = {}

    @property
    def hooks(self) -> Hooks:
        return Hooks(self)

    # --- loading ---------------------------------------------------------------

    def load(self, options: LoadOptions = DEFAULT_LOAD_OPTIONS) -> PluginHost:
        """Register built-ins, then entry points, as the module docstring says."""
        self.strict = options.strict and not self.quiet
        for name in options.disabled:
            self.pm.set_blocked(name)
        self.hooks.addhooks()
        for module_name in self.builtins:
            self._load_builtin(module_name)
        if options.entry_points:
            from nodehost.pluginhost.entrypoints import entry_points

            for entry_point in entry_points(ENTRY_POINT_GROUP):
                self._load_entry_point(entry_point)
        self._check_pending(options.strict)
        self._warn_unknown_disabled(options)
        return self

    def _warn_unknown_disabled(self, options: LoadOptions) -> None:
        """Warn about each disabled name that no plugin has (a typo disables nothing).

        Without entry points (``--no-plugins``) a name cannot be checked: nothing is said.
        """
        if not options.entry_points or self.quiet:
            return
        for name in sorted(options.disabled - set(self.infos)):
            from nodehost.log import get_logger
            from nodehost.suggest import closest

            suggestion = closest(name, self.infos)
            get_logger().warning(
                "no plugin of that name to disable",
                plugin=name,
                did_you_mean=suggestion,
                plugins=", ".join(sorted(self.infos)),
            )

    def register(self, plugin: object, name: str, *, kind: str = "local") -> None:
        """Register an in-process plugin object (tests, embedding applications)."""
        self.pm.register(plugin, name=name)
        self.infos[name] = self._active_info(plugin, name, kind)

    def _load_builtin(self, module_name: str) -> None:
        name = module_name.rsplit(".", 1)[-1]
        if self.pm.is_blocked(name):
            self.infos[name] = PluginInfo(name, "builtin", "blocked", module_name)
            return
        module = importlib.import_module(module_name)
        self.register(module, name, kind="builtin")

    def _load_entry_point(self, entry_point: EntryPoint) -> None:
        name = entry_point.name
        dist_name, version = entry_point.distribution, entry_point.version
        if self.pm.is_blocked(name):
            self.infos[name] = PluginInfo(
                name, "entrypoint", "blocked", entry_point.value, dist_name, version
            )
            return
        plugin = None
        try:
            plugin = entry_point.load()
            check_plugin_api(plugin)
            self.pm.register(plugin, name=name)
        except Exception as error:
            hook = None
            if plugin is not None and self.pm.is_registered(plugin):  # a historic hook raised
                self.pm.unregister(plugin)
                hook = "nodehost_addhooks"
            info = PluginInfo(name, "entrypoint", "failed", entry_point.value, dist_name, version)
            self._fail(info, error, hook)
            return
        self.infos[name] = self._active_info(plugin, name, "entrypoint", dist_name, version)

    def is_builtin(self, name: str) -> bool:
        info = self.infos.get(name)
        return info is not None and info.kind == "builtin"

    def disable_failed(self, name: str, error: BaseException, hook: str) -> None:
        """Unregister a third-party plugin whose hook ``hook`` raised ``error``; record why.

        A built-in that misbehaves is a bug: the error is raised as ``PluginError``.
        """
        info = self.infos.get(name)
        if info is None or info.kind == "builtin":
            raise PluginError(
                f"built-in plugin {name!r} failed in hook {hook}: {_one_line(error)}"
            ) from error
        plugin = self.pm.get_plugin(name)
        if plugin is not None:
            self.pm.unregister(plugin)
        self._fail(info, error, hook)

    def _check_pending(self, strict: bool) -> None:
        try:
            self.pm.check_pending()
        except pluggy.PluginValidationError as error:
            name = self.pm.get_name(error.plugin) or "?"
            info = self.infos.get(name)
            if info is None or info.kind == "builtin":
                raise
            self.pm.unregister(error.plugin)
            self._fail(info, PluginError(self._unknown_hook_message(error)), None)
            self._check_pending(strict)

    def _unknown_hook_message(self, error: pluggy.PluginValidationError) -> str:
        """What pluggy refused; an unknown hook is named with the closest known one."""
        import re

        from nodehost.suggest import closest

        message = " ".join(str(error).split())
        unknown = re.search(r"unknown hook '(\w+)'", message)
        if unknown is None:
            return message
        prefix = f"{PROJECT_NAME}_"
        known = [
            name.removeprefix(prefix)
            for name in vars(self.pm.hook)
            if name.startswith(prefix) and getattr(self.pm.hook, name).has_spec()
        ]
        suggestion = closest(unknown.group(1).removeprefix(prefix), known)
        hint = f" (did you mean {prefix}{suggestion}?)" if suggestion else ""
        return f"implements an unknown hook {unknown.group(1)}{hint}"

    def _fail(self, info: PluginInfo, error: BaseException, hook: str | None) -> None:
        """Record ``info``'s plugin as failed, then report it (:meth:`_report`), or keep the
        report for :meth:`adopt` while quiet."""
        failed = replace(info, status="failed", error=_one_line(error), hook=hook)
        self.infos[info.name] = failed
        if self.quiet:
            self.unreported.append((failed, error))
            return
        self._report(failed, error)

    def adopt(self, options: LoadOptions) -> PluginHost:
        """Take over a host loaded quietly with ``options`` but ``strict``: report what
        failed meanwhile as :meth:`load` would have, and go on as a loaded host."""
        self.quiet, self.strict = False, options.strict
        unreported, self.unreported = self.unreported, []
        for failed, error in unreported:
            self._report(failed, error)
        self._warn_unknown_disabled(options)
        return self

    def _report(self, failed: PluginInfo, error: BaseException) -> None:
        """Log one line (traceback at -v 4) for a failed plugin, or raise when strict."""
        if self.strict:
            raise PluginError(failed.failure_line()) from error
        hook = failed.hook
        from nodehost.log import DEBUG_VERBOSITY, get_logger, verbosity

        get_logger().warning(
            "plugin failed to load" if hook is None else "plugin failed in a hook",
            entry_point=failed.name,
            module=failed.module,
            distribution=failed.distribution,
            version=failed.version,
            hook=hook,
            error=failed.error,
            exc_info=error if verbosity() >= DEBUG_VERBOSITY and not _ours(error) else None,
        )

    def _active_info(
        self,
        plugin: object,
        name: str,
        kind: str,
        dist_name: str | None = None,
        version: str | None = None,
    ) -> PluginInfo:
        hooks = tuple(sorted(caller.name for caller in self.pm.get_hookcallers(plugin) or ()))
        module = getattr(plugin, "__name__", type(plugin).__module__)
        return PluginInfo(name, kind, "active", module, dist_name, version, hooks)

    # --- queries -----------------------------------------------------------------

    def missing_summary(self) -> str:
        """The plugins that are not there, as a space then ``(disabled: a, b; failed: c)``
        ("" if none)."""
        parts = []
        for status, label in (("blocked", "disabled"), ("failed", "failed")):
            names = sorted(info.name for info in self.infos.values() if info.status == status)
            if names:
                parts.append(f"{label}: {', '.join(names)}")
        return f" ({'; '.join(parts)})" if parts else ""

    def failures(self) -> list[PluginInfo]:
        return [info for info in self.infos.values() if info.status == "failed"]

    def distribution_of(self, plugin_name: str) -> str | None:
        info = self.infos.get(plugin_name)
        if info is None or info.distribution is None:
            return None
        return f"{info.distribution} {info.version}"

    def failure_hint(self, name: str) -> str:
        """Text explaining which failed plugins might have provided ``name`` ("" if none)."""
        failed = self.failures()
        matching = [info for info in failed if info.name == name] or failed
        return "; ".join(info.failure_line() for info in matching)


def check_plugin_api(plugin: object) -> None:
    """Raise :class:`PluginError` when ``plugin`` declares a ``NODEHOST_PLUGIN_API`` (the
    oldest plugin API it works with, ``"MAJOR.MINOR"``) that :data:`nodehost.PLUGIN_API`
    does not satisfy: another major number, or a higher minor one."""
    from nodehost import PLUGIN_API

    wanted = getattr(plugin, "NODEHOST_PLUGIN_API", None)
    if wanted is None:
        return
    have = ".".join(map(str, PLUGIN_API))
    try:
        major, minor = (int(part) for part in str(wanted).split("."))
    except ValueError:
        raise PluginError(
            f'NODEHOST_PLUGIN_API is {wanted!r}, not "MAJOR.MINOR" (this nodehost: {have})'
        ) from None
    if major != PLUGIN_API[0] or minor > PLUGIN_API[1]:
        raise PluginError(f"needs nodehost plugin API {wanted}; this nodehost provides {have}")


def _traced(hook_name: str, plugin: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` logging, as debug events, each call (hook, plugin, argument names) and
    its outcome (seconds and how many results, or the error it raised)."""
    from nodehost.log import get_logger

    log = get_logger()

    def call(**kwargs: Any) -> Any:
        log.debug("hook call", hook=hook_name, plugin=plugin, arguments=",".join(kwargs))
        started = time.perf_counter()
        try:
            result = function(**kwargs)
        except BaseException as error:
            seconds = round(time.perf_counter() - started, 6)
            log.debug(
                "hook raised", hook=hook_name, plugin=plugin, seconds=seconds, error=repr(error)
            )
            raise
        seconds = round(time.perf_counter() - started, 6)
        count = len(result) if isinstance(result, (list, tuple, dict)) else int(result is not None)
        log.debug("hook returned", hook=hook_name, plugin=plugin, seconds=seconds, results=count)
        return result

    return call


#: The attributes ``hookimpl`` and ``hookspec`` mark a function with.
_IMPL_MARKER = f"{PROJECT_NAME}_impl"
_SPEC_MARKER = f"{PROJECT_NAME}_spec"


class _PluginManager(pluggy.PluginManager):
    """pluggy's manager, answering itself for a module's own attributes where every pluggy
    release nodehost supports (``pluggy>=1.5``) answers the same.

    pluggy asks :meth:`parse_hookimpl_opts` about every name in a plugin's namespace and
    :meth:`parse_hookspec_opts` about every name in a hookspec module, each resolved with
    ``inspect.getattr_static`` (about 460 names for the built-in modules; on Python 3.11
    each such lookup walks the module type's bases for a shadowed ``__dict__``).  Of a
    module's own attributes, a plain function is a hook implementation or specification
    exactly when its marker set the options it holds, and those options are the answer
    (1.5 reads them through ``getattr``, 1.7 through ``getattr_static``: both find the
    function in the module's namespace); no implementation is what is no routine
    (function, method, builtin, method descriptor) nor a static or class method (1.5 takes
    any marked routine, 1.7 functions and methods only).  Whatever else (a name the module
    serves through ``__getattr__``, a class, another kind of plugin) pluggy decides.
    """

    def parse_hookimpl_opts(self, plugin: object, name: str) -> pluggy.HookimplOpts | None:
        value = _own_attribute(plugin, name)
        if isinstance(value, types.FunctionType):
            return cast("pluggy.HookimplOpts | None", _marker_options(value, _IMPL_MARKER))
        if value is not _NOT_OWN and not (
            inspect.isroutine(value) or isinstance(value, (staticmethod, classmethod))
        ):
            return None
        return super().parse_hookimpl_opts(plugin, name)

    def parse_hookspec_opts(
        self, module_or_class: types.ModuleType | type, name: str
    ) -> pluggy.HookspecOpts | None:
        value = _own_attribute(module_or_class, name)
        if isinstance(value, types.FunctionType):
            return cast("pluggy.HookspecOpts | None", _marker_options(value, _SPEC_MARKER))
        return super().parse_hookspec_opts(module_or_class, name)


#: What :func:`_own_attribute` answers for a name that is not in a module's own namespace.
_NOT_OWN = object()


def _own_attribute(namespace: object, name: str) -> object:
    """``name`` in module ``namespace``'s own namespace; :data:`_NOT_OWN` if it is not there
    or ``namespace`` is no module."""
    if isinstance(namespace, types.ModuleType):
        return vars(namespace).get(name, _NOT_OWN)
    return _NOT_OWN


def _marker_options(function: types.FunctionType, marker: str) -> dict[str, Any] | None:
    """The options ``function``'s marker set (``None`` if none did), as pluggy reads them."""
    options = getattr(function, marker, None)
    return options if isinstance(options, dict) else None


def _new_manager() -> pluggy.PluginManager:
    from nodehost import hookspecs

    pm = _PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    return pm


# --- the typed facade --------------------------------------------------------------


class Hooks:
    """One method per hook; the only way core code calls plugins."""

    def __init__(self, host: PluginHost) -> None:
        from nodehost.log import TRACE_VERBOSITY, verbosity

        self._host = host
        self._tracing = verbosity() >= TRACE_VERBOSITY

    def _impls(self, hook_name: str) -> Iterator[tuple[str, Callable[..., Any], Sequence[str]]]:
        """Each implementation of ``hook_name`` in pluggy's call order; at ``-v 6`` and above
        (``TRACE_VERBOSITY``) each call and its outcome are logged (:func:`_traced`)."""
        caller = getattr(self._host.pm.hook, hook_name)
        for impl in reversed(caller.get_hookimpls()):
            function = impl.function
            if self._tracing:
                function = _traced(hook_name, impl.plugin_name, function)
            yield impl.plugin_name, function, impl.argnames

    def call_each(self, hook_name: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """Call every implementation of ``hook_name``: (plugin name, result) in call order.

        For hooks that plugins add through ``nodehost_addhooks`` and call
        themselves (the ``kubelet`` plugin's ``nodehost_kubelet_arguments``);
        empty when no plugin added the hook.  A third-party implementation
        that raises is left out and its plugin disabled
        (:meth:`PluginHost.disable_failed`); a built-in's exception is a
        ``PluginError`` naming the plugin and the hook.
        """
        caller = getattr(self._host.pm.hook, hook_name, None)
        if caller is None or caller.spec is None:  # implemented, but nobody declared it
            return []
        results = []
        for plugin, function, argnames in self._impls(hook_name):
            try:
                results.append((plugin, function(**{name: kwargs[name] for name in argnames})))
            except Exception as error:
                self._host.disable_failed(plugin, error, hook_name)
        return results

    def records(
        self, hook_name: str, expected: type | tuple[type, ...] = object
    ) -> list[Provided[Any]]:
        """The records every plugin returns from registration hook ``hook_name``.

        Each record comes with the plugin that provided it; a third-party plugin
        whose implementation raises, or returns anything but a list (or None)
        of ``expected`` instances (:func:`checked_items`), is disabled, a
        built-in's error raises.  Also for hooks that plugins add through
        ``nodehost_addhooks``, e.g. the ``dns`` plugin's
        ``nodehost_dns_record_sources``.
        """
        provided: list[Provided[Any]] = []
        for plugin, function, argnames in self._impls(hook_name):
            try:
                records = checked_items(function(**dict.fromkeys(argnames)), expected)
            except Exception as error:
                self._host.disable_failed(plugin, error, hook_name)
                continue
            dist = self._host.distribution_of(plugin)
            provided.extend(Provided(record, plugin, dist) for record in records)
        return provided

    # registration
    def addhooks(self) -> None:
        """Let every plugin, now and when registered later, add its own hookspecs."""
        self._host.pm.hook.nodehost_addhooks.call_historic(kwargs={"pluginmanager": self._host.pm})

    def components(self) -> list[Provided[ComponentRecord]]:
        """Every component record, with the plugin that provided it."""
        from nodehost.pluginhost.records import ComponentRecord

        return self.records("nodehost_components", ComponentRecord)

    def network_providers(self) -> list[Provided[NetworkProviderRecord]]:
        """Every network-provider record, with the plugin that provided it."""
        from nodehost.pluginhost.records import NetworkProviderRecord

        return self.records("nodehost_network_providers", NetworkProviderRecord)

    # options
    def options(self) -> list[Provided[OptionRecord]]:
        """Every ``start`` option plugins declare, with the plugin that declared it."""
        from nodehost.pluginhost.records import OptionRecord

        return self.records("nodehost_options", OptionRecord)

    def start_options(self, options: StartOptions, components: frozenset[str]) -> StartOptions:
        """``options`` with every plugin's ``nodehost_start_options`` answer applied.

        An answer's keys are :class:`~nodehost.options.StartOptions` fields or
        the ``dest`` of an option a plugin declares (``plugin_values``).  A
        ``NodehostError`` (a usage error) reaches the user as it is; any other
        answer fails its plugin; two plugins giving one key different values is
        a ``UsageError`` naming both.
        """
        import dataclasses

        fields = {item.name for item in dataclasses.fields(options)}
        changes = self._start_option_changes(
            options, components, fields | set(options.plugin_values)
        )
        declared = {key: value for key, value in changes.items() if key not in fields}
        return dataclasses.replace(
            options,
            **{key: value for key, value in changes.items() if key in fields},
            plugin_values={**options.plugin_values, **declared},
        )

    def _start_option_changes(
        self, options: StartOptions, components: frozenset[str], known: set[str]
    ) -> dict[str, Any]:
        from nodehost.errors import NodehostError, UsageError

        changes: dict[str, tuple[str, Any]] = {}
        hook = "nodehost_start_options"
        for plugin, function, argnames in self._impls(hook):
            try:
                arguments = {"options": options, "components": components}
                answer = dict(function(**{name: arguments[name] for name in argnames}) or {})
                unknown = sorted(set(answer) - known)
                if unknown:
                    raise ValueError(f"no start option is named {', '.join(unknown)}")
            except NodehostError:
                raise
            except Exception as error:
                self._host.disable_failed(plugin, error, hook)
                continue
            for key, value in answer.items():
                earlier = changes.get(key)
                if earlier is not None and earlier[1] != value:
                    raise UsageError(
                        f"plugins {earlier[0]!r} and {plugin!r} set the start option {key} "
                        f"differently ({earlier[1]!r}, {value!r}); disable one"
                    )
                changes[key] = (plugin, value)
        return {key: value for key, (_, value) in changes.items()}

    # configuration
    def override_config(self, config: NodeConfig, options: StartOptions) -> NodeConfig:
        """``config`` with every plugin's ``nodehost_override_config`` changes applied,
        one plugin after another; a plugin that raises or names an unknown field fails
        alone and changes nothing."""
        import dataclasses

        fields = {item.name for item in dataclasses.fields(config)}
        hook = "nodehost_override_config"
        for plugin, function, argnames in self._impls(hook):
            kwargs = {"config": config, "options": options}
            try:
                changes = function(**{name: kwargs[name] for name in argnames}) or {}
                unknown = sorted(set(changes) - fields)
                if unknown:
                    raise ValueError(f"not fields of NodeConfig: {', '.join(unknown)}")
                config = dataclasses.replace(config, **changes)
            except Exception as error:
                self._host.disable_failed(plugin, error, hook)
        return config

    def adjust_config(self, raw: dict[str, Any], source: str) -> None:
        """Let every plugin edit ``raw`` in place; one that raises changes nothing.

        Each implementation works on a copy that replaces ``raw`` only when it
        returns, so a third-party plugin that raises half-way (and is
        disabled) leaves no half-made edit behind.
        """
        import copy

        hook = "nodehost_adjust_config"
        for plugin, function, argnames in self._impls(hook):
            draft = copy.deepcopy(raw)
            kwargs = {"raw": draft, "source": source}
            try:
                checked_none(function(**{name: kwargs[name] for name in argnames}))
            except Exception as error:
                self._host.disable_failed(plugin, error, hook)
                continue
            raw.clear()
            raw.update(draft)

    def validate_config(
        self,
        config: NodeConfig,
        scope: ValidationScope,
        selected: frozenset[str],
        providers: Mapping[str, NetworkProviderRecord],
        in_play: Callable[[str], bool] = lambda plugin: True,
    ) -> list[Problem]:
        """Every plugin's problems.

        An implementation that raises, or returns anything but a list (or None)
        of :class:`~nodehost.pluginhost.records.Problem`, is a problem of its own, at the path of
        the plugin's distribution (``Internal error``), when ``in_play(plugin)``
        -- one of its components is selected or a section it owns is in the
        file -- and the plugin is disabled (a built-in's is always reported).
        """
        problems: list[Problem] = []
        kwargs = {
            "config": config,
            "scope": scope,
            "selected": selected,
            "providers": providers,
            "plugin_failures": [info.failure_line() for info in self._host.failures()],
        }
        from nodehost.pluginhost.records import Problem

        hook = "nodehost_validate_config"
        for plugin, function, argnames in self._impls(hook):
            try:
                result = function(**{name: kwargs[name] for name in argnames})
                problems.extend(checked_items(result, Problem))
            except Exception as error:
                problems.extend(self._validation_failure(plugin, error, in_play(plugin)))
        return problems

    def _validation_failure(self, plugin: str, error: Exception, in_play: bool) -> list[Problem]:
        from nodehost.pluginhost.records import Problem

        info = self._host.infos[plugin]
        problem = Problem.internal(
            info.distribution or PROJECT_NAME,
            f"plugin {plugin!r} ({info.dist_label}, entry point {info.entry_point}): "
            f"nodehost_validate_config {_failed_how(error)}; its rules were not checked "
            "(-v 4 shows the traceback)",
        )
        if self._host.is_builtin(plugin):
            from nodehost.log import get_logger

            get_logger().error(
                "built-in validation failed", plugin=plugin, error=_one_line(error), exc_info=error
            )
            return [problem]
        self._host.disable_failed(plugin, error, "nodehost_validate_config")
        return [problem] if in_play else []

    def obtain_config(self, options: StartOptions) -> str | None:
        """The first path an implementation returns, or None (``nodehost_obtain_config``)."""
        path = self._first("nodehost_obtain_config", options, _checked_path)
        return None if path is None else str(path)

    def describe_config(self, options: StartOptions) -> list[str] | None:
        """The first lines an implementation returns, or None (``nodehost_describe_config``)."""
        return self._first(
            "nodehost_describe_config", options, lambda lines: checked_items(lines, str)
        )

    def _first(self, hook_name: str, options: StartOptions, check: Callable[[Any], Any]) -> Any:
        """The first non-None answer of a firstresult hook taking ``options``, through ``check``.

        A ``NodehostError`` reaches the user as it is; any other exception, or
        an answer ``check`` refuses (:class:`WrongResult`), fails that plugin
        (the next implementation is asked).
        """
        from nodehost.errors import NodehostError

        for plugin, function, argnames in self._impls(hook_name):
            kwargs = {"options": options}
            try:
                answer = function(**{name: kwargs[name] for name in argnames})
                answer = None if answer is None else check(answer)
            except NodehostError:
                raise
            except Exception as error:
                self._host.disable_failed(plugin, error, hook_name)
                continue
            if answer is not None:
                return answer
        return None

    def checks(self, context: CheckContext) -> list[Check]:
        """Every plugin's host checks (``nodehost_checks``), each with its plugin set.

        A plugin (built-in or not) that raises or returns anything but a list
        of :class:`~nodehost.check.Check` gets one ``error`` line,
        ``<plugin>.checks``, instead of its checks; it stays registered.
        """
        from nodehost.check import Check

        found: list[Check] = []
        for plugin, function, argnames in self._impls("nodehost_checks"):
            try:
                result = function(**dict.fromkeys(argnames, context))
                found.extend(replace(item, plugin=plugin) for item in checked_items(result, Check))
            except Exception as error:
                found.append(self._check_failure(plugin, error))
        return found

    def _check_failure(self, plugin: str, error: Exception) -> Check:
        from nodehost.check import Check
        from nodehost.log import get_logger

        info = self._host.infos[plugin]
        get_logger().debug("host check failed", plugin=plugin, exc_info=error)
        return replace(
            Check.error(
                f"{plugin}.checks",
                f"plugin {plugin!r} ({info.dist_label}): nodehost_checks {_failed_how(error)}; "
                "its checks did not run (-v 4 shows the traceback)",
                f"report it to the plugin's authors, or --disable-plugin {plugin}",
            ),
            plugin=plugin,
        )

    # planning
    def api_route(
        self, config: NodeConfig, selected: frozenset[str], state_dir: str
    ) -> ApiRoute | None:
        """The first :class:`~nodehost.pluginhost.records.ApiRoute` an implementation returns
        (``nodehost_api_route``), or None.  One that raises, or answers anything but a
        route of a selected component, fails its plugin (a built-in's raises)."""
        from nodehost.pluginhost.records import ApiRoute

        hook = "nodehost_api_route"
        kwargs = {"config": config, "selected": selected, "state_dir": state_dir}
        for plugin, function, argnames in self._impls(hook):
            try:
                answer = function(**{name: kwargs[name] for name in argnames})
                if answer is None:
                    continue
                if not isinstance(answer, ApiRoute):
                    raise WrongResult(
                        f"returned {type(answer).__name__} ({_short_repr(answer)}), not an ApiRoute"
                    )
                if answer.component not in selected:
                    raise WrongResult(f"routed through {answer.component!r}, which is not selected")
            except Exception as error:
                self._host.disable_failed(plugin, error, hook)
                continue
            return answer
        return None

    def disable(self, plugin: str, error: BaseException, hook_name: str) -> None:
        """Fail ``plugin`` for what its ``hook_name`` did (a result that breaks the hook's
        contract): a third-party plugin is disabled and reported, a built-in's is a
        ``PluginError``.  For plugins that call their own hooks through :meth:`call_each`."""
        self._host.disable_failed(plugin, error, hook_name)

    # run time
    def _notify(self, hook_name: str, **kwargs: Any) -> None:
        """Call an observer hook; a third-party plugin that raises or returns a value
        (:func:`checked_none`) is disabled, a built-in's failure logged."""
        for plugin, function, argnames in self._impls(hook_name):
            try:
                checked_none(function(**{name: kwargs[name] for name in argnames}))
            except Exception as error:
                if not self._host.is_builtin(plugin):
                    self._host.disable_failed(plugin, error, hook_name)
                    continue
                from nodehost.log import get_logger

                self._host.builtin_hook_errors[(plugin, hook_name)] = _one_line(error)
                get_logger().warning(
                    "plugin hook failed", plugin=plugin, hook=hook_name, error=_one_line(error)
                )

    def plugin_failures(self) -> list[dict[str, Any]]:
        """Every plugin failure so far, for ``/status``: each failed third-party plugin
        (:meth:`PluginInfo.as_dict`, with ``line``, its one-line report) and each built-in
        run-time hook that raised (the built-in stays loaded; its last error per hook)."""
        failures = [
            {**info.as_dict(), "line": info.failure_line()} for info in self._host.failures()
        ]
        for (plugin, hook), error in self._host.builtin_hook_errors.items():
            line = f"built-in plugin {plugin!r} failed in hook {hook}: {error}"
            failures.append(
                {"name": plugin, "kind": "builtin", "status": "active", "hook": hook,
                 "error": error, "line": line}
            )  # fmt: skip
        return failures

    def component_started(self, name: str, pid: int | None) -> None:
        self._notify("nodehost_component_started", name=name, pid=pid)

    def component_ready(self, name: str, seconds: float) -> None:
        self._notify("nodehost_component_ready", name=name, seconds=seconds)

    def component_exited(self, name: str, returncode: int | None, restarting: bool) -> None:
        self._notify(
            "nodehost_component_exited", name=name, returncode=returncode, restarting=restarting
        )

    def component_stopped(self, name: str) -> None:
        self._notify("nodehost_component_stopped", name=name)

    def node_ready(
        self, seconds: float, status_address: str | None, keeps_running: bool = True
    ) -> None:
        self._notify(
            "nodehost_node_ready",
            seconds=seconds,
            status_address=status_address,
            keeps_running=keeps_running,
        )

    def metrics_collectors(self) -> list[tuple[str, Any]]:
        """Every plugin's ``nodehost_metrics_collectors``, as (plugin, collector) pairs.

        A hook that raises, or returns anything but a list (or None) of objects
        with a callable ``collect``, is logged and gives no collectors.
        """
        collected: list[tuple[str, Any]] = []
        for plugin, function, _ in self._impls("nodehost_metrics_collectors"):
            try:
                collectors = checked_items(function(), object)
                for index, collector in enumerate(collectors):
                    if not callable(getattr(collector, "collect", None)):
                        raise WrongResult(
                            f"returned a list whose item {index} ({_short_repr(collector)}) "
                            "has no collect() method"
                        )
                collected.extend((plugin, collector) for collector in collectors)
            except Exception as error:
                from nodehost.log import get_logger

                get_logger().warning(
                    "plugin hook failed",
                    plugin=plugin,
                    hook="nodehost_metrics_collectors",
                    error=_one_line(error),
                )
        return collected


def _checked_path(answer: object) -> str | os.PathLike[str]:
    """``nodehost_obtain_config``'s answer: a str or os.PathLike, else :class:`WrongResult`."""
    if isinstance(answer, (str, os.PathLike)):
        return answer
    raise WrongResult(f"returned {type(answer).__name__} ({_short_repr(answer)}), not a path")


def index_by_name(
    provided: Iterable[Provided[N]], kind: str, *, fold_case: bool = False
) -> dict[str, Provided[N]]:
    """Index records by name and alias; a clash names both providers (``PluginError``)."""
    index: dict[str, Provided[N]] = {}
    for item in provided:
        record = item.record
        for key in (record.name, *record.aliases):
            key = key.lower() if fold_case else key
            other = index.get(key)
            if other is not None and other.record is not record:
                raise PluginError(
                    f"{kind} name {key!r} is provided twice: by {other.source()} "
                    f"and by {item.source()}; disable one with --disable-plugin"
                )
            index[key] = item
    return index


def unique(provided: Mapping[str, Provided[T]]) -> list[Provided[T]]:
    """The distinct records of an index built by :func:`index_by_name`, in first-seen order."""
    seen: dict[int, Provided[T]] = {}
    for item in provided.values():
        seen.setdefault(id(item.record), item)
    return list(seen.values())
