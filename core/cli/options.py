"""Click options shared by several commands (plugin loading, logging), defined once."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.pluginhost.inventory import Inventory

F = Callable[..., Any]


def plugin_options(command: F) -> F:
    """``--disable-plugin``, ``--strict-plugins``, ``--no-plugins``."""
    command = click.option(
        "--no-plugins",
        is_flag=True,
        allow_from_autoenv=False,
        help="Load no third-party plugins (env NODEHOST_NO_PLUGINS=1).",
    )(command)
    command = click.option(
        "--strict-plugins",
        is_flag=True,
        allow_from_autoenv=False,
        help="Fail when a third-party plugin fails to load (env NODEHOST_STRICT_PLUGINS=1).",
    )(command)
    return click.option(
        "--disable-plugin",
        "disable_plugins",
        multiple=True,
        metavar="NAME",
        allow_from_autoenv=False,
        help="Block plugin NAME before it is imported; repeatable "
        "(env NODEHOST_DISABLE_PLUGINS=a,b).",
    )(command)


def logging_options(command: F) -> F:
    """``-v/--loglevel`` (glog levels) and ``--log-format``."""
    command = click.option(
        "--log-format",
        type=click.Choice(["auto", "console", "json"]),
        default="auto",
        show_default=True,
        help="Log rendering: console on a terminal and JSON otherwise when auto.",
    )(command)
    return click.option(
        "-v",
        "--loglevel",
        type=click.IntRange(0, 10),
        default=0,
        show_default=True,
        help="Log verbosity, glog style (4 and up: debug events; 6 and up: plugin hook calls).",
    )(command)


def inventory_options(command: F) -> F:
    """:func:`plugin_options` and :func:`logging_options`, for commands that only load plugins
    (``-v 4`` shows a failing plugin's traceback); pass them all to :func:`load_inventory`."""
    return plugin_options(logging_options(command))


def load_inventory(
    disable_plugins: tuple[str, ...],
    strict_plugins: bool,
    no_plugins: bool,
    loglevel: int | None = None,
    log_format: Any = "auto",
) -> Inventory:
    """Load every plugin as the flags and the environment say, and index their records.

    With ``loglevel``, logging is configured first (commands with
    :func:`inventory_options`); ``start`` configures it itself.
    """
    from nodehost.pluginhost.inventory import Inventory
    from nodehost.pluginhost.manager import LoadOptions

    if loglevel is not None:
        from nodehost.log import configure_logging

        configure_logging(loglevel, log_format)

    from nodehost.cli.pluginoptions import collected_inventory

    options = LoadOptions.from_environment(disable_plugins, strict_plugins, no_plugins)
    return collected_inventory(options) or Inventory.load(options)


def parse_address_flag(text: str, flag: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``[V6]:PORT`` -> ``(host, port)``; ``UsageError`` naming ``flag``."""
    from nodehost.config.hostport import is_valid_port, split_host_port
    from nodehost.errors import UsageError

    try:
        host, port = split_host_port(text.strip())
    except ValueError as error:
        raise UsageError(f"expected HOST:PORT, got {text!r} ({error})", flag) from error
    if not port.isdigit() or not (port == "0" or is_valid_port(int(port))):
        raise UsageError(f"expected HOST:PORT, got {text!r} (bad port)", flag)
    return host or "127.0.0.1", int(port)


def echo_warnings(source: str, problems: Any) -> None:
    """Print warnings to stderr, one ``warning: <source>: <field.path>: <message>`` line each."""
    for problem in problems:
        from nodehost.log import print_message  # imported only when there is a warning

        print_message(f"warning: {source}: {problem.render()}", "warning")
