"""The ``nodehost`` command line: a click group whose commands load lazily.

Each command lives in its own module and is imported only when it runs, so
``nodehost --help`` and ``nodehost version`` import click and nothing heavy.
Every user-facing error is rendered once, in :func:`main`, with its exit code
(see :mod:`nodehost.errors`).
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from nodehost import __version__

#: command name -> (module:attribute, one-line help shown by ``--help``).
COMMANDS: dict[str, tuple[str, str]] = {
    "start": ("nodehost.cli.start:start", "Resolve and validate the node config, then run it."),
    "config": ("nodehost.cli.config:config", "Validate, show, create or describe a NodeConfig."),
    "components": ("nodehost.cli.inventory:components", "List the components nodehost can run."),
    "plugins": ("nodehost.cli.inventory:plugins", "List plugins: built-in, installed, failed."),
    "ca": ("nodehost.cli.ca:ca", "Create a signer CA for node certificates."),
    "status": ("nodehost.cli.status:status", "Show the state of a running nodehost."),
}

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class LazyGroup(click.Group):
    """A group that imports a command's module only when that command is used."""

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            target, _ = self.lazy[cmd_name]
            module_name, attribute = target.split(":")
            return getattr(importlib.import_module(module_name), attribute)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, self.lazy[name][1]) for name in self.lazy]
        for name in super().list_commands(ctx):
            command = super().get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=80)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(sorted(rows))


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, prog_name="nodehost", message="%(prog)s %(version)s")
def cli() -> None:
    """nodehost brings up a Kubernetes node and keeps it up.

    It reads an OpenShift Origin v1 NodeConfig (or generates one), validates it,
    then starts, watches and stops the node's components: kubelet, sdn, proxy,
    dns and bootstrap, each provided by a plugin.

    Exit codes: 0 success, 1 runtime failure, 2 usage error, 255 invalid config.
    """


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
def version(as_json: bool) -> None:
    """Print nodehost's version."""
    if as_json:
        import json

        info = {"nodehost": __version__, "python": sys.version.split()[0]}
        click.echo(json.dumps(info))
    else:
        click.echo(f"nodehost {__version__}")


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and exit with the documented code; never a traceback for a user's mistake."""
    from nodehost.errors import EXIT_FAILURE, NodehostError

    try:
        result = cli.main(args=argv, prog_name="nodehost", standalone_mode=False)
    except NodehostError as error:
        click.echo(error.render(), err=True)
        sys.exit(error.exit_code)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except click.Abort:
        click.echo("Aborted!", err=True)
        sys.exit(EXIT_FAILURE)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(EXIT_FAILURE)
    # Without standalone mode, click returns the code of a ``click.exceptions.Exit``.
    sys.exit(result if isinstance(result, int) else 0)
