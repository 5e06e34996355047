"""The hook specifications: the contract between the nodehost core and its plugins.

This module is the reference a plugin author reads first.  Every hook starts
with ``nodehost_`` and is called by the core through one typed facade
(:class:`nodehost.pluginhost.manager.Hooks`), always with keyword arguments; an
implementation may accept any subset of a hook's arguments.

Each docstring states, under fixed headings:

* **When** -- the phase, and how many times the hook is called;
* **Arguments** -- what each argument is;
* **Returns** -- what an implementation returns and what the core does with it;
* **Kind** -- broadcast (every implementation runs, results are collected),
  firstresult or historic, and whether wrappers are welcome;
* **Errors** -- what the core does if an implementation raises.

Whatever the hook, a third-party plugin that raises, or returns anything
the **Returns** heading does not allow (checked by the facade: a list of the
stated records, None where nothing is returned), fails alone: it is
unregistered, recorded (``nodehost plugins`` shows it) and reported as one
log line naming its entry point, distribution, version and hook (the
traceback at ``-v 4``); ``--strict-plugins`` makes it exit 1 instead.  A
built-in that raises is a bug.

Phases, in the order the core calls them: registration, options, configuration,
validation, planning, host checks, run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from nodehost.pluginhost.markers import hookspec

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Iterable, Mapping, Sequence

    from pluggy import PluginManager
    from prometheus_client.metrics_core import Metric

    from nodehost.check import Check, CheckContext
    from nodehost.config.schema import NodeConfig
    from nodehost.options import StartOptions
    from nodehost.pluginhost.records import (
        ApiRoute,
        ComponentRecord,
        NetworkProviderRecord,
        OptionRecord,
        Problem,
        ValidationScope,
    )


class MetricsCollector(Protocol):
    """What :func:`nodehost_metrics_collectors` returns: a prometheus_client collector."""

    def collect(self) -> Iterable[Metric]:
        """The metric families to serve now (``GaugeMetricFamily`` and the like)."""
        ...


# --- registration ---------------------------------------------------------------


@hookspec(historic=True)
def nodehost_addhooks(pluginmanager: PluginManager) -> None:
    """Add hook specifications of a plugin's own (hooks for plugins of that plugin).

    **When**: once per plugin, as it is registered (the call is historic: a
    plugin registered later still receives it), before any other hook runs.

    **Arguments**: ``pluginmanager`` -- the pluggy ``PluginManager``; call
    ``pluginmanager.add_hookspecs(module)`` with a module of ``@hookspec``
    functions (import ``hookspec`` from ``nodehost.pluginhost.markers``).  The built-in
    ``dns`` plugin adds ``nodehost_dns_record_sources`` this way.

    **Returns**: nothing.

    **Kind**: historic; no return value reaches the core.

    **Errors**: an exception is a plugin failure, as a failed import is:
    the plugin is unregistered and reported, or fatal with ``--strict-plugins``.
    """


@hookspec
def nodehost_components() -> Sequence[ComponentRecord]:
    """Announce the components this plugin provides.

    **When**: once per process, after every plugin is loaded, before the
    component selection is computed (also by ``nodehost components``).

    **Arguments**: none.

    **Returns**: a sequence of :class:`nodehost.ComponentRecord` (possibly
    empty).  The core indexes them by name and alias.  A name, alias or group
    already taken fails the plugin (:mod:`nodehost.pluginhost.clashes`): a clash with a
    built-in fails the third-party plugin, a clash between two third-party
    plugins fails both, each naming the other.

    **Kind**: broadcast; results are flattened in call order.

    **Errors**: an exception marks the plugin failed (as a failed import would):
    its components are unknown, and selecting one of them is an error naming the
    failure; ``--strict-plugins`` makes it fatal at once.
    """


@hookspec
def nodehost_network_providers() -> Sequence[NetworkProviderRecord]:
    """Announce the network providers this plugin provides.

    **When**: once per process, after every plugin is loaded, before
    validation (the ``sdn`` component and the validation of
    ``networkConfig.networkPluginName`` use the result).

    **Arguments**: none.

    **Returns**: a sequence of :class:`nodehost.NetworkProviderRecord`.  Names and
    aliases are matched case-insensitively; a clash fails plugins as for
    :func:`nodehost_components`.  A record's ``config_section`` becomes a known
    top-level NodeConfig key.

    **Kind**: broadcast; results are flattened.

    **Errors**: as :func:`nodehost_components`.
    """


# --- options --------------------------------------------------------------------


@hookspec
def nodehost_options() -> Sequence[OptionRecord]:
    """Declare this plugin's own ``nodehost start`` options (as pytest's ``pytest_addoption``).

    **When**: once per process that loads the plugins, right after loading;
    also to build ``start``'s (and ``check``'s, ``install``'s) options before
    the command line is parsed, so ``nodehost start --help`` shows them under
    the plugin's name.  It must be cheap: return records, import nothing
    heavy (``config validate`` and ``start --dry-run`` call it).

    **Arguments**: none.

    **Returns**: a sequence of :class:`nodehost.OptionRecord` (possibly
    empty): each a long flag with its help, type, choices, default and
    ``NODEHOST_*`` variable.  The value given (flag, else variable, else
    default) reaches every hook and plan context that has the start options,
    as ``options.plugin_values[record.dest]``; check it in
    :func:`nodehost_start_options` (raise :class:`nodehost.errors.UsageError`
    naming the flag).

    **Kind**: broadcast; results are flattened.

    **Errors**: a record that breaks :class:`~nodehost.OptionRecord`'s rules
    (it raises as it is made), or a flag, value name or variable that
    nodehost's own options or another plugin's already have, fails the
    plugin alone (a clash with a built-in fails the third-party plugin,
    between two third-party plugins both fail), as a name clash of
    :func:`nodehost_components` does; ``nodehost plugins`` shows why.
    """


@hookspec
def nodehost_start_options(
    options: StartOptions, components: frozenset[str]
) -> Mapping[str, Any] | None:
    """Fill in the start options that another option implies.

    **When**: once per ``start`` (``--dry-run`` included), after the flags are
    checked and before the components are selected.

    **Arguments**: ``options`` -- the :class:`nodehost.options.StartOptions` as
    the flags gave them; ``components`` -- the name of every known component
    (so an answer only names components that exist).

    **Returns**: ``{key: value}`` for the :class:`~nodehost.options.StartOptions`
    fields, or the ``dest`` of options plugins declare (:func:`nodehost_options`,
    set in ``plugin_values``), that these options imply; or None when they
    imply nothing for this plugin.  The built-in ``localcluster`` plugin turns
    ``--local-cluster DIR`` into the bootstrap flags and the folders under
    DIR; the built-in ``bootstrap`` plugin only checks its own options here.
    The core applies every answer and checks the result as it checks flags;
    an unknown key fails the plugin, two plugins giving one key different
    values is a usage error (exit 2).  An implementation has no side effects
    (a dry run asks too).

    **Kind**: broadcast.

    **Errors**: a :class:`nodehost.errors.UsageError` (a flag that does not go
    with the option, named) reaches the user as it is (exit 2); any other
    exception fails the plugin (unregistered and reported).
    """


# --- configuration ----------------------------------------------------------------


@hookspec
def nodehost_override_config(config: NodeConfig, options: StartOptions) -> Mapping[str, Any] | None:
    """Change the node's config as this plugin's own start options say.

    **When**: once per obtained configuration (a file, one generated from
    flags, a config map, a reload), after it is typed and before it is
    validated, so the changed config is validated, planned and shown like any
    other; the core's own overrides (``--node-ip``, ``--listen``) come first.

    **Arguments**: ``config`` -- the :class:`nodehost.config.NodeConfig` so far
    (earlier plugins' changes included); ``options`` -- the
    :class:`nodehost.options.StartOptions`, with ``plugin_values``.

    **Returns**: ``{field: value}`` of :class:`~nodehost.config.NodeConfig`
    attributes to replace, or None.  The built-in ``kubelet`` plugin joins
    ``--node-label`` and ``--node-taint`` into ``kubelet_arguments``.

    **Kind**: broadcast, in registration order.

    **Errors**: an unknown field or any exception fails the plugin alone
    (unregistered and reported); the config stays as it was before it.
    """


@hookspec
def nodehost_adjust_config(raw: dict[str, Any], source: str) -> None:
    """Edit the raw NodeConfig mapping before defaults and validation.

    **When**: once per loaded configuration, right after the YAML is parsed and
    before defaults are applied, typed and validated.

    **Arguments**: ``raw`` -- the parsed mapping, which the implementation may
    change in place (migrate a renamed key, add a default for its own section);
    ``source`` -- the file's path, or ``"<generated>"``.

    **Returns**: nothing; the return value is ignored.

    **Kind**: broadcast; wrappers are welcome (e.g. to log the change).

    **Errors**: each implementation edits a copy that replaces ``raw`` only
    when it returns: a third-party plugin that raises leaves no half-made
    edit behind, and fails (is unregistered and reported).
    """


@hookspec
def nodehost_validate_config(
    config: NodeConfig,
    scope: ValidationScope,
    selected: frozenset[str],
    providers: Mapping[str, NetworkProviderRecord],
    plugin_failures: Sequence[str],
) -> Sequence[Problem]:
    """Check the resolved configuration and report problems.

    **When**: once per validation (``start``, ``config validate``), after the
    core's own rules ran, with the same configuration.

    **Arguments**: ``config`` -- the resolved :class:`nodehost.config.NodeConfig`
    (defaults applied, paths absolute; do not modify it); ``scope`` -- the
    :class:`nodehost.ValidationScope` in force (Origin's node, in-cluster or
    network variant); ``selected`` -- the names of the selected components
    (every known component for ``config validate``), a frozenset that also knows
    which components run network providers (pass it on to
    :func:`nodehost.cni.provider_section_problems`); ``providers`` -- every
    network provider by lower-cased name and alias; ``plugin_failures`` -- one
    line per third-party plugin that failed to load (name, distribution,
    error), so a rule can say which failure explains a missing provider.

    **Returns**: a sequence of :class:`nodehost.Problem` (errors and warnings),
    possibly empty.  The core merges them with its own, prints every one, and
    refuses to start on any error.

    **Kind**: broadcast.

    **Errors**: implementations report, they do not raise.  A third-party
    plugin that raises fails (is unregistered and reported); when one of its
    components is selected, its provider configured or a section it owns set
    in the file, its failure is also an error (``Internal error``) at the
    path of its distribution (``nodehost-ptp: Internal error: ...``), so the
    user still sees every other problem and the config is not passed
    unchecked.
    """


@hookspec(firstresult=True)
def nodehost_obtain_config(options: StartOptions) -> str | None:
    """Obtain the node's configuration file when the start options ask for it from elsewhere.

    **When**: once per ``start`` (also ``--write-config``; never for
    ``--dry-run``, which asks :func:`nodehost_describe_config` instead), before
    the configuration is loaded; not at all for ``--config FILE`` alone or a
    configuration generated from flags, unless an implementation answers.

    **Arguments**: ``options`` -- the :class:`nodehost.options.StartOptions`
    (the built-in ``bootstrap`` plugin answers when
    ``--bootstrap-config-name`` is given: it fetches the configuration from
    the API server and writes it under ``--config-dir``).

    **Returns**: the path of the NodeConfig file to load, or None when these
    options are not for this plugin.  The core loads the file exactly as it
    loads ``--config``.  The options that ask for an obtained configuration
    are the obtaining plugin's own (:func:`nodehost_options`): without the
    plugin they do not exist, so a command line giving one fails (exit 2).
    With ``--set`` (only for a configuration generated from flags) an answer
    is a usage error.  An implementation that makes ready what another obtains the configuration
    from returns None after doing so, and is marked ``tryfirst`` (the built-in
    ``localcluster`` plugin starts its API server and publishes the node's
    config map for ``bootstrap``).

    **Kind**: firstresult: the first implementation that returns a path wins.

    **Errors**: a :class:`nodehost.errors.NodehostError` (a usage error, a
    runtime failure) reaches the user as it is; any other exception fails the
    plugin (unregistered and reported, as for every hook) and the next
    implementation is asked.
    """


@hookspec(firstresult=True)
def nodehost_describe_config(options: StartOptions) -> list[str] | None:
    """Say what :func:`nodehost_obtain_config` would do for these options, doing none of it.

    **When**: once per ``start --dry-run``, instead of ``nodehost_obtain_config``.
    A dry run has no effects: an implementation reads what it needs (flags,
    files) but writes, signs and contacts nothing, and does not wait.

    **Arguments**: ``options`` -- the :class:`nodehost.options.StartOptions`.

    **Returns**: the lines to print (what would be asked of whom and written
    where), or None when these options are not for this plugin.  When a
    plugin answers, the dry run prints the lines and exits 0 without a plan
    (the configuration is not known before it is obtained).

    **Kind**: firstresult: the first implementation that returns lines wins.

    **Errors**: as :func:`nodehost_obtain_config`.
    """


# --- host checks --------------------------------------------------------------------


@hookspec
def nodehost_checks(context: CheckContext) -> Sequence[Check]:
    """Check that this host can run the plugin's selected components.

    **When**: once per ``nodehost check``, and once per ``start`` (not
    ``--dry-run``, ``--write-config`` or ``--write-flags``) after the plan is
    built and before anything starts (the *preflight*, with
    ``context.preflight`` true: return only the checks that can make the start
    fail, and only cheap ones -- file reads, no subprocess, no network; the
    whole preflight must stay within 20 ms).

    **Arguments**: ``context`` -- a :class:`nodehost.check.CheckContext`: the
    resolved config, the selected components, the plan (programs resolved),
    whether this is the preflight, and each component's plan context.  Check
    only for the components in ``context.selected`` (or the plan).

    **Returns**: a sequence of :class:`nodehost.check.Check` (possibly empty),
    each named ``<component>.<what>`` (the name ``--ignore-preflight-errors``
    takes), with ``ok``, ``warning``, ``error`` or ``skipped`` (saying why), what
    was found and the fix.  The core sets each check's ``plugin``, prints them
    all (``nodehost check``: exit 1 on any error), and in the preflight stops
    the start with exit 1 on an error that ``--ignore-preflight-errors`` does
    not name; warnings are logged once.

    **Kind**: broadcast; results are concatenated in call order.

    **Errors**: a plugin whose implementation raises, or returns anything but
    a list of ``Check``, fails alone and stays registered: its checks are
    replaced by one ``error`` line named ``<plugin>.checks`` saying what it
    raised (``-v 4`` logs the traceback); the other plugins' checks are
    reported as usual.  This holds for built-ins too: a check must never
    take ``nodehost check`` down.
    """


# --- planning -----------------------------------------------------------------------


@hookspec(firstresult=True)
def nodehost_api_route(
    config: NodeConfig, selected: frozenset[str], state_dir: str
) -> ApiRoute | None:
    """Route the node's API clients through a component (a node-local load balancer).

    **When**: once for each plan made (``start``, ``--dry-run``,
    ``--write-flags``, each configuration the running node takes) and before
    host checks, after validation; the answer holds for every component of
    that plan.  Cheap and without side effects (a dry run asks too).

    **Arguments**: ``config`` -- the validated NodeConfig, ``masterKubeConfig``
    as the file gives it; ``selected`` -- the selected component names;
    ``state_dir`` -- the node's state directory (``--state-dir``).

    **Returns**: an :class:`nodehost.pluginhost.records.ApiRoute` naming one of the
    selected components and the kubeconfig its plan writes, or None (no
    route: every component uses ``masterKubeConfig``).  The core plans every
    other component with ``masterKubeConfig`` replaced by that kubeconfig
    (the kubelet's ``--kubeconfig``, kube-proxy's ``clientConnection``, the DNS
    source, certificate rotation and config sync all follow it); that
    component plans with the configuration as it is, and its record makes the
    others start after it (``before=("all",)``).  An answer naming a component that is not
    selected fails the plugin.

    **Kind**: firstresult: the first implementation that returns a route wins.

    **Errors**: a third-party plugin that raises or answers wrongly is failed
    (unregistered and reported) and the next implementation is asked; a
    built-in's is a ``PluginError``.
    """


# --- run time -----------------------------------------------------------------------


@hookspec
def nodehost_component_started(name: str, pid: int | None) -> None:
    """Observe a component that has just been started (or restarted).

    **When**: every time a component's process is spawned or its task created.

    **Arguments**: ``name`` -- the component; ``pid`` -- the child's pid, or
    ``None`` for an in-process task.

    **Returns**: nothing.

    **Kind**: broadcast, called from the host's event loop; it must not block.

    **Errors**: the plugin fails (unregistered, reported); the host carries on
    (with ``--strict-plugins`` the node stops and exits 1).
    """


@hookspec
def nodehost_component_ready(name: str, seconds: float) -> None:
    """Observe a component that has passed its readiness probe.

    **When**: each time a component becomes ready (again after a restart).

    **Arguments**: ``name`` -- the component; ``seconds`` -- time from its start
    to readiness.

    **Returns**: nothing.

    **Kind**: broadcast, called from the event loop; it must not block.

    **Errors**: the plugin fails (unregistered, reported); the host carries on
    (with ``--strict-plugins`` the node stops and exits 1).
    """


@hookspec
def nodehost_component_exited(name: str, returncode: int | None, restarting: bool) -> None:
    """Observe a component that exited without being asked to.

    **When**: each time a component's process exits or its task ends while the
    host still wants it running.

    **Arguments**: ``name`` -- the component; ``returncode`` -- the exit status
    (negative for a signal; ``None`` for a task that raised); ``restarting`` --
    whether the restart policy will start it again.

    **Returns**: nothing.

    **Kind**: broadcast, called from the event loop; it must not block.

    **Errors**: the plugin fails (unregistered, reported); the host carries on
    (with ``--strict-plugins`` the node stops and exits 1).
    """


@hookspec
def nodehost_component_stopped(name: str) -> None:
    """Observe a component that the host has stopped (and every descendant is gone).

    **When**: once per component during shutdown, in reverse start order.

    **Arguments**: ``name`` -- the component.

    **Returns**: nothing.

    **Kind**: broadcast, called from the event loop; it must not block.

    **Errors**: the plugin fails (unregistered, reported); the host carries on,
    so one failing plugin cannot stop the others from seeing the event.
    """


@hookspec
def nodehost_node_ready(seconds: float, status_address: str | None, keeps_running: bool) -> None:
    """Observe the node becoming ready: every component ready (or inactive).

    **When**: once per run, when the node first becomes ready (not again after
    a component's restart); before ``--exit-on-ready`` stops it.

    **Arguments**: ``seconds`` -- time from the host's start to readiness;
    ``status_address`` -- ``host:port`` where the host serves ``/status``
    (what ``nodehost status --address`` takes), or None without a health
    server; ``keeps_running`` -- False when the node stops right away
    (``--exit-on-ready``): say nothing about how to reach it then.

    **Returns**: nothing.  An implementation may print what a person needs
    next (the ``localcluster`` plugin prints how to reach its cluster).

    **Kind**: broadcast, called from the event loop; it must not block.

    **Errors**: the plugin fails (unregistered, reported); the host carries on
    (with ``--strict-plugins`` the node stops and exits 1).
    """


@hookspec
def nodehost_metrics_collectors() -> Sequence[MetricsCollector]:
    """Add a plugin's own metrics to ``/metrics``.

    **When**: once, when the host starts its health server (never with
    ``--health-address=none``).

    **Arguments**: none.

    **Returns**: prometheus_client collectors: objects whose ``collect()``
    yields metric families (``prometheus_client.core.GaugeMetricFamily`` and
    the like).  ``collect()`` runs on every scrape, in the host's event loop:
    it must only read values the plugin keeps, never block.  Name metrics
    ``nodehost_<plugin>_*``.

    **Kind**: broadcast; every plugin's collectors are served.

    **Errors**: a hook that raises is logged with the plugin named and gives no
    collectors; a ``collect()`` that raises is logged once and its metrics are
    left out of the page, the other metrics are served.
    """
