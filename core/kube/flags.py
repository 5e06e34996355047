"""pflag, as the Kubernetes programs use it: flags, flag sets, and the files they feed.

A :class:`FlagSet` holds a program's flags (each a :class:`Flag` with its
:mod:`~nodehost.kube.values` type) and offers the two ways Kubernetes flags
are given:

* :meth:`FlagSet.resolve` -- Origin's ``Resolve`` helper: a mapping of flag
  name to values (``kubeletArguments``), each value ``Set`` in order;
* :meth:`FlagSet.parse_args` -- pflag's command-line parsing (``--name=value``,
  ``--name value``, bare booleans, ``-v 2``, ``--``), with pflag's messages
  (``unknown flag: --foo``), for the stand-ins.

A flag whose value lives in the program's config file names its field
(``config_field``); :meth:`FlagSet.launch` splits settings into that file's
document and the flags that stay on the command line, and
:meth:`FlagSet.check_document` checks such a file read back.  Flags the
program has removed are known too (:class:`RemovedFlag`,
:meth:`FlagSet.translate`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import field
from typing import Any

from nodehost.flagsline import go_quote
from nodehost.frozen import frozen
from nodehost.kube.goparse import FlagError
from nodehost.kube.values import Value, check_config_value

#: Why a program's flag table has ``-h``/``--help`` although the upstream listing does not.
COBRA_HELP_REASON = "cobra registers -h/--help on every command"
#: Why a program's flag table has a logging flag the upstream listing does not.
NEWER_LOGGING_REASON = (
    "a component-base logging flag (logsapi.AddFlags) newer than the pinned logs options.go, "
    "which registers only the JSON split-stream pair"
)


class HelpRequested(Exception):
    """``-h``/``--help`` was given and the program does not define it as a flag."""


@frozen
class Flag:
    """One flag of a program.

    ``value``        makes a fresh :class:`Value` (a Value class or a factory).
    ``shorthand``    the one-letter form (``v`` for ``-v``), if any.
    ``deprecated``   pflag's deprecation message; the flag still works.
    ``config_field`` the dotted path of the field in the program's config file
                     that this flag sets (``authentication.webhook.enabled``),
                     or ``""`` when the value is only accepted as a flag.
    """

    name: str
    value: Callable[[], Value]
    shorthand: str = ""
    deprecated: str = ""
    config_field: str = ""

    def new_value(self) -> Value:
        return self.value()

    @property
    def display_name(self) -> str:
        """How pflag names the flag in errors: ``--port`` or ``-v, --v``."""
        return f"-{self.shorthand}, --{self.name}" if self.shorthand else f"--{self.name}"


@frozen
class RemovedFlag:
    """A flag an older release accepted and the current program rejects.

    ``removed_in`` names the release (``v1.24``), ``reason`` says why or what
    took over, and ``replacement`` is the current flag that means the same
    thing (its values carry over), or ``""`` when the setting is simply gone.
    """

    name: str
    removed_in: str
    reason: str
    replacement: str = ""

    def describe(self) -> str:
        """One clause for a warning: what happened to the flag and what nodehost does."""
        action = (
            f"nodehost passes its values as {self.replacement}"
            if self.replacement
            else "nodehost drops it"
        )
        return f"removed in {self.removed_in} ({self.reason}); {action}"


@frozen
class Translation:
    """What :meth:`FlagSet.translate` did with one removed key (see :class:`RemovedFlag`)."""

    key: str
    removed: RemovedFlag
    ignored: bool = False  # the replacement was given too, so these values were not used


@frozen
class ArgumentError:
    """One key of an arguments mapping that did not resolve (Origin's two errors).

    ``unknown`` -- the key is not a flag (``value`` is the key, detail
    ``is not a valid flag``); otherwise ``value`` is the first rejected value
    and ``detail`` ``could not be set: <Go error>``.
    """

    key: str
    value: str
    detail: str
    unknown: bool


@frozen
class Resolution:
    """The result of :meth:`FlagSet.resolve`: the set values and the errors."""

    values: dict[str, Value] = field(default_factory=dict)
    errors: list[ArgumentError] = field(default_factory=list)


@frozen
class Launch:
    """A program's settings as nodehost runs it (see :meth:`FlagSet.launch`).

    ``document`` the config file's mapping; ``flags`` the ``--name=value``
    arguments that follow ``--config``; ``values`` every parsed setting by name.
    """

    document: dict[str, Any]
    flags: tuple[str, ...]
    values: Mapping[str, Value]


@frozen
class ParsedArgs:
    """The result of :meth:`FlagSet.parse_args`.

    ``values`` holds the flags given (by canonical name), ``positional`` the
    other arguments, ``warnings`` pflag's deprecation lines
    (``Flag --x has been deprecated, ...``) in order.
    """

    values: dict[str, Value] = field(default_factory=dict)
    positional: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class FlagSet:
    """The flags of one program (``kubelet``, ``kube-proxy``), looked up by exact name."""

    def __init__(
        self, program: str, flags: Iterable[Flag], removed: Iterable[RemovedFlag] = ()
    ) -> None:
        self.program = program
        self.removed: Mapping[str, RemovedFlag] = {flag.name: flag for flag in removed}
        self._flags: dict[str, Flag] = {}
        self._shorthands: dict[str, Flag] = {}
        for flag in flags:
            if flag.name in self._flags:
                raise ValueError(f"{program}: flag --{flag.name} defined twice")
            self._flags[flag.name] = flag
            if flag.shorthand:
                self._shorthands[flag.shorthand] = flag

    def __contains__(self, name: object) -> bool:
        return name in self._flags

    def __iter__(self):
        return iter(self._flags.values())

    def __len__(self) -> int:
        return len(self._flags)

    def lookup(self, name: str) -> Flag | None:
        """The flag called exactly ``name`` (no dashes), or None."""
        return self._flags.get(name)

    def translate(
        self, arguments: Mapping[str, Sequence[str]]
    ) -> tuple[dict[str, list[str]], list[Translation]]:
        """Drop or rename the keys of :attr:`removed` flags, so old settings keep working.

        A removed key with a replacement passes its values to the replacement,
        unless the replacement key is given too (then it wins and the old key's
        values are ignored); a removed key without one is dropped.  Other keys
        are copied unchanged.  Returns the new mapping and one
        :class:`Translation` per removed key, in sorted key order.
        """
        result = {key: list(values) for key, values in arguments.items()}
        translations = []
        for key in sorted(arguments):
            removed = self.removed.get(key)
            if removed is None or key in self._flags:
                continue
            values = result.pop(key)
            ignored = bool(removed.replacement) and removed.replacement in arguments
            if removed.replacement and not ignored:
                result[removed.replacement] = values
            translations.append(Translation(key, removed, ignored))
        return result, translations

    def resolve(self, arguments: Mapping[str, Sequence[str]]) -> Resolution:
        """Origin's ``Resolve``: set every value of every key, in sorted key order.

        An unknown key and the first rejected value of a key are errors (see
        :class:`ArgumentError`); a key whose value failed is left out of
        ``values``.  A key with an empty list is known but sets nothing.
        """
        resolution = Resolution()
        for key in sorted(arguments):
            flag = self.lookup(key)
            if flag is None:
                resolution.errors.append(ArgumentError(key, key, "is not a valid flag", True))
                continue
            value = flag.new_value()
            try:
                for text in arguments[key]:
                    failing = text
                    value.set(text)
            except FlagError as error:
                resolution.errors.append(
                    ArgumentError(key, failing, f"could not be set: {error}", False)
                )
                continue
            if arguments[key]:
                resolution.values[key] = value
        return resolution

    def config_document(self, values: Mapping[str, Value]) -> dict[str, Any]:
        """The nested config-file mapping that the config-backed ``values`` set.

        Flags without a ``config_field`` are ignored; the caller passes them on
        the command line.
        """
        document: dict[str, Any] = {}
        for name, value in values.items():
            flag = self._flags[name]
            if flag.config_field:
                set_field(document, flag.config_field, value.config())
        return document

    def launch(
        self, arguments: Mapping[str, Sequence[str]], *, api_version: str, kind: str
    ) -> Launch:
        """Split ``arguments`` the way nodehost runs the program: a config file and flags.

        Every value is parsed first; raise :class:`FlagError` listing each key
        that is not a flag of this program or whose value it would reject.
        The document starts with ``apiVersion`` and ``kind``, then the
        config-backed settings (sorted); the flags are the other keys, as
        :func:`flag_arguments` renders them.
        """
        resolution = self.resolve(arguments)
        if resolution.errors:
            raise FlagError(
                f"invalid {self.program} arguments: "
                + "; ".join(
                    f"{error.key} is not a {self.program} flag"
                    if error.unknown
                    else f"{error.key}={error.value!r} {error.detail}"
                    for error in resolution.errors
                )
            )
        document: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
        document.update(sorted(self.config_document(resolution.values).items()))
        command_line = {
            key: values for key, values in arguments.items() if not self._flags[key].config_field
        }
        return Launch(document, tuple(flag_arguments(command_line)), resolution.values)

    def check_document(
        self,
        document: Any,
        *,
        api_version: str,
        kind: str,
        fields: frozenset[str],
        nested: frozenset[str] = frozenset(),
    ) -> list[str]:
        """Problems with a config-file document of this program, one line each.

        The document must be a mapping with ``api_version`` and ``kind``, only
        top-level keys from ``fields``, inside every structure the flags reach
        only the fields known there (the flags' dotted ``config_field`` s and
        ``nested``: ``authentication.x509.bogus: unknown field``), and for
        every config-backed flag whose field is present a value of that flag's
        kind (``port: expected an integer, got "x"``).
        """
        if not isinstance(document, dict):
            return [f"expected a {kind} mapping, got {type(document).__name__}"]
        problems = []
        if document.get("apiVersion") != api_version:
            problems.append(
                f"apiVersion: expected {api_version!r}, got {document.get('apiVersion')!r}"
            )
        if document.get("kind") != kind:
            problems.append(f"kind: expected {kind!r}, got {document.get('kind')!r}")
        for key in document:
            if key not in fields and key not in ("apiVersion", "kind"):
                problems.append(f"{key}: unknown field")
        known = {f.config_field for f in self._flags.values() if f.config_field} | set(nested)
        structures = {
            path.rsplit(".", n)[0] for path in known for n in range(1, path.count(".") + 1)
        }
        problems.extend(_unknown_nested(document, "", known, structures))
        for flag in self._flags.values():
            obj = get_field(document, flag.config_field, _MISSING) if flag.config_field else None
            if obj is _MISSING or obj is None:
                continue
            expected = flag.new_value().config_kind
            if not check_config_value(expected, obj):
                problems.append(f"{flag.config_field}: expected {expected}, got {obj!r}")
        return problems

    # --- command-line parsing (pflag's parseArgs) ----------------------------------

    def parse_args(self, argv: Sequence[str]) -> ParsedArgs:
        """Parse a command line as pflag does (interspersed, ``_`` read as ``-`` in names).

        Raise :class:`FlagError` with pflag's message (``unknown flag: --foo``,
        ``flag needs an argument: --port``, ``invalid argument "x" for "--port"
        flag: ...``); raise :class:`HelpRequested` for an undefined ``--help``/``-h``.
        """
        parsed = ParsedArgs()
        pending = list(argv)
        while pending:
            arg = pending.pop(0)
            if len(arg) < 2 or arg[0] != "-":
                parsed.positional.append(arg)
            elif arg == "--":
                parsed.positional.extend(pending)
                break
            elif arg[1] == "-":
                self._parse_long(arg, pending, parsed)
            else:
                self._parse_short(arg[1:], pending, parsed)
        return parsed

    def _parse_long(self, arg: str, pending: list[str], parsed: ParsedArgs) -> None:
        body = arg[2:]
        if not body or body[0] in "-=":
            raise FlagError(f"bad flag syntax: {arg}")
        name, has_value, text = body.partition("=")
        name = name.replace("_", "-")
        flag = self.lookup(name)
        if flag is None:
            if name == "help":
                raise HelpRequested()
            raise FlagError(f"unknown flag: --{name}")
        if not has_value:
            if flag.new_value().is_bool:
                text = "true"
            elif pending:
                text = pending.pop(0)
            else:
                raise FlagError(f"flag needs an argument: {arg}")
        self._set(flag, text, parsed)

    def _parse_short(self, shorthands: str, pending: list[str], parsed: ParsedArgs) -> None:
        while shorthands:
            letter = shorthands[0]
            flag = self._shorthands.get(letter)
            if flag is None:
                if letter == "h":
                    raise HelpRequested()
                raise FlagError(f"unknown shorthand flag: '{letter}' in -{shorthands}")
            if len(shorthands) > 2 and shorthands[1] == "=":
                text, rest = shorthands[2:], ""
            elif flag.new_value().is_bool:
                text, rest = "true", shorthands[1:]
            elif len(shorthands) > 1:
                text, rest = shorthands[1:], ""
            elif pending:
                text, rest = pending.pop(0), ""
            else:
                raise FlagError(f"flag needs an argument: '{letter}' in -{shorthands}")
            self._set(flag, text, parsed)
            shorthands = rest

    @staticmethod
    def _set(flag: Flag, text: str, parsed: ParsedArgs) -> None:
        value = parsed.values.get(flag.name) or flag.new_value()
        try:
            value.set(text)
        except FlagError as error:
            raise FlagError(
                f"invalid argument {go_quote(text)} for {go_quote(flag.display_name)} flag: {error}"
            ) from None
        parsed.values[flag.name] = value
        if flag.deprecated:
            parsed.warnings.append(f"Flag --{flag.name} has been deprecated, {flag.deprecated}")


def flag_arguments(arguments: Mapping[str, Sequence[str]]) -> list[str]:
    """``--key=value`` for every value, keys sorted, values in order (Origin's flag output)."""
    return [f"--{key}={value}" for key in sorted(arguments) for value in arguments[key]]


def set_field(document: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``document[a][b][c] = value`` for ``dotted`` ``a.b.c``, creating mappings."""
    *parents, last = dotted.split(".")
    for part in parents:
        document = document.setdefault(part, {})
    document[last] = value


_MISSING = object()


def _unknown_nested(
    value: Mapping[str, Any], path: str, known: set[str], structures: set[str]
) -> list[str]:
    """``<path>: unknown field`` for keys of a known structure that it does not have."""
    problems = []
    for key, child in value.items():
        here = f"{path}.{key}" if path else str(key)
        if here in structures and isinstance(child, Mapping):
            problems.extend(_unknown_nested(child, here, known, structures))
        elif path and here not in known:
            problems.append(f"{here}: unknown field")
    return problems


def get_field(document: Mapping[str, Any], dotted: str, default: Any = None) -> Any:
    """``document[a][b][c]`` for ``dotted`` ``a.b.c``, or ``default`` if any level is missing."""
    current: Any = document
    for part in dotted.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return default
        current = current[part]
    return current
