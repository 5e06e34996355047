"""The ``runtime`` component: the node's container runtime (containerd), or the wait for one.

In the default selection it runs whenever a selected component starts after
it (the kubelet's record names ``runtime`` in ``after``: the relation lives in
records, not here), so the kubelet never starts before the runtime answers
(k0s#523: a kubelet crash-looping on a socket that never appeared, with
nothing saying why).

* **Managed** (no external endpoint configured): nodehost writes a
  containerd configuration of its own (:mod:`.containerd`: root, state,
  sockets and opt plugins under ``<state-dir>/runtime``, or the standard
  paths with ``containerRuntime.paths: standard``; the CRI plugin's CNI
  directories from the node's network provider; runc's cgroup driver) and
  runs ``containerd --config <state-dir>/runtime/containerd.toml`` as a
  supervised child.  Ready when containerd answers CRI's ``Version`` and
  ``Status`` with ``RuntimeReady`` on its socket, as a kubelet needs it
  (:class:`~nodehost.component.CriProbe`, :mod:`nodehost.daemon.cri`); a
  gRPC health answer alone is not enough: a containerd with its CRI plugin
  disabled gives one too.  While it runs, ``nodehost status`` shows both
  conditions (``NetworkReady`` is false until a CNI config is in place),
  checked again every 10 s.
  The kubelet gets ``container-runtime-endpoint``, ``image-service-endpoint``
  and ``cgroup-driver`` from this plugin's ``nodehost_kubelet_arguments``
  (the kubelet plugin's own hook; implemented as optional, so this plugin
  loads on a node without the kubelet plugin).
* **External** (``containerRuntime.endpoint``, the kubelet's
  ``container-runtime-endpoint`` in ``kubeletArguments``, or a non-default
  ``dockerConfig.dockerShimSocket``): no containerd; the component waits for
  that runtime to answer CRI with ``RuntimeReady`` (:mod:`.external`), with
  a ``STATUS=`` line naming it and what it answered.

containerd is an agent; its shims and their containers are workloads
(:mod:`.containerd`): if containerd exits, the restart policy starts it
again and it reconnects to the running shims; a stop of nodehost leaves them
running and the next start's containerd finds them; ``nodehost teardown``
ends them.  The kubelet is not restarted when containerd is -- it reconnects
to the same socket by itself, as it does when a runtime restarts under
systemd.  Settings: :mod:`.settings`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from nodehost import ComponentRecord, Problem, ValidationScope, hookimpl
from nodehost.component import (
    ComponentPlan,
    CriProbe,
    FileSpec,
    PlanContext,
    ProcessSpec,
    ReportedProbe,
    TaskSpec,
)
from nodehost.config.sections import idle_section_problems
from nodehost.errors import InvalidSetting, RuntimeFailure
from nodehost.plugins.runtime import containerd, proxy, registries
from nodehost.plugins.runtime.settings import (
    MAX_SOCKET_PATH,
    SCHEMA,
    SECTION,
    TTRPC_SUFFIX,
    External,
    Paths,
    RuntimeSettings,
    read_settings,
)

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.check import Check, CheckContext
    from nodehost.cni import CniNetwork
    from nodehost.config.schema import NodeConfig

NAME = "runtime"
IMAGES = "images"
MIRROR_REWRITE = "mirror-rewrite"


@hookimpl
def nodehost_components() -> list[ComponentRecord]:
    return [
        ComponentRecord(
            name=NAME,
            summary="Container runtime: containerd for the kubelet, or a wait for an external one.",
            component=RUNTIME,
            validation_scope=ValidationScope.NETWORK,
            config_sections=(SECTION,),
            config_schema={SECTION: SCHEMA},
        ),
        ComponentRecord(
            name=IMAGES,
            summary="Image archives imported into the managed containerd before the kubelet "
            "starts; the pod infrastructure image checked.",
            component=IMAGES_COMPONENT,
            after=(NAME,),
            before=("kubelet",),
            validation_scope=ValidationScope.NETWORK,
        ),
        ComponentRecord(
            name=MIRROR_REWRITE,
            summary="A loopback pull-through proxy for registry mirrors with a rewrite "
            "(repository names rewritten, as k3s does).",
            component=MIRROR_REWRITE_COMPONENT,
            before=(NAME,),
            validation_scope=ValidationScope.NETWORK,
        ),
    ]


@hookimpl
def nodehost_validate_config(config: NodeConfig, selected: frozenset[str]) -> list[Problem]:
    """Every problem of the ``containerRuntime`` section, when the runtime is selected; its
    bad content whenever it is set (:func:`idle_section_problems`)."""
    settings, reader = read_settings(config)
    if NAME not in selected:
        runs_when = f"the {NAME} component is selected"
        return idle_section_problems(config, SECTION, reader.problems, runs_when)
    problems = list(reader.problems)
    if settings.image_archives is not None and IMAGES not in selected:
        why = f"it is used only when the {IMAGES} component is selected"
        problems.append(Problem.no_effect(f"{SECTION}.imageArchives", why))
    if settings.external is None and MIRROR_REWRITE not in selected:
        problems += [
            Problem.forbidden(
                f"{SECTION}.{registries.KEY}.mirrors.{host}.rewrite",
                f"needs the {MIRROR_REWRITE} component (its loopback proxy rewrites the "
                "names): select it, or pull without rewrite",
            )
            for host, _ in settings.registries.rewrites
        ]
    return problems


@hookimpl(optionalhook=True)
def nodehost_kubelet_arguments(
    config: NodeConfig, selected: frozenset[str], state_dir: str
) -> dict[str, list[str]]:
    """Point the kubelet at the runtime's socket and give it the runtime's cgroup driver.

    Nothing when the runtime is not selected, or when ``kubeletArguments`` (or
    ``dockerConfig``) already name the endpoint: the kubelet uses that itself.
    """
    if NAME not in selected:
        return {}
    settings, _ = read_settings(config)
    if settings.external is None:
        endpoint = settings.paths(os.path.join(state_dir, NAME)).endpoint
    elif settings.external.source == f"{SECTION}.endpoint":
        endpoint = settings.external.endpoint
    else:
        return {}
    return {
        "container-runtime-endpoint": [endpoint],
        "image-service-endpoint": [endpoint],
        "cgroup-driver": [settings.cgroup_driver],
    }


def _programs_run(network: CniNetwork | None, search_path: str) -> tuple[str, ...]:
    """What containerd runs: runc (found by its shims on ``search_path``), the CNI plugins
    of the node's network (and their IPAM plugins), found in its ``bin_dirs``."""
    from nodehost.cni import find_plugin  # an executable in folders, as a shim looks for runc
    from nodehost.cni.conflist import ipam_types, plugin_types

    runc = find_plugin("runc", search_path.split(os.pathsep)) or "runc"
    if network is None:
        return (runc,)
    conflist = network.conflist
    names = [*plugin_types(conflist), *ipam_types(conflist)] if conflist else []
    if network.loopback:
        names.append("loopback")
    found = [find_plugin(name, network.bin_dirs) or name for name in dict.fromkeys(names)]
    return (runc, *found)


class Runtime:
    """Plans containerd (managed) or the wait for an external runtime."""

    def plan(self, context: PlanContext) -> ComponentPlan:
        default_selection = context.options is None or (
            getattr(context.options, "components", None) is None
            and getattr(context.options, "enable", None) is None
        )
        if default_selection and not context.dependents - {IMAGES}:  # images only serve them
            return ComponentPlan(
                inactive_reason="no selected component runs after it (name runtime in "
                "--components to run the container runtime alone)"
            )
        settings, reader = read_settings(context.config)
        if reader.problems:
            raise InvalidSetting(*reader.problems)
        if settings.external is not None:
            return self._wait_plan(settings.external)
        return self._containerd_plan(context, settings.paths(context.state_dir), settings)

    @staticmethod
    def _wait_plan(external: External) -> ComponentPlan:
        return ComponentPlan(
            run=TaskSpec(
                run=_wait_task(external),
                readiness=ReportedProbe(),
                stop_grace=2.0,
                description=f"wait for the external container runtime at {external.endpoint}",
            ),
            notes=(f"external container runtime {external.endpoint} ({external.source})",),
        )

    @staticmethod
    def _containerd_plan(
        context: PlanContext, paths: Paths, settings: RuntimeSettings
    ) -> ComponentPlan:
        from nodehost.cni import node_network
        from nodehost.log import verbosity

        check_socket_path(paths.socket)
        network = node_network(context)
        config_path = os.path.join(context.state_dir, containerd.CONFIG_FILE_NAME)
        image = _pod_image(context.config)
        hosts = registry_files(settings.registries, context.state_dir)
        has_hosts = bool(settings.registries.hosts())  # some written by mirror-rewrite
        hosts_dir = (
            registries.hosts_dir(settings.registries, context.state_dir) if has_hosts else None
        )
        lines = registries.cri_registry_lines(settings.registries, hosts_dir)
        restrict_oom = not containerd.can_lower_oom_score_adj()
        content = containerd.render_config(
            paths, network, settings.cgroup_driver, image, restrict_oom, lines
        )
        config_mode = 0o600 if settings.registries.auth else 0o644
        proxy_env = proxy.environment(
            settings.proxy, context.config, proxy.subnets(network.conflist if network else None)
        )
        launchers, search_path = containerd.shim_launchers(
            context.state_dir, os.environ.get("PATH", os.defpath)
        )
        return ComponentPlan(
            run=ProcessSpec(
                argv=containerd.containerd_argv(config_path, verbosity()),
                env={"PATH": search_path, **proxy_env},
                readiness=CriProbe(
                    endpoint=paths.endpoint,
                    interval=0.5,
                    timeout=2.0,
                    not_cri_hint=containerd.NOT_CRI_HINT,
                ),
                stop_grace=containerd.STOP_GRACE,
                leaves=(paths.socket, paths.socket + TTRPC_SUFFIX),  # the ttrpc one stays
            ),
            files=(FileSpec(config_path, content, config_mode), *hosts, *launchers),
            programs=_programs_run(network, search_path),
            notes=(
                f"writes {config_path} (root {paths.root}, state {paths.state})",
                f"socket {paths.socket}; cgroup driver {settings.cgroup_driver}; "
                f"pod sandbox image {image}",
                "CNI: "
                + (f"{network.conf_dir} (provider {network.provider})" if network else "defaults"),
                *(
                    ("no CAP_SYS_RESOURCE: pods' oom_score_adj is kept at containerd's own",)
                    if restrict_oom
                    else ()
                ),
                *registries.describe(settings.registries),
                *proxy.describe(settings.proxy, proxy_env),
            ),
        )


def registry_files(settings: registries.Registries, component_dir: str) -> list[FileSpec]:
    """The ``hosts.toml`` files of the registry hosts folder (:mod:`.registries`)."""
    return [
        FileSpec(path, content, 0o644)
        for path, content in registries.hosts_files(settings, component_dir)
    ]


def check_socket_path(socket: str) -> None:
    """Raise :class:`RuntimeFailure` when containerd could not create ``socket``."""
    longest = socket + TTRPC_SUFFIX
    if len(longest) > MAX_SOCKET_PATH:
        raise RuntimeFailure(
            f"component {NAME}: the socket path {longest} is {len(longest)} bytes, longer than "
            f"containerd allows ({MAX_SOCKET_PATH}); use a shorter --state-dir or set "
            f"{SECTION}.socket"
        )
    existing = os.path.dirname(socket)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing) or not os.access(existing, os.W_OK | os.X_OK):
        raise RuntimeFailure(
            f"component {NAME}: cannot create the socket {socket}: {existing} is not a "
            f"writable directory; choose another {SECTION}.socket or --state-dir"
        )


RUNTIME = Runtime()


class Images:
    """Plans the import of image archives into the managed containerd (:mod:`.images`)."""

    def plan(self, context: PlanContext) -> ComponentPlan:
        from nodehost.plugins.runtime.images import RECORD, ImportTask, notes

        default_selection = context.options is None or (
            getattr(context.options, "components", None) is None
            and getattr(context.options, "enable", None) is None
        )
        if default_selection and not context.dependents:
            return ComponentPlan(inactive_reason="no selected component runs after it")
        if NAME not in context.selected:
            return ComponentPlan(
                inactive_reason=f"the {NAME} component is not selected (images go into the "
                "containerd nodehost runs)"
            )
        settings, reader = read_settings(context.config)
        if reader.problems:
            raise InvalidSetting(*reader.problems)
        if settings.external is not None:
            return ComponentPlan(
                inactive_reason=f"the container runtime is external ({settings.external.endpoint})"
            )
        node_dir = os.path.dirname(context.state_dir)
        runtime_dir = os.path.join(node_dir, NAME)
        task = ImportTask(
            socket=settings.paths(runtime_dir).socket,
            archives=settings.image_archives or os.path.join(node_dir, "images"),
            record=os.path.join(context.state_dir, RECORD),
            pod_image=_pod_image(context.config),
            make_folder=settings.image_archives is None,
            registries=settings.registries,
            pod_image_required=not _standin_kubelet(context.options),
        )
        return ComponentPlan(
            run=TaskSpec(
                run=task,
                readiness=ReportedProbe(),
                stop_grace=5.0,
                description=f"import image archives from {task.archives}; check {task.pod_image}",
            ),
            notes=notes(task),
        )


IMAGES_COMPONENT = Images()


class MirrorRewrite:
    """Plans the rewriting proxy of registry mirrors (:mod:`.mirrorproxy`)."""

    def plan(self, context: PlanContext) -> ComponentPlan:
        settings, reader = read_settings(context.config)
        if reader.problems:
            raise InvalidSetting(*reader.problems)
        if not settings.registries.rewrites:
            return ComponentPlan(inactive_reason="no registry mirror has a rewrite")
        if NAME not in context.selected or settings.external is not None:
            return ComponentPlan(
                inactive_reason=f"nodehost runs no containerd (the {NAME} component is not "
                "selected, or the runtime is external)"
            )
        from nodehost.plugins.runtime.mirrorproxy import MirrorProxyTask  # an active plan's

        runtime_dir = os.path.join(context.node_state_dir, NAME)
        task = MirrorProxyTask(settings.registries, runtime_dir)
        hosts = ", ".join(host for host, _ in settings.registries.rewrites)
        return ComponentPlan(
            run=TaskSpec(
                run=task,
                readiness=ReportedProbe(),
                stop_grace=2.0,
                description=f"rewrite repository names of pulls from the mirrors of {hosts}",
            ),
            notes=(
                f"listens on 127.0.0.1 (a port the kernel picks) and writes the hosts.toml of "
                f"{hosts} in {registries.hosts_dir(settings.registries, runtime_dir)}",
            ),
        )


MIRROR_REWRITE_COMPONENT = MirrorRewrite()


def _wait_task(external: External) -> Any:
    """The waiting task; imported late because ``external`` needs asyncio."""
    from nodehost.plugins.runtime.external import wait_task

    return wait_task(external)


def _standin_kubelet(options: Any) -> bool:
    """Whether ``--standins`` makes the kubelet nodehost's stand-in (which runs no pods)."""
    standins = getattr(options, "standins", None) or "never"
    if standins != "missing":
        return standins == "always"
    from nodehost.binaries import which

    return which("kubelet") is None


def _pod_image(config: Any) -> str:
    """Origin's pod infrastructure image: ``imageConfig.format`` expanded for ``pod``."""
    from nodehost.config.images import ImageTemplateError, pod_image

    try:
        return pod_image(config.image_config)
    except ImageTemplateError as error:
        raise RuntimeFailure(f"component runtime: imageConfig.format: {error}") from None


@hookimpl
def nodehost_checks(context: CheckContext) -> list[Check]:
    """The runtime's host checks (:mod:`nodehost.plugins.runtime.checks`), if it is selected
    and active (its module is not loaded to answer "none")."""
    if context.planned(NAME) is None:
        return []
    from nodehost.plugins.runtime.checks import runtime_checks

    return runtime_checks(context)
