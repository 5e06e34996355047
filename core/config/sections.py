"""Reading a plugin's own NodeConfig section, with every problem at once.

A component's or network provider's settings live in a top-level section it
owns (its record's ``config_sections`` / ``config_section``).
:class:`SectionReader` reads typed values out of the raw mapping with
defaults and records a :class:`~nodehost.Problem` at ``<section>.<key>`` for
each bad value; :meth:`SectionReader.unknown_keys` then reports every key
nothing read, with a did-you-mean.  Use the same
reader in validation (report ``problems``) and in ``plan()`` (use the values)::

    reader = SectionReader("bridgeNetwork", config.extra.get("bridgeNetwork"))
    cidr = reader.cidr("podCIDR", required=True)
    conf_dir = reader.absolute_path("cniConfDir", DEFAULT_CONF_DIR)
    reader.unknown_keys()
    return reader.problems
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, overload

from nodehost.pluginhost.records import Problem, ProblemKind

#: Linux interface names: 1-15 characters, no '/', ':', whitespace.
_LINK_NAME = re.compile(r"^[^/:\s]{1,15}$")


class SectionReader:
    """Typed access to one raw config section; bad values give ``problems`` and the default."""

    def __init__(self, section: str, raw: object) -> None:
        """``raw`` is the section as loaded: a mapping, or None when it is absent (all defaults)."""
        self.section = section
        self.problems: list[Problem] = []
        self._read: set[str] = set()
        if raw is None:
            raw = {}
        elif not isinstance(raw, Mapping):
            self.problems.append(Problem.invalid(section, str(raw), "must be a mapping"))
            raw = {}
        self.raw: Mapping[str, Any] = raw

    def path(self, key: str) -> str:
        return f"{self.section}.{key}"

    def _get(self, key: str) -> Any:
        self._read.add(key)
        return self.raw.get(key)

    def raw_value(self, key: str) -> Any:
        """The value at ``key`` as loaded (None when unset), marked as read: for a nested
        mapping that a reader of its own (at ``path(key)``) reads."""
        return self._get(key)

    def invalid(self, key: str, value: Any, detail: str) -> None:
        """Record that ``value`` at ``key`` is wrong (``<section>.<key>: Invalid value``)."""
        shown = value if isinstance(value, (str, int, float, bool)) else str(value)
        self.problems.append(Problem.invalid(self.path(key), shown, detail))

    @overload
    def text(self, key: str, default: str, *, required: bool = False) -> str: ...

    @overload
    def text(self, key: str, default: None = None, *, required: bool = False) -> str | None: ...

    def text(self, key: str, default: str | None = None, *, required: bool = False) -> str | None:
        """A string (an empty one counts as unset); ``default`` when unset or not a string."""
        value = self._get(key)
        if value is None or value == "":
            if required:
                self.problems.append(Problem.required(self.path(key)))
            return default
        if not isinstance(value, str):
            self.invalid(key, value, "must be a string")
            return default
        return value

    @overload
    def choice(self, key: str, allowed: Sequence[str], default: str) -> str: ...

    @overload
    def choice(self, key: str, allowed: Sequence[str], default: None = None) -> str | None: ...

    def choice(self, key: str, allowed: Sequence[str], default: str | None = None) -> str | None:
        """One of ``allowed`` (``Unsupported value`` otherwise); ``default`` when unset or bad."""
        value = self.text(key, default)
        if value is not None and value not in allowed:
            self.problems.append(Problem.not_supported(self.path(key), value, allowed))
            return default
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self._get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.invalid(key, value, "must be true or false")
            return default
        return value

    @overload
    def absolute_path(self, key: str, default: str) -> str: ...

    @overload
    def absolute_path(self, key: str, default: None = None) -> str | None: ...

    def absolute_path(self, key: str, default: str | None = None) -> str | None:
        """An absolute path, normalised; ``default`` when unset or relative."""
        value = self.text(key, default)
        if value is None:
            return None
        if not os.path.isabs(value):
            self.invalid(key, value, "must be an absolute path")
            return default
        return os.path.normpath(value)

    def relative_path(self, key: str, base_dir: str) -> str | None:
        """A path, resolved against ``base_dir`` (the config file's folder); None if unset."""
        value = self._get(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            self.invalid(key, value, "must be a path")
            return None
        return os.path.normpath(os.path.join(base_dir, value))

    def names(self, key: str, what: str) -> tuple[str, ...] | None:
        """A list of strings (``what`` words the error: "record source names"); None if unset."""
        value = self._get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            self.invalid(key, value, f"must be a list of {what}")
            return None
        return tuple(value)

    @overload
    def integer(self, key: str, default: int, *, minimum: int = ..., maximum: int = ...) -> int: ...

    @overload
    def integer(
        self, key: str, default: None = None, *, minimum: int = ..., maximum: int = ...
    ) -> int | None: ...

    def integer(
        self,
        key: str,
        default: int | None = None,
        *,
        minimum: int = -(1 << 63),
        maximum: int = (1 << 63) - 1,
    ) -> int | None:
        """A whole number from ``minimum`` to ``maximum``; ``default`` when unset or bad."""
        value = self._get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.invalid(key, value, "must be a whole number")
            return default
        if not minimum <= value <= maximum:
            self.invalid(key, value, f"must be between {minimum} and {maximum}")
            return default
        return value

    def host_port(self, key: str, default: str) -> tuple[str, int]:
        """A listen address ``host:port`` (``[v6]:port``; port 1-65535): ``(host, port)``.

        An empty host means every address (``:9100``); a bad value gives a
        problem and ``default`` (which must itself be valid).
        """
        from nodehost.config.hostport import split_host_port

        value = self.text(key, default)
        try:
            host, port = split_host_port(value)
            number = int(port)
            if not 1 <= number <= 65535:
                raise ValueError(port)
            if host:
                ipaddress.ip_address(host)
        except ValueError:
            self.invalid(key, value, "must be HOST:PORT with an IP address and a port 1-65535")
            host, port = split_host_port(default)
            number = int(port)
        return host, number

    def ip_address(self, key: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
        """An IP address (``10.0.0.1``, ``fd00::1``); None when unset or bad."""
        value = self.text(key)
        if value is None:
            return None
        try:
            return ipaddress.ip_address(value)
        except ValueError:
            self.invalid(key, value, "must be an IP address such as 192.168.1.1")
            return None

    def absolute_paths(self, key: str, default: Sequence[str]) -> tuple[str, ...]:
        value = self._get(key)
        if value is None:
            return tuple(default)
        if isinstance(value, str) or not isinstance(value, Sequence) or not value:
            self.invalid(key, value, "must be a non-empty list of absolute paths")
            return tuple(default)
        bad = [item for item in value if not isinstance(item, str) or not os.path.isabs(item)]
        if bad:
            self.invalid(key, value, f"must be absolute paths: {', '.join(map(str, bad))}")
            return tuple(default)
        return tuple(os.path.normpath(item) for item in value)

    def link_name(self, key: str, default: str) -> str:
        value = self.text(key, default)
        assert value is not None
        if not _LINK_NAME.match(value) or value in (".", ".."):
            self.invalid(
                key,
                value,
                "must be a network interface name: 1-15 characters, no '/', ':' or spaces",
            )
            return default
        return value

    def cidr(
        self, key: str, *, required: bool = False, min_addresses: int = 4
    ) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
        """A network in CIDR form with no host bits set, holding at least ``min_addresses``."""
        value = self.text(key, required=required)
        if value is None:
            return None
        try:
            network = ipaddress.ip_network(value, strict=True)
        except ValueError as error:
            self.invalid(key, value, f"must be a CIDR such as 10.244.1.0/24: {error}")
            return None
        if network.num_addresses < min_addresses:
            self.invalid(key, value, f"too small: it must hold at least {min_addresses} addresses")
            return None
        return network

    def cidrs(
        self, key: str, *, min_prefix: int = 0
    ) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] | None:
        """A list of CIDRs (host bits ignored), each with a prefix of ``min_prefix`` bits or more.

        None when unset or bad; the problem names the first bad item by its index.
        """
        value = self._get(key)
        if value is None:
            return None
        try:
            return parse_cidr_list(value, min_prefix)
        except CidrListError as error:
            path = self.path(key) if error.index is None else f"{self.path(key)}[{error.index}]"
            self.problems.append(Problem.invalid(path, error.value, error.detail))
            return None

    def duration(self, key: str, default: str) -> float:
        """A Go duration (``90s``, ``5m``) in seconds; must be positive."""
        from nodehost.config.goduration import parse_go_duration

        value = self.text(key, default)
        assert value is not None
        try:
            seconds = parse_go_duration(value)
        except ValueError as error:
            self.invalid(key, value, f"must be a duration such as 5m: {error}")
            return parse_go_duration(default)
        if seconds <= 0:
            self.invalid(key, value, "must be positive")
            return parse_go_duration(default)
        return seconds

    def unknown_keys(self) -> None:
        """A problem for every key no accessor read, suggesting the closest known one."""
        for key in self.raw:
            if key in self._read:
                continue
            from nodehost.suggest import closest  # difflib: for an unknown key only

            detail = "unknown field"
            suggestion = closest(str(key), sorted(self._read))
            if suggestion is not None:
                detail += f'; did you mean "{suggestion}"?'
            self.problems.append(Problem.forbidden(self.path(str(key)), detail))


def idle_section_problems(
    config: Any, section: str, problems: Sequence[Problem], runs_when: str
) -> list[Problem]:
    """The problems of ``section`` when its component will not run with this config.

    A section set in the file is always checked: its bad content (``problems``,
    from the same reader the component uses) stays an error, except a missing
    required value, which matters only to a component that runs; and a warning
    says the section has no effect unless ``runs_when``.  Nothing when the
    section is not in the file.
    """
    if section not in config.extra:
        return []
    kept = [
        problem
        for problem in problems
        if problem.kind is not ProblemKind.REQUIRED
        and (problem.path == section or problem.path.startswith((f"{section}.", f"{section}[")))
    ]
    return [*kept, Problem.no_effect(section, f"it is used only when {runs_when}")]


def section_schema(
    description: str, properties: Mapping[str, Mapping[str, Any]], required: Sequence[str] = ()
) -> dict[str, Any]:
    """A JSON Schema (draft-07) of a plugin's section, for its record's ``config_schema``.

    ``properties`` maps each key to its schema (``type``, ``description``,
    ``default``, ``enum``...).  Unknown keys are refused, as
    :meth:`SectionReader.unknown_keys` refuses them; ``null`` (an empty
    section in YAML) is accepted.  ``nodehost config schema`` shows it.
    """
    schema: dict[str, Any] = {
        "type": ["object", "null"],
        "description": description,
        "properties": {key: dict(value) for key, value in properties.items()},
        "additionalProperties": False,
    }
    if required:
        schema["required"] = list(required)
    return schema


def parse_cidr(value: object) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """``value`` as a network (host bits ignored), or None when it is not a CIDR."""
    if not isinstance(value, str) or "/" not in value:
        return None
    try:
        return ipaddress.ip_network(value.strip(), strict=False)
    except ValueError:
        return None


class CidrListError(ValueError):
    """A list of CIDRs is wrong: ``index`` (None for the list itself), ``value`` and ``detail``."""

    def __init__(self, index: int | None, value: str, detail: str) -> None:
        super().__init__(detail)
        self.index, self.value, self.detail = index, value, detail


def parse_cidr_list(
    value: object, min_prefix: int = 0
) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """``value`` (a list of CIDR strings) as networks; :class:`CidrListError` for a bad one."""
    if not isinstance(value, (list, tuple)):
        raise CidrListError(None, str(value), "must be a list of CIDRs")
    networks = []
    for index, item in enumerate(value):
        network = parse_cidr(item)
        if network is None or network.prefixlen < min_prefix:
            detail = f"must be a CIDR such as 172.30.0.0/16 (a prefix of {min_prefix} bits or more)"
            raise CidrListError(index, str(item), detail)
        networks.append(network)
    return tuple(networks)
