"""The component API: what a component record's ``component`` object does.

A component turns the resolved configuration into a :class:`ComponentPlan`, a
plain value that says which files to write and what to run.  ``plan()`` has no
side effects, so ``nodehost start --dry-run`` can print it and tests can check
it alone.  The host then writes the files (atomically) and runs the plan:
a :class:`ProcessSpec` becomes a supervised child process, a :class:`TaskSpec`
a coroutine in the host's event loop.  Both share one restart policy, one
readiness model and one stop protocol.

Minimal component::

    class Echo:
        def plan(self, context: PlanContext) -> ComponentPlan:
            return ComponentPlan(run=ProcessSpec(argv=("sleep", "infinity")))
"""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from nodehost.frozen import frozen

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.config.schema import NodeConfig
    from nodehost.options import StartOptions
    from nodehost.pluginhost.manager import Hooks
    from nodehost.pluginhost.records import ApiRoute, ComponentRecord, NetworkProviderRecord


# --- readiness probes ---------------------------------------------------------


@frozen
class Probe:
    """Base of the readiness probes; ``interval``/``timeout`` are seconds.

    A socket probe (HTTP, TCP, unix, gRPC health, CRI) passes only when the
    listening socket it reaches belongs to the component's process tree (an
    in-loop task's: the host's); see :mod:`nodehost.daemon.ownership`.
    ``refresh`` (seconds, 0: never) probes again after ready, to keep the
    detail ``nodehost status`` shows current; it never withdraws readiness.
    """

    interval: float = 0.5
    timeout: float = 2.0
    refresh: float = 0.0

    def describe(self) -> str:
        return "started"


@frozen
class StartedProbe(Probe):
    """Ready as soon as the process (or task) has started."""


@frozen
class HttpProbe(Probe):
    """Ready when ``GET url`` answers 2xx (TLS not verified only if ``insecure``)."""

    url: str = ""
    insecure: bool = False

    def describe(self) -> str:
        return f"GET {self.url}"


@frozen
class TcpProbe(Probe):
    """Ready when a TCP connection to ``host:port`` is accepted."""

    host: str = "127.0.0.1"
    port: int = 0

    def describe(self) -> str:
        return f"tcp {self.host}:{self.port}"


@frozen
class UnixProbe(Probe):
    """Ready when a connection to the unix socket ``path`` is accepted."""

    path: str = ""

    def describe(self) -> str:
        return f"unix {self.path}"


@frozen
class GrpcHealthProbe(Probe):
    """Ready when the gRPC server on the unix socket ``path`` reports ``SERVING``.

    One ``grpc.health.v1.Health/Check`` call for ``service`` ("" is the
    server as a whole): a real request, not just an accepted connection.
    """

    path: str = ""
    service: str = ""

    def describe(self) -> str:
        return f"grpc health {self.path}" + (f" ({self.service})" if self.service else "")


@frozen
class CriProbe(Probe):
    """Ready when the CRI runtime at ``endpoint`` answers ``Version`` and ``Status`` with
    ``RuntimeReady`` (:func:`nodehost.daemon.cri.runtime_status`), as a kubelet needs it.

    Its detail names both conditions (``NetworkReady`` is false until a CNI
    config is in place); a gRPC server without CRI fails it with the line of
    :class:`nodehost.daemon.cri.NotCri`, ending with ``not_cri_hint``: what to
    change in the runtime's own configuration to turn its CRI service on.
    """

    endpoint: str = ""
    refresh: float = 10.0
    not_cri_hint: str = ""

    def describe(self) -> str:
        return f"cri {self.endpoint}"


@frozen
class FileProbe(Probe):
    """Ready when ``path`` exists."""

    path: str = ""

    def describe(self) -> str:
        return f"file {self.path}"


@frozen
class ReportedProbe(Probe):
    """Ready when the task itself calls :meth:`TaskContext.ready` (tasks only)."""

    def describe(self) -> str:
        return "reported by the component"


# --- what to write and what to run -------------------------------------------


@frozen
class FileSpec:
    """A file the host writes atomically before starting the component."""

    path: str
    content: bytes
    mode: int = 0o644


#: The file name of a component's :class:`TeardownSpec` in its state directory.
TEARDOWN_FILE = "teardown.json"


@frozen
class TeardownSpec:
    """What ``nodehost teardown`` must undo on the host for a component, beyond its processes.

    ``unmount_below``: folders whose mounts go (the kubelet's root: pod volumes);
    ``commands``: programs run once the workloads are gone, each an argv whose
    program is looked up on ``PATH`` then and skipped, with a line saying so,
    when it is not there (``kube-proxy --cleanup``).  Put it in the plan with
    :meth:`file`; teardown reads every component's, so it works without the
    config (see :mod:`nodehost.daemon.teardown`).
    """

    unmount_below: tuple[str, ...] = ()
    commands: tuple[tuple[str, ...], ...] = ()

    def file(self, component_state_dir: str) -> FileSpec:
        """The record to list in :attr:`ComponentPlan.files`."""
        import json

        data = {
            "unmount_below": list(self.unmount_below),
            "commands": [list(c) for c in self.commands],
        }
        path = f"{component_state_dir.rstrip('/')}/{TEARDOWN_FILE}"
        return FileSpec(path, (json.dumps(data, indent=2) + "\n").encode())


@frozen
class ProcessSpec:
    """A child process.

    ``argv[0]`` is resolved on ``PATH`` at plan time; a missing binary is an
    error before anything starts.  ``stop_signal`` is sent first, then after
    ``stop_grace`` seconds SIGKILL to the whole process group.

    ``reload_files`` are files the process reads at start and does not watch
    (certificates, keys, kubeconfigs).  When a task reports that one of them
    changed (:meth:`TaskContext.files_changed`; paths compare as absolute
    paths with symlinks resolved, on either side), the host sends
    ``reload_signal`` to the process group, or, when it is ``None``, restarts
    the process: the stop protocol above, then a new start.  Such a restart
    is not a failure (no backoff, no step towards the crash-loop limit); the
    component is not ready until its probe passes again, components that
    start after it keep running, and the lifecycle hooks are called as for
    any start (``component_started``, ``component_ready``).

    ``leaves`` are paths the process leaves behind when it ends (a socket it
    does not remove itself): once every process of a run is gone, the host
    removes each that is not a directory (a symlink itself, never its target).
    """

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    readiness: Probe = field(default_factory=StartedProbe)
    stop_signal: int = signal.SIGTERM
    stop_grace: float = 10.0
    exec_allowed: bool = False
    reload_files: tuple[str, ...] = ()
    reload_signal: int | None = None
    leaves: tuple[str, ...] = ()

    def describe(self) -> str:
        return " ".join(self.argv)


@runtime_checkable
class TaskContext(Protocol):
    """What the host gives a :class:`TaskSpec` coroutine."""

    name: str
    log: Any

    def ready(self) -> None:
        """Mark the task ready (for :class:`ReportedProbe`)."""

    def status(self, message: str) -> None:
        """Publish a progress line (``STATUS=`` to systemd, ``/status``)."""

    def report(self, details: Any = None, problems: Any = ()) -> None:
        """Publish details for ``/status`` and ``/metrics`` (e.g. ``{"certificates": [...]}``;
        ``"lines"``, a list of strings, are printed by ``nodehost status`` under the table)
        and the problems that make the component not ready (empty: healthy)."""

    def files_changed(self, paths: Iterable[str]) -> None:
        """Say that ``paths`` were replaced: every running process that lists one of them
        in its :attr:`ProcessSpec.reload_files` is signalled or restarted (see there).
        Returns at once; the restarts happen in the background."""

    async def apply_config(self, content: bytes, origin: str) -> Any:
        """Have the host take ``content`` as the node's config file: validated as
        ``start`` validates, written, the components whose plan changed restarted,
        rolled back if they are not ready in time (:mod:`nodehost.daemon.reconfigure`).
        ``origin`` names who asks, for the log and ``/status``.  Returns the
        :class:`~nodehost.daemon.reconfigure.ApplyResult`; a bad configuration
        is a result, not an exception.  If this very task is restarted by the
        apply, it is cancelled while it waits; the apply goes on."""

    async def run_program(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        stdin: int | None = None,
        stdout: int | None = None,
    ) -> Any:
        """Run a short program and wait for it, its exit status taken from the host's
        reaper (a task must not wait for a subprocess itself: the host reaps every
        child); an :class:`~nodehost.daemon.oneshot.OneshotResult`.  ``stdin`` and
        ``stdout`` are file descriptors handed over (closed once the child has them;
        default: ``/dev/null``, captured with standard error).  Raises
        :class:`OSError` when it cannot be started."""


@frozen
class TaskSpec:
    """A coroutine run in the host's event loop until it returns or is cancelled.

    Returning or raising counts as an exit (restart policy applies; an
    exception's ``Type: message`` is the exit's description, in ``/status``
    and in the node's failure message); stopping the component cancels it
    and waits ``stop_grace`` seconds.

    When the running node takes a new configuration, a component is restarted
    only if its new plan differs from the running one (``==``).  So that an
    unchanged task keeps running, make ``run`` a value: a frozen dataclass
    holding the settings it was planned with, with a ``__call__``.  A fresh
    closure, or a bound method (compared by its object's identity), compares
    unequal, and the task restarts on every configuration change.
    """

    run: Callable[[TaskContext], Awaitable[None]]
    readiness: Probe = field(default_factory=ReportedProbe)
    stop_grace: float = 10.0
    description: str = "in-process task"

    def describe(self) -> str:
        return self.description


@frozen
class CertificateSource:
    """A certificate a component uses: the PEM file ``path``, or ``pem`` (the certificate
    embedded in ``path``, a kubeconfig's ``client-certificate-data``)."""

    name: str
    path: str
    pem: bytes | None = None


@frozen
class ComponentPlan:
    """What one component needs: files to write and one thing to run.

    ``run`` is ``None`` when there is nothing to keep running: with
    ``inactive_reason`` set, the configuration gives the component nothing to
    do (the DNS server without ``dnsBindAddress``); without it, the component
    only writes its files and is ready once they are written (a CNI
    configuration).  ``notes`` are extra lines for ``--dry-run``.
    ``programs`` are the programs that ``run``'s program runs in turn (a
    container runtime's runc, the CNI plugins), found as it will find them: an
    absolute path, or the bare name when it is not found; ``nodehost version``
    reports their versions with those of the programs the plan runs.
    ``certificates`` are certificates the component uses and reports nothing
    about itself: the host shows their expiry as the component's ``details``
    (``certificates``) in ``/status``, ``nodehost status`` and ``/metrics``.
    """

    run: ProcessSpec | TaskSpec | None = None
    files: tuple[FileSpec, ...] = ()
    inactive_reason: str | None = None
    notes: tuple[str, ...] = ()
    programs: tuple[str, ...] = ()
    certificates: tuple[CertificateSource, ...] = ()


@frozen
class PlanContext:
    """Everything a component may read when planning."""

    #: the resolved, validated NodeConfig.
    config: NodeConfig
    #: the start options (state directory, binary overrides, ...).
    options: StartOptions | None
    record: ComponentRecord
    #: names of every selected component.
    selected: frozenset[str]
    #: the directory the component may write its files under (``<state-dir>/<component>``).
    state_dir: str
    #: every registered provider, by lower-case name.
    network_providers: Mapping[str, NetworkProviderRecord]
    #: the core's hook facade (:class:`nodehost.pluginhost.manager.Hooks`; a plugin calls the
    #: hooks it added with ``hooks.call_each``).
    hooks: Hooks | None
    #: the node's state directory (``--state-dir``), parent of every component's ``state_dir``.
    node_state_dir: str = ""
    #: the selected components that wait for this one (their ``after`` or ``requires`` name it,
    #: or its ``before`` names them): those that use it.
    dependents: frozenset[str] = frozenset()
    #: the :class:`~nodehost.pluginhost.records.ApiRoute` the node's API clients follow
    #: (``config.master_kube_config`` is then its kubeconfig), or None.
    api_route: ApiRoute | None = None


@runtime_checkable
class Component(Protocol):
    """The object a :class:`~nodehost.pluginhost.records.ComponentRecord` carries."""

    def plan(self, context: PlanContext) -> ComponentPlan:
        """Return what to write and run; no side effects.

        Raise :class:`nodehost.errors.RuntimeFailure` for an environment problem
        that makes the component impossible to run (a missing binary); the
        message names the component, the cause and what to do.

        A component whose record sets ``write_flags`` may also define
        ``flag_arguments(context) -> tuple[str, ...]``: every setting as a
        command-line flag, which ``nodehost start --write-flags`` prints.
        """


@runtime_checkable
class NetworkProvider(Protocol):
    """The object a :class:`~nodehost.pluginhost.records.NetworkProviderRecord` carries.

    The ``sdn`` component delegates to the provider that
    ``networkConfig.networkPluginName`` names.

    Optional method ``cni_network(context) -> nodehost.cni.CniNetwork | None``:
    describe the node's CNI network (configuration directory, binary
    directories, the configuration list it writes, MTU) from the configuration
    alone, with no side effects.  ``nodehost network check`` and container
    runtimes find it through :func:`nodehost.cni.node_network`; None (or no
    such method) means the provider's network is not a CNI network.  A
    component that delegates to providers may offer the same method.
    """

    def plan(self, context: PlanContext) -> ComponentPlan:
        """Return what sets up the pod network on this node; no side effects.

        Raise :class:`nodehost.errors.RuntimeFailure` when the environment
        makes the network impossible (a missing CNI plugin binary, an
        unwritable configuration directory); :func:`nodehost.cni.conflist_plan`
        does this for providers that write a CNI configuration list.
        """
