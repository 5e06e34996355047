"""The ``kubelet`` component: runs the node's kubelet as a supervised child process.

nodehost writes a ``KubeletConfiguration`` (``kubelet.config.k8s.io/v1beta1``)
to ``<state-dir>/kubelet/kubelet-config.yaml`` holding every setting a config
field exists for, and passes the rest as flags::

    kubelet --config=<state-dir>/kubelet/kubelet-config.yaml --hostname-override=...
            --kubeconfig=... --node-ip=... --root-dir=...

The settings are Origin's (:ref:`origin-kubelet-arguments`, translated for a current kubelet;
see :mod:`nodehost.plugins.kubelet.arguments`).  A ``kubeletArguments`` key
that maps to a config field goes into the file -- the same effect as the
flag, which a current kubelet would also accept but report as deprecated.

Validation (``nodehost_validate_config``):

* Origin's rule 13 (:ref:`origin-validation-kubelet-arguments`; in-cluster and node scope):
  ``kubeletArguments`` resolved against the current kubelet's flags, with Origin's paths and wording
  -- path ``flag`` ``is not a valid flag`` for an unknown key, path ``<key>`` ``could not be
  set: <Go error>`` for a rejected value.  A flag the kubelet has removed is a
  warning at ``kubeletArguments.<key>`` and is renamed or dropped; nodehost's
  rule that a numeric ``*port`` argument is a port (0-65535) applies there too;
* when the kubelet is selected: Origin's required security settings
  (:ref:`origin-kubelet-required-settings`) as far as ``kubeletArguments`` can break them, and keys
  nodehost owns.

Readiness is the kubelet's ``/healthz`` (``127.0.0.1:10248`` unless
``kubeletArguments`` move it).  ``--write-flags`` prints every setting as a
flag on one line (:meth:`Kubelet.flag_arguments`).

The kubelet reads its certificates and kubeconfig at start and has no reload
signal, so the plan lists them as ``reload_files`` (:func:`reload_files`):
when certificate rotation swaps one, the host restarts the kubelet.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from nodehost import ComponentRecord, OptionRecord, Problem, Severity, ValidationScope, hookimpl
from nodehost.component import (
    CertificateSource,
    ComponentPlan,
    FileSpec,
    HttpProbe,
    PlanContext,
    ProcessSpec,
    StartedProbe,
    TeardownSpec,
)
from nodehost.errors import InvalidSetting
from nodehost.pluginhost.records import ProblemKind
from nodehost.plugins.kubelet import hookspecs

if TYPE_CHECKING:  # pragma: no cover
    from pluggy import PluginManager

    from nodehost.check import Check, CheckContext
    from nodehost.config.schema import NodeConfig
    from nodehost.options import StartOptions
    from nodehost.pluginhost.records import ApiRoute
    from nodehost.plugins.kubelet import arguments as args

CONFIG_FILE_NAME = "kubelet-config.yaml"

#: ``kubeletArguments`` keys nodehost does not pass on, and why.
RESERVED_KEYS = {
    "config": "is written by nodehost (<state-dir>/kubelet/kubelet-config.yaml); set the "
    "kubelet's options as kubeletArguments, or add drop-in files with config-dir",
    "help": "makes the kubelet print its help and exit",
    "version": "makes the kubelet print its version and exit",
}


NODE_LABEL = OptionRecord(
    "--node-label",
    "A label the kubelet registers the node with; repeatable; joins "
    "kubeletArguments.node-labels (a flag's key wins).",
    multiple=True,
    metavar="KEY=VALUE",
)
NODE_TAINT = OptionRecord(
    "--node-taint",
    "A taint the kubelet registers the node with (NoSchedule, PreferNoSchedule or "
    "NoExecute); repeatable; joins kubeletArguments.register-with-taints.",
    multiple=True,
    metavar="KEY[=VALUE]:EFFECT",
)

#: Flags naming files the kubelet reads once, at start.
RELOAD_FLAGS = ("tls-cert-file", "tls-private-key-file", "client-ca-file", "kubeconfig")


@hookimpl
def nodehost_components() -> list[ComponentRecord]:
    return [
        ComponentRecord(
            name="kubelet",
            summary="The kubelet: runs the node's pods (KubeletConfiguration file plus flags).",
            component=Kubelet(),
            after=("sdn", "runtime"),
            validation_scope=ValidationScope.NODE,
            write_flags=True,
            config_sections=("kubeletArguments",),
            standins={"kubelet": "nodehost-standin-kubelet"},
        )
    ]


@hookimpl
def nodehost_options() -> list[OptionRecord]:
    return [NODE_LABEL, NODE_TAINT]


@hookimpl
def nodehost_start_options(options: StartOptions) -> None:
    """Each ``--node-label`` and ``--node-taint`` as the kubelet checks it: a
    ``UsageError`` naming the flag (exit 2)."""
    labels, taints = _node_flags(options)
    if labels or taints:
        from nodehost.plugins.kubelet.labels import check_node_flags

        check_node_flags(labels, taints)


@hookimpl
def nodehost_override_config(config: NodeConfig, options: StartOptions) -> dict[str, object]:
    """``--node-label`` / ``--node-taint`` joined into ``kubeletArguments``."""
    labels, taints = _node_flags(options)
    if not labels and not taints:
        return {}
    from nodehost.plugins.kubelet.labels import merge_node_flags

    return {"kubelet_arguments": merge_node_flags(config.kubelet_arguments, labels, taints)}


def _node_flags(options: StartOptions) -> tuple[tuple[str, ...], tuple[str, ...]]:
    values = options.plugin_values
    return tuple(values.get(NODE_LABEL.dest) or ()), tuple(values.get(NODE_TAINT.dest) or ())


@hookimpl
def nodehost_addhooks(pluginmanager: PluginManager) -> None:
    """Add this plugin's own hook, ``nodehost_kubelet_arguments``."""
    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def nodehost_validate_config(
    config: NodeConfig, scope: ValidationScope, selected: frozenset[str]
) -> list[Problem]:
    """Rule 13 and the removed-flag warnings; Origin's required security settings, files,
    node labels and taints and reserved keys if the kubelet runs."""
    from nodehost.config.validate import argument_ports

    arguments = config.kubelet_arguments
    problems: list[Problem] = []
    if scope >= ValidationScope.IN_CLUSTER:
        problems.extend(argument_ports(arguments, "kubeletArguments"))
        problems.extend(argument_problems(arguments))
    if "kubelet" in selected:
        problems.extend(security_problems(arguments))
        problems.extend(file_problems(arguments))
        problems.extend(registration_problems(arguments))
        problems.extend(
            Problem.forbidden(f"kubeletArguments.{key}", why)
            for key, why in RESERVED_KEYS.items()
            if key in arguments
        )
    return problems


def argument_problems(arguments: Mapping[str, Sequence[str]]) -> list[Problem]:
    """Origin's rule 13 for a current kubelet, plus a warning per removed flag."""
    from nodehost.plugins.kubelet.flags import KUBELET_FLAGS

    translated, translations = KUBELET_FLAGS.translate(arguments)
    problems = [
        Problem.forbidden(
            f"kubeletArguments.{found.key}",
            found.removed.describe()
            + (f", but {found.removed.replacement} is given too" if found.ignored else ""),
            severity=Severity.WARNING,
        )
        for found in translations
    ]
    for error in KUBELET_FLAGS.resolve(translated).errors:
        if error.unknown:
            problems.append(Problem.invalid("flag", error.key, error.detail))
        else:
            problems.append(Problem.invalid(error.key, error.value, error.detail))
    return problems


#: kubeletArguments naming a file the kubelet must read at start (its serving pair, the CA).
FILE_FLAGS = ("tls-cert-file", "tls-private-key-file", "client-ca-file")


def file_problems(arguments: Mapping[str, Sequence[str]]) -> list[Problem]:
    """Each :data:`FILE_FLAGS` value (the last one wins, as for the kubelet) must be a
    readable regular file, as ``servingInfo.certFile`` must (``validate_file``)."""
    from nodehost.config.validate import validate_file

    problems = []
    for key in FILE_FLAGS:
        values = arguments.get(key) or ()
        if values and values[-1]:
            problems.extend(validate_file(values[-1], f"kubeletArguments.{key}"))
    return problems


def registration_problems(arguments: Mapping[str, Sequence[str]]) -> list[Problem]:
    """The node labels and taints the kubelet would refuse (:mod:`nodehost.plugins.kubelet.labels`;
    a taint that does not parse is rule 13's)."""
    from nodehost.plugins.kubelet import labels as nodelabels

    labels_path = f"kubeletArguments.{nodelabels.LABELS_FLAG}"
    problems = []
    for pair in nodelabels.label_pairs(arguments.get(nodelabels.LABELS_FLAG) or ()):
        problem = nodelabels.label_syntax_problem(pair)
        if problem:
            problems.append(Problem.invalid(labels_path, pair, problem))
            continue
        restricted = nodelabels.restricted_label_problem(pair)
        if restricted:
            why = f"{restricted}; not passed to the kubelet (label the Node after it registers)"
            problems.append(Problem.invalid(labels_path, pair, why, severity=Severity.WARNING))
    taints = nodelabels.taint_specs(arguments.get(nodelabels.TAINTS_FLAG) or ())
    problems.extend(
        Problem.invalid(
            f"kubeletArguments.{nodelabels.TAINTS_FLAG}",
            spec,
            "a taint with this key and effect is given twice",
        )
        for spec in nodelabels.duplicate_taints(taints)
    )
    return problems


def security_problems(arguments: Mapping[str, Sequence[str]]) -> list[Problem]:
    """The required settings (:ref:`origin-kubelet-required-settings`) that ``kubeletArguments``
    remove or change."""
    from nodehost.plugins.kubelet import arguments as args
    from nodehost.plugins.kubelet.flags import KUBELET_FLAGS

    problems = []
    for key, requirement in args.REQUIRED_SECURITY.items():
        values = arguments.get(key)
        path = f"kubeletArguments.{key}"
        if values is None or requirement.holds(values):
            continue
        if not values:
            problems.append(
                Problem.forbidden(path, "cannot be removed: the kubelet must run with it")
            )
        elif not KUBELET_FLAGS.resolve({key: values}).errors:  # else rule 13 reports it
            problems.append(
                Problem.invalid(
                    path, values[-1], f"must be {requirement.value}: nodehost requires it"
                )
            )
    return problems


#: The component that reports the node's certificates itself when it runs (it rotates them).
ROTATING_COMPONENT = "bootstrap"


def certificates(context: PlanContext) -> tuple[CertificateSource, ...]:
    """The kubelet's serving and client certificates, whose expiry the host shows -- unless
    the component that rotates them runs and reports them itself.

    The client certificate is the ``masterKubeConfig``'s: its ``client-certificate``
    file, or the certificate embedded as ``client-certificate-data`` (a folder made by
    ``config create``).  A kubeconfig that cannot be read gives none.
    """
    if ROTATING_COMPONENT in context.selected:
        return ()
    found = []
    if context.config.serving_info.cert_file:
        found.append(CertificateSource("server", context.config.serving_info.cert_file))
    client = _client_certificate(context.config.master_kube_config)
    if client is not None:
        found.append(client)
    return tuple(found)


def _client_certificate(kubeconfig: str) -> CertificateSource | None:
    import base64
    import binascii

    from nodehost.pki.kubeconfig import kubeconfig_entries

    if not kubeconfig:
        return None
    user = kubeconfig_entries(kubeconfig)[1]  # {} for a file it cannot read
    path, data = user.get("client-certificate"), user.get("client-certificate-data")
    if isinstance(path, str) and path:
        return CertificateSource("client", os.path.join(os.path.dirname(kubeconfig), path))
    if isinstance(data, str) and data:
        try:
            return CertificateSource("client", kubeconfig, base64.b64decode(data, validate=True))
        except (binascii.Error, ValueError):
            return None
    return None


class Kubelet:
    """Plans the kubelet: its config file, its command line and its readiness probe."""

    def plan(self, context: PlanContext) -> ComponentPlan:
        from nodehost.kube.configfile import render_config_file
        from nodehost.kube.healthz import healthz_url
        from nodehost.plugins.kubelet import arguments as args
        from nodehost.plugins.kubelet.configfile import (
            KUBELET_CONFIG_API_VERSION,
            KUBELET_CONFIG_KIND,
        )

        merged = self._arguments(context)
        try:
            args.require_security(merged.arguments)
            launch = args.launch_arguments(merged.arguments)
        except args.ArgumentsError as error:
            raise _invalid(error) from None
        path = os.path.join(context.state_dir, CONFIG_FILE_NAME)
        healthz = args.healthz_address(launch.values)
        readiness = StartedProbe() if healthz is None else HttpProbe(url=healthz_url(*healthz))
        notes = [f"writes {path} ({KUBELET_CONFIG_KIND} {KUBELET_CONFIG_API_VERSION})"]
        notes.extend(
            f"kubeletArguments {found.key}: {found.removed.describe()}"
            for found in merged.translations
        )
        if healthz is None:
            notes.append("healthz is off (healthz-port 0): ready once started")
        return ComponentPlan(
            run=ProcessSpec(
                argv=("kubelet", f"--config={path}", *launch.flags),
                readiness=readiness,
                exec_allowed=True,
                reload_files=reload_files(merged.arguments, context.api_route),
                reload_signal=None,
            ),
            files=(
                FileSpec(path, render_config_file(launch.document, context.config.source)),
                TeardownSpec(unmount_below=(context.config.volume_directory,)).file(
                    context.state_dir
                ),
            ),
            notes=tuple(notes),
            certificates=certificates(context),
        )

    def flag_arguments(self, context: PlanContext) -> tuple[str, ...]:
        """Every setting as ``--name=value`` (sorted): what ``--write-flags`` prints.

        Pure; raises :class:`~nodehost.errors.InvalidSetting` as :meth:`plan` does.
        """
        from nodehost.plugins.kubelet import arguments as args

        merged = self._arguments(context)
        try:
            args.require_security(merged.arguments)
        except args.ArgumentsError as error:
            raise _invalid(error) from None
        return tuple(args.flag_arguments(merged.arguments))

    @staticmethod
    def _arguments(context: PlanContext) -> args.KubeletArguments:
        from nodehost.plugins.kubelet import arguments as args

        contributions = contributed_arguments(context)
        try:
            return args.kubelet_arguments(context.config, contributions)
        except args.ArgumentsError as error:
            raise _invalid(error) from None


def _invalid(error: Exception) -> InvalidSetting:
    """The kubelet's arguments cannot be computed from this config (exit 255)."""
    return InvalidSetting(Problem("kubeletArguments", ProblemKind.INVALID, str(error)))


def contributed_arguments(context: PlanContext) -> dict[str, list[str]]:
    """Every plugin's ``nodehost_kubelet_arguments``, merged in call order (later keys win).

    A plugin whose contribution is not a mapping of lists fails (a third-party
    one is disabled and contributes nothing; a built-in's is a ``PluginError``),
    as one that raises does.
    """
    merged: dict[str, list[str]] = {}
    if context.hooks is None:
        return merged
    results = context.hooks.call_each(
        "nodehost_kubelet_arguments",
        config=context.config,
        selected=context.selected,
        state_dir=context.node_state_dir,
    )
    for plugin, contribution in results:
        try:
            merged.update(_argument_lists(contribution))
        except TypeError as error:
            context.hooks.disable(plugin, error, "nodehost_kubelet_arguments")
    return merged


def _argument_lists(contribution: object) -> dict[str, list[str]]:
    """A contribution as flag -> values; ``TypeError`` when it is not a mapping of lists."""
    if contribution is None:
        return {}
    if not isinstance(contribution, Mapping):
        raise TypeError(f"returned {type(contribution).__name__}, not a mapping")
    lists = {}
    for key, values in contribution.items():
        if isinstance(values, str) or not isinstance(values, Sequence):
            raise TypeError(f"gave kubelet argument {key!r} a non-list")
        lists[key] = list(values)
    return lists


def reload_files(
    arguments: Mapping[str, Sequence[str]], route: ApiRoute | None = None
) -> tuple[str, ...]:
    """The files a change of which needs a kubelet restart.

    The serving certificate, key and client CA; the kubeconfig and the files
    it names (read now, when it exists; relative ones resolved against its
    folder; for the kubeconfig of an API ``route``, written only at start, those
    of the kubeconfig it stands for); and in ``cert-dir`` the ``-current.pem``
    pairs of the client and serving certificates (what TLS bootstrap and
    rotation swap).
    """
    from nodehost.pki.nodefiles import CLIENT_CERT_PREFIX, SERVING_CERT_PREFIX, current_pair_file

    files = [arguments[flag][-1] for flag in RELOAD_FLAGS if arguments.get(flag)]
    for cert_dir in arguments.get("cert-dir", ())[-1:]:
        prefixes = (CLIENT_CERT_PREFIX, SERVING_CERT_PREFIX)
        files.extend(str(current_pair_file(cert_dir, prefix)) for prefix in prefixes)
    for kubeconfig in arguments.get("kubeconfig", ())[-1:]:
        from nodehost.pki.kubeconfig import referenced_files

        if route is not None and route.source and kubeconfig == route.kubeconfig:
            kubeconfig = route.source
        files.extend(referenced_files(kubeconfig))
    return tuple(dict.fromkeys(file for file in files if file))


@hookimpl
def nodehost_checks(context: CheckContext) -> list[Check]:
    """The kubelet's host checks (:mod:`nodehost.plugins.kubelet.checks`)."""
    from nodehost.plugins.kubelet.checks import kubelet_checks

    return kubelet_checks(context)
