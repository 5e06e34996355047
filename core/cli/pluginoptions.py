"""Commands that take the ``start`` options plugins declare (``nodehost_options``).

:class:`PluginOptionsCommand` is a click command whose ``params`` are its own
(the host's) followed by every loaded plugin's declared options, collected the
first time they are needed: when the command line is parsed, when help is
shown, when another command copies them (``install``) or a documentation tool
reads ``start.params``.  Collecting loads the plugins as the command line and
the environment say (``--no-plugins``, ``--disable-plugin``, their
variables), quietly: nothing is logged or raised yet.  The command then takes
that loaded host over (:func:`collected_inventory`, once), which reports each
failure as loading always does; plugins are not loaded twice.

Help lists the host's options under ``Options`` and each plugin's under
``Options of plugin NAME``; each plugin option's value reaches the plugins
as ``StartOptions.plugin_values[dest]`` (:func:`plugin_values`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.pluginhost.inventory import Inventory
    from nodehost.pluginhost.manager import LoadOptions, Provided
    from nodehost.pluginhost.records import OptionRecord


class PluginOption(click.Option):
    """A ``start`` option a plugin declared; ``plugin`` names it."""

    def __init__(self, declared: Provided[OptionRecord]) -> None:
        record = declared.record
        self.plugin = declared.plugin
        flag = record.type is bool
        default = (False if flag else None) if record.default is None else record.default
        super().__init__(
            [record.name],
            type=click.Choice(record.choices) if record.choices else record.type,
            is_flag=flag,
            default=default,
            multiple=record.multiple,
            metavar=record.metavar,
            help=record.help,
            envvar=record.variable,
            show_envvar=True,
            show_default=record.default is not None and not flag,
        )


class PluginOptionsCommand(click.Command):
    """A command whose options are its own and then every plugin's (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._combined: list[click.Parameter] | None = None
        self._loading: LoadOptions | None = None
        super().__init__(*args, **kwargs)

    @property
    def params(self) -> list[click.Parameter]:
        """The host's parameters, then the plugins' options (collected once per way of
        loading plugins); one list object, which click may append to and pop from."""
        if self._combined is None:
            declared = declared_options(self._loading or loading_for([]))
            self._combined = [*self.host_params, *declared]
        return self._combined

    @params.setter
    def params(self, value: list[click.Parameter]) -> None:
        self.host_params = list(value)
        self._combined = None

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Collect the plugins' options as this command line loads plugins, then parse."""
        loading = loading_for(args)
        if loading != self._loading:
            self._loading, self._combined = loading, None
        return super().parse_args(ctx, args)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The host's options, then one section per plugin that declares options."""
        sections: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            row = param.get_help_record(ctx)
            if row is not None and not isinstance(param, click.Argument):
                owner = param.plugin if isinstance(param, PluginOption) else ""
                sections.setdefault(owner, []).append(row)
        for owner, rows in sections.items():
            with formatter.section(f"Options of plugin {owner}" if owner else "Options"):
                formatter.write_dl(rows)


def loading_for(args: Sequence[str]) -> LoadOptions:
    """How the plugins load for a command line ``args`` and the environment, read before
    parsing (the options they declare are part of what is parsed): ``--disable-plugin``
    and ``--no-plugins`` up to a ``--``; ``strict`` is left to the command."""
    from nodehost.errors import NodehostError
    from nodehost.pluginhost.manager import LoadOptions

    disabled: list[str] = []
    no_plugins = False
    words = list(args)
    for index, word in enumerate(words[: words.index("--") if "--" in words else None]):
        if word == "--no-plugins":
            no_plugins = True
        elif word == "--disable-plugin" and index + 1 < len(words):
            disabled.append(words[index + 1])
        elif word.startswith("--disable-plugin="):
            disabled.append(word.partition("=")[2])
    try:
        return LoadOptions.from_environment(disabled, False, no_plugins)
    except NodehostError:  # a bad NODEHOST_*_PLUGINS value: the command says so itself
        return LoadOptions(frozenset(disabled), False, not no_plugins)


#: The inventory loaded to collect options and how, until the command takes it.
_collected: tuple[LoadOptions, Inventory] | None = None


def declared_options(loading: LoadOptions) -> list[PluginOption]:
    """Every active plugin's declared options as click options, plugins loaded quietly."""
    global _collected
    from nodehost.pluginhost.inventory import Inventory
    from nodehost.pluginhost.manager import PluginHost

    inventory = Inventory.from_host(PluginHost(quiet=True).load(loading))
    _collected = (loading, inventory)
    return [PluginOption(declared) for declared in inventory.options]


def collected_inventory(loading: LoadOptions) -> Inventory | None:
    """The inventory loaded to collect the options of the command being run, when it was
    loaded as ``loading`` says (``strict`` aside): taken over, failures reported; once."""
    global _collected
    collected, _collected = _collected, None
    if collected is None or collected[0] != replace(loading, strict=False):
        return None
    inventory = collected[1]
    inventory.host.adopt(loading)
    return inventory


def plugin_values(params: Sequence[click.Parameter], flags: Mapping[str, Any]) -> dict[str, Any]:
    """The values of the plugins' options among ``params``, by ``dest``."""
    return {
        param.name: flags[param.name]
        for param in params
        if isinstance(param, PluginOption) and param.name in flags
    }
