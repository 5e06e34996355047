"""A Kubernetes program as its stand-in imitates it: its command line and its config file.

A :class:`FakeProgram` holds a program's flag set
(:class:`~nodehost.kube.flags.FlagSet`), the messages it prints for a bad
flag or config file, and the check of that file.  A component's stand-in
(for example :mod:`nodehost.plugins.kubelet.standin`) parses its argv with
:meth:`FakeProgram.parse`, reads its config with
:meth:`FakeProgram.load_config`, then runs
:func:`nodehost.testing.standin.run_standin`.

Every error is one ``Error: ...`` line on stderr (component-base's
``cli.Run``) and exit status 1; ``--help`` prints the flags and exits 0;
``--version`` prints a version marked as a stand-in and exits 0; deprecated
flags print pflag's ``Flag --x has been deprecated, ...`` line on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from nodehost.kube.configfile import read_config_file
from nodehost.kube.flags import FlagSet, HelpRequested, ParsedArgs
from nodehost.kube.goparse import FlagError

#: What ``--version`` prints after ``Kubernetes``.
STANDIN_VERSION = "v1.33.0-nodehost-standin"
EXIT_ERROR = 1


@dataclass(frozen=True)
class FakeProgram:
    """One real program as its stand-in imitates it.

    ``flag_error`` formats a command-line error (``{error}``);
    ``config_error`` formats a config-file error (``{path}``, ``{error}``);
    ``check`` lists what is wrong with a parsed config document;
    ``extra_arguments`` words the error for positional arguments.
    """

    name: str
    flags: FlagSet
    flag_error: str
    config_error: str
    extra_arguments: Callable[[list[str]], str]
    check: Callable[[Any], list[str]]

    def parse(self, argv: Sequence[str]) -> ParsedArgs:
        """Parse ``argv`` like the real program; handle ``--help``/``--version``; exit on errors."""
        try:
            parsed = self.flags.parse_args(argv)
        except HelpRequested:
            self.print_help()
        except FlagError as error:
            self.fail(self.flag_error.format(error=error))
        for warning in parsed.warnings:
            print(warning, file=sys.stderr, flush=True)
        if "help" in parsed.values and parsed.values["help"].config():
            self.print_help()
        version = parsed.values.get("version")
        if version is not None and version.config() != "false":
            print(f"Kubernetes {STANDIN_VERSION}", flush=True)
            raise SystemExit(0)
        if parsed.positional:
            self.fail(self.extra_arguments(parsed.positional))
        return parsed

    def load_config(self, path: str) -> dict[str, Any]:
        """Read and check the config file at ``path``; exit 1 with the program's message if bad."""
        try:
            document = read_config_file(path)
        except ValueError as error:
            self.fail(self.config_error.format(path=path, error=error))
        problems = self.check(document)
        if problems:
            self.fail(self.config_error.format(path=path, error="; ".join(problems)))
        return document

    def fail(self, message: str) -> NoReturn:
        print(f"Error: {message}", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_ERROR)

    def print_help(self) -> NoReturn:
        lines = [
            f"{self.name} (nodehost stand-in: accepts the real program's flags)",
            "",
            "Usage:",
            f"  {self.name} [flags]",
            "",
            "Flags:",
        ]
        for flag in sorted(self.flags, key=lambda flag: flag.name):
            short = f"-{flag.shorthand}, " if flag.shorthand else "    "
            lines.append(f"  {short}--{flag.name} {flag.new_value().type_name}")
        print("\n".join(lines), flush=True)
        raise SystemExit(0)
