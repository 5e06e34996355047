"""The small frozen records that plugins return to the core.

* :class:`ComponentRecord` -- returned by ``nodehost_components``: one
  component the host can run (kubelet, sdn, proxy, dns, bootstrap, or a
  third party's).
* :class:`NetworkProviderRecord` -- returned by ``nodehost_network_providers``:
  one way of setting up the node's pod network.
* :class:`Problem` -- returned by ``nodehost_validate_config``: one error or
  warning about the configuration, with Origin's field path and wording.
* :class:`Topology` -- how a provider's pods reach the network (through the
  host, or on a master link's layer 2); the CNI checks adapt to it.
* :class:`ApiRoute` -- returned by ``nodehost_api_route``: the kubeconfig the
  other components reach the API server through, and the component serving it.

The core selects records by name; a plugin never has to check "is this mine?".
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from nodehost.frozen import frozen

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.component import Component, NetworkProvider
    from nodehost.options import StartOptions

_NAME = re.compile(r"^[a-z][a-z0-9-]*$")


def check_name(kind: str, name: str) -> None:
    """Raise ``ValueError`` unless ``name`` is a lower-case identifier (``a-z0-9-``)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"{kind} name {name!r} must be lower-case letters, digits and '-'")


def check_words(owner: str, field_name: str, value: object) -> None:
    """Raise ``ValueError`` unless ``value`` is a tuple of non-empty strings.

    A plain string is refused by name: ``after="proxy"`` would otherwise be read
    as the five names ``p``, ``r``, ``o``, ``x``, ``y``.
    """
    if isinstance(value, str):
        raise ValueError(
            f"{owner}: {field_name} must be a tuple of names, not the string {value!r} "
            f"(write ({value!r},))"
        )
    if not isinstance(value, tuple):
        raise ValueError(f"{owner}: {field_name} must be a tuple, not {type(value).__name__}")
    for word in value:
        if not isinstance(word, str) or not word:
            raise ValueError(f"{owner}: {field_name} holds {word!r}, not a non-empty string")


def check_mapping(owner: str, field_name: str, value: object) -> None:
    """Raise ``ValueError`` unless ``value`` is a mapping keyed by strings."""
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise ValueError(f"{owner}: {field_name} must be a mapping keyed by strings")


class ValidationScope(enum.IntEnum):
    """Which of Origin's validators a component belongs with (:ref:`origin-validation-choice`).

    The host validates with ``ValidateNodeConfig`` (``NODE``) unless the
    selection is exactly the *network-only set*:

    * ``NODE``: the component needs Origin's full ``ValidateNodeConfig`` (the
      kubelet; the default for a component record);
    * ``IN_CLUSTER``: the component is one of Origin's network-only set
      (``dns``, ``sdn``, ``proxy``).  A selection holding every ``IN_CLUSTER``
      component and nothing that needs ``NODE`` is validated with
      ``ValidateInClusterNodeConfig`` and runs against ``--kubeconfig``
      (empty: the in-cluster service account) instead of ``masterKubeConfig``;
    * ``NETWORK``: the component needs no more than
      ``ValidateInClusterNetworkNodeConfig`` and has no say in the choice
      (nodehost's own helpers: ``runtime``, ``bootstrap``).  This scope is also
      what ``nodehost network`` validates with (Origin's ``start network``).
    """

    NETWORK = 1
    IN_CLUSTER = 2
    NODE = 3


@frozen
class ComponentRecord:
    """One component the host can select, order and run."""

    #: unique lower-case name used by ``--components``/``--enable``.
    name: str
    #: one line for ``nodehost components``.
    summary: str
    #: the object that does the work (see :mod:`nodehost.component`).
    component: Component
    #: whether the component is in the default selection.
    default: bool = True
    #: optional predicate over the start options; when it returns true the component joins the
    #: default selection (e.g. bootstrap when ``--bootstrap-config-name`` is given).
    enable_if: Callable[[StartOptions], bool] | None = None
    #: group names this component belongs to (``network``); every component is also in ``all``.
    groups: tuple[str, ...] = ()
    #: other names accepted on the command line (Origin's ``plugins``).
    aliases: tuple[str, ...] = ()
    #: components this one starts after *if they are selected* (ordering only, like systemd's
    #: ``After=``).
    after: tuple[str, ...] = ()
    #: components (or groups: ``all`` is every other component) that start after this one *if
    #: they are selected* -- ``after`` seen from the other side, like systemd's ``Before=``; a
    #: component that others need first (a local control plane) says so itself. A component named
    #: in its own ``after`` or ``requires`` is left out (two components before ``all``: one names
    #: the other).
    before: tuple[str, ...] = ()
    #: components that must be selected too; selecting this one without them is an error at plan
    #: time.
    requires: tuple[str, ...] = ()
    #: which of Origin's validators it belongs with (see :class:`ValidationScope`).
    validation_scope: ValidationScope = ValidationScope.NODE
    #: whether ``nodehost start --write-flags`` prints this component's arguments (Origin prints
    #: the kubelet's).
    write_flags: bool = False
    #: whether this component runs the network provider ``networkConfig.networkPluginName``
    #: names (the built-in ``sdn`` does): a provider's section is in effect only while such a
    #: component is selected (:func:`nodehost.cni.selects_provider`).
    runs_network_providers: bool = False
    #: top-level NodeConfig keys this component owns and validates (known to the loader: no
    #: unknown-key warning). Read them with :class:`nodehost.config.sections.SectionReader` from
    #: ``config.extra[<section>]``.
    config_sections: tuple[str, ...] = ()
    #: a JSON Schema (draft-07, a JSON-ready mapping) per owned section, by section name;
    #: ``nodehost config schema`` includes it so editors complete and check the section's keys.
    config_schema: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: stand-in programs for the programs this component runs, by program name (``argv[0]`` of
    #: its :class:`~nodehost.component.ProcessSpec`) -> a console script or absolute path;
    #: ``nodehost start --standins=missing|always`` uses them (the built-in components name
    #: theirs the same way).
    standins: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_name("component", self.name)
        owner = f"component {self.name}"
        for name in ("groups", "aliases", "after", "before", "requires", "config_sections"):
            check_words(owner, name, getattr(self, name))
        check_mapping(owner, "config_schema", self.config_schema)
        check_mapping(owner, "standins", self.standins)
        for name in ("default", "write_flags", "runs_network_providers"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{owner}: {name} must be True or False")
        if not isinstance(self.validation_scope, ValidationScope):
            raise ValueError(f"{owner}: validation_scope must be a nodehost.ValidationScope")
        for alias in self.aliases:
            check_name("component alias", alias)
        for group in self.groups:
            check_name("group", group)
        unowned = sorted(set(self.config_schema) - set(self.config_sections))
        if unowned:
            raise ValueError(
                f"component {self.name}: config_schema names sections it does not own "
                f"({', '.join(unowned)}); list them in config_sections"
            )


class Topology(enum.StrEnum):
    """Where a network provider puts its pods, which decides how nodehost checks the network.

    * ``HOST``: routed or bridged through the host -- a link on the host (a
      bridge, the host end of a veth) holds the pods' gateway, so the pod CIDR
      must not overlap any host address, and a pod must reach the gateway on
      this host (``bridge``, ``ptp``);
    * ``L2``: the pods share the layer-2 segment of a *master* link (macvlan,
      ipvlan) -- the master must exist and be up, the pod CIDR must lie in the
      master's network (the pods are on that network by design), and two pods
      on the master must reach each other; the gateway is a router on that
      segment, which the host itself cannot reach through the master.
    """

    HOST = "host"
    L2 = "l2"


@frozen
class NetworkProviderRecord:
    """One network provider, selected by ``networkConfig.networkPluginName``."""

    #: the name users put in the config (matched case-insensitively).
    name: str
    #: one line for listings.
    summary: str
    #: the object that prepares, starts, checks and stops the network.
    provider: NetworkProvider
    #: other accepted names.
    aliases: tuple[str, ...] = ()
    #: the top-level NodeConfig key this provider owns and validates (``None`` when it has no
    #: settings of its own).
    config_section: str | None = None
    #: a JSON Schema (draft-07) of that section, for ``nodehost config schema`` (``None``: the
    #: section is listed without keys).
    config_schema: Mapping[str, Any] | None = None
    #: :class:`Topology`: through the host (default) or on a master link's layer 2;
    #: ``conflist_plan``, ``nodehost network check`` and ``nodehost.testing.cni.exercise`` check
    #: the network accordingly.
    topology: Topology = Topology.HOST

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"network provider name {self.name!r} must be a non-empty string")
        check_words(f"network provider {self.name}", "aliases", self.aliases)
        if self.config_section is not None and (
            not isinstance(self.config_section, str) or not self.config_section
        ):
            raise ValueError(
                f"network provider {self.name}: config_section must be a string or None"
            )
        if self.config_schema is not None:
            check_mapping(f"network provider {self.name}", "config_schema", self.config_schema)
        if self.config_schema is not None and self.config_section is None:
            raise ValueError(f"network provider {self.name}: config_schema needs a config_section")
        if not isinstance(self.topology, Topology):
            raise ValueError(f"network provider {self.name}: topology must be a nodehost.Topology")


_FLAG = re.compile(r"^--[a-z][a-z0-9]*(-[a-z0-9]+)*$")
#: An option's own variable (few declare one); compiled on first use (``re``'s cache),
#: not at import.
_VARIABLE = r"^NODEHOST_[A-Z0-9_]+$"
#: The value types an option may declare (``bool``: a flag, given or not).
OPTION_TYPES: tuple[type, ...] = (str, int, float, bool)


@frozen
class OptionRecord:
    """One ``nodehost start`` option a plugin declares (``nodehost_options``).

    ``name``
        the long flag, ``--`` then lower-case words joined by ``-``.
    ``help``
        one or two sentences for ``nodehost start --help``.
    ``type``
        ``str``, ``int``, ``float``, or ``bool`` (a flag, given or not).
    ``default``
        the value when neither the flag nor its variable is given (``None``:
        not given; a ``bool`` flag defaults to False).
    ``choices``
        the accepted values of a ``str`` option (empty: any).
    ``multiple``
        repeatable; the value is then a tuple of every one given.
    ``metavar``
        the placeholder shown in help (``DIR``, ``DURATION``).
    ``envvar``
        the variable that gives it when the flag is not given; by default
        ``NODEHOST_`` and the flag (``--my-flag``: ``NODEHOST_MY_FLAG``);
        always ``NODEHOST_*``.

    The value reaches the plugin as ``options.plugin_values[record.dest]``
    (:class:`nodehost.options.StartOptions`, in every hook and plan context
    that has the options).  A record that breaks these rules, or a name or
    variable another option already has, fails its plugin alone.
    """

    name: str
    help: str
    type: type = str
    default: Any = None
    choices: tuple[str, ...] = ()
    multiple: bool = False
    metavar: str | None = None
    envvar: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _FLAG.match(self.name):
            raise ValueError(
                f"option name {self.name!r} must be '--' and lower-case words joined by '-'"
            )
        owner = f"option {self.name}"
        if not isinstance(self.help, str) or not self.help.strip():
            raise ValueError(f"{owner}: help must be a non-empty string")
        if self.type not in OPTION_TYPES:
            raise ValueError(f"{owner}: type must be one of str, int, float, bool")
        check_words(owner, "choices", self.choices)
        if self.choices and self.type is not str:
            raise ValueError(f"{owner}: choices need type str")
        if not isinstance(self.multiple, bool):
            raise ValueError(f"{owner}: multiple must be True or False")
        if self.metavar is not None and not isinstance(self.metavar, str):
            raise ValueError(f"{owner}: metavar must be a string or None")
        if self.envvar is not None and (
            not isinstance(self.envvar, str) or not re.match(_VARIABLE, self.envvar)
        ):
            raise ValueError(f"{owner}: envvar {self.envvar!r} must be NODEHOST_ and A-Z0-9_")
        self._check_default(owner)

    def _check_default(self, owner: str) -> None:
        values = self.default if self.multiple and self.default is not None else (self.default,)
        if self.multiple and self.default is not None and not isinstance(self.default, tuple):
            raise ValueError(f"{owner}: the default of a multiple option must be a tuple")
        for value in values:
            if value is None:
                continue
            if type(value) is not self.type and not (self.type is float and type(value) is int):
                raise ValueError(f"{owner}: default {value!r} is not a {self.type.__name__}")
            if self.choices and value not in self.choices:
                raise ValueError(f"{owner}: default {value!r} is not one of its choices")

    @property
    def dest(self) -> str:
        """The key of the value in ``StartOptions.plugin_values``: ``--my-flag`` -> ``my_flag``."""
        return self.name.removeprefix("--").replace("-", "_")

    @property
    def variable(self) -> str:
        """The environment variable that gives the option."""
        return self.envvar or "NODEHOST_" + self.dest.upper()


@frozen
class ApiRoute:
    """The node's API clients go through ``component``, with ``kubeconfig``.

    ``component`` is a selected component whose plan writes ``kubeconfig`` (a
    :class:`~nodehost.component.FileSpec`) and serves what it names (a node-local
    load balancer); ``kubeconfig`` is an absolute path.  Every other component
    plans with ``masterKubeConfig`` set to it and starts after ``component``.
    ``source`` is the kubeconfig it stands for (``masterKubeConfig`` as
    configured): ``kubeconfig`` names the same credential files, so a component
    that reads them at plan time (the routed file is written only at start)
    reads ``source``'s.
    """

    component: str
    kubeconfig: str
    source: str = ""

    def __post_init__(self) -> None:
        check_name("component", self.component)
        if not isinstance(self.kubeconfig, str) or not self.kubeconfig.startswith("/"):
            raise ValueError(f"api route kubeconfig {self.kubeconfig!r} must be an absolute path")


class Severity(enum.StrEnum):
    """Whether a :class:`Problem` stops ``start`` (error) or is only printed (warning)."""

    ERROR = "error"
    WARNING = "warning"


class ProblemKind(enum.StrEnum):
    """The Kubernetes field-error types Origin's validation uses."""

    REQUIRED = "Required value"
    INVALID = "Invalid value"
    NOT_SUPPORTED = "Unsupported value"
    FORBIDDEN = "Forbidden"
    DUPLICATE = "Duplicate value"
    INTERNAL = "Internal error"
    NOT_CHECKED = "Not checked"
    #: nodehost's own kind: a key it reads, validates and then does nothing with.
    NO_EFFECT = "has no effect in nodehost"


_NO_VALUE = object()


def _go_value(value: Any) -> str:
    """Render a bad value the way Kubernetes' field errors do (strings quoted)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


@frozen
class Problem:
    """One validation error or warning at an Origin field path.

    Build them with the constructors, which mirror Kubernetes' field errors::

        Problem.required("servingInfo.bindAddress")
        Problem.invalid("nodeIP", "abc", "must be a valid IP")
        Problem.not_supported("servingInfo.minTLSVersion", "TLS9", ["VersionTLS12"])
        Problem.invalid(..., severity=Severity.WARNING)

    ``render()`` gives ``<path>: <type>[: <value>][: <detail>]``.
    """

    path: str
    kind: ProblemKind
    detail: str = ""
    value: Any = field(default=_NO_VALUE, compare=False)
    severity: Severity = Severity.ERROR

    @classmethod
    def required(
        cls, path: str, detail: str = "", *, severity: Severity = Severity.ERROR
    ) -> Problem:
        return cls(path, ProblemKind.REQUIRED, detail, severity=severity)

    @classmethod
    def invalid(
        cls, path: str, value: Any, detail: str = "", *, severity: Severity = Severity.ERROR
    ) -> Problem:
        return cls(path, ProblemKind.INVALID, detail, value, severity)

    @classmethod
    def not_supported(
        cls, path: str, value: Any, supported: Sequence[str], *, severity: Severity = Severity.ERROR
    ) -> Problem:
        detail = "supported values: " + ", ".join(json.dumps(s) for s in supported)
        return cls(path, ProblemKind.NOT_SUPPORTED, detail, value, severity)

    @classmethod
    def forbidden(cls, path: str, detail: str, *, severity: Severity = Severity.ERROR) -> Problem:
        return cls(path, ProblemKind.FORBIDDEN, detail, severity=severity)

    @classmethod
    def not_checked(cls, path: str, detail: str) -> Problem:
        """A setting no loaded rule checks (its plugin is disabled or failed): a warning."""
        return cls(path, ProblemKind.NOT_CHECKED, detail, severity=Severity.WARNING)

    @classmethod
    def internal(cls, path: str, detail: str) -> Problem:
        """A check that could not run (a validation hook raised): always an error."""
        return cls(path, ProblemKind.INTERNAL, detail)

    @classmethod
    def no_effect(cls, path: str, why: str) -> Problem:
        """A warning: ``<path>: has no effect in nodehost: <why>``."""
        return cls(path, ProblemKind.NO_EFFECT, why, severity=Severity.WARNING)

    @property
    def has_value(self) -> bool:
        return self.value is not _NO_VALUE

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def message(self) -> str:
        """The text after the path, ``:`` and a space, as Kubernetes' ``field.Error`` prints it."""
        parts = [self.kind.value]
        if self.has_value:
            parts.append(_go_value(self.value))
        if self.detail:
            parts.append(self.detail)
        return ": ".join(parts)

    def render(self) -> str:
        return f"{self.path}: {self.message()}" if self.path else self.message()

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping (``config validate --json``)."""
        data: dict[str, Any] = {
            "path": self.path,
            "severity": self.severity.value,
            "type": self.kind.value,
            "detail": self.detail,
            "message": self.message(),
        }
        if self.has_value:
            data["value"] = self.value if _json_safe(self.value) else str(self.value)
        return data


def _json_safe(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None
