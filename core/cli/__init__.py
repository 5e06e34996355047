"""The ``nodehost`` command line: a click group whose commands load lazily.

Each command lives in its own module and is imported only when it runs; the
console script (:mod:`nodehost.entry`) answers ``--help`` and ``version``
without importing click at all.
Every user-facing error is rendered once, in :func:`main`, with its exit code
(see :mod:`nodehost.errors`).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
from typing import Any, NoReturn

import click

from nodehost import __version__
from nodehost.entry import COMMANDS, ROOT_HELP, root_help

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

    def get_help(self, ctx: click.Context) -> str:
        """The root group's help comes from :func:`nodehost.entry.root_help` (one renderer)."""
        return root_help() if ctx.parent is None else super().get_help(ctx)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, self.lazy[name][1]) for name in self.lazy]
        for name in super().list_commands(ctx):
            command = super().get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=80)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(sorted(rows))


LAZY_COMMANDS = dict(COMMANDS)


@click.group(cls=LazyGroup, lazy=LAZY_COMMANDS, context_settings=CONTEXT_SETTINGS, help=ROOT_HELP)
@click.version_option(__version__, prog_name="nodehost", message="%(prog)s %(version)s")
def cli() -> None:
    pass


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and exit with the documented code; never a traceback for a user's mistake.

    With ``--json`` on the command line an error is a JSON object on stdout too
    (:func:`report_error`): a script asking for JSON gets JSON, whatever happens.
    """
    from nodehost.errors import EXIT_FAILURE, NodehostError

    log = sys.modules.get("nodehost.log")  # state to forget only where it was loaded
    if log is not None:
        log.forget_logging()
    as_json = JSON_FLAG in (sys.argv[1:] if argv is None else argv)
    try:
        result = cli.main(args=argv, prog_name="nodehost", standalone_mode=False)
    except NodehostError as error:
        report_error(error.render(), error.exit_code, as_json)
    except click.UsageError as error:
        text = error.format_message() if as_json else usage_line(error)
        report_error(text, error.exit_code, as_json)
    except click.ClickException as error:
        shown = io.StringIO()
        error.show(file=shown)
        text = error.format_message() if as_json else shown.getvalue().rstrip("\n")
        report_error(text, error.exit_code, as_json)
    except click.Abort:
        report_error("Aborted!", EXIT_FAILURE, as_json)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(EXIT_FAILURE)
    # Without standalone mode, click returns the code of a ``click.exceptions.Exit``.
    sys.exit(result if isinstance(result, int) else 0)


def usage_line(error: click.UsageError) -> str:
    """One line for a usage mistake click found (an unknown flag, a missing argument):
    click's message and where the command's help is, as nodehost's own usage errors read."""
    where = f" (see '{error.ctx.command_path} --help')" if error.ctx is not None else ""
    return f"error: {error.format_message()}{where}"


#: The flag that asks any command for JSON.
JSON_FLAG = "--json"


def report_error(text: str, exit_code: int, as_json: bool) -> NoReturn:
    """Print the error ``text`` that ends the command and exit with ``exit_code``.

    ``as_json``: one object on stdout, ``{"error": <first line>, "details":
    [<further lines>], "exit_code": N}`` (``error:`` dropped); otherwise the text
    on stderr (:func:`nodehost.log.print_message`).
    """
    if as_json:
        import json

        first, *rest = text.removeprefix("error: ").split("\n")
        document = {"error": first, "details": rest, "exit_code": exit_code}
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.write(json.dumps(document) + "\n")
            sys.stdout.flush()
    else:
        from nodehost.log import print_message

        print_message(text, "error", exit_code=exit_code)
    sys.exit(exit_code)
