"""The built-in ``external`` network provider: another agent manages the pod network.

For networks set up by something else (a network agent on the host, or a
DaemonSet that writes its CNI configuration), nodehost writes nothing and
waits until a CNI configuration appears in the configuration directory.
Settings, in the ``externalNetwork`` section (all optional)::

    networkConfig:
      networkPluginName: external
    externalNetwork:
      cniConfDir: /etc/cni/net.d
      cniBinDirs: [/opt/cni/bin, /usr/lib/cni]
      readyTimeout: 10m        # fail if no configuration appeared by then

While waiting, the component's status (and systemd's ``STATUS=``) says what it
waits for; once ready it keeps watching and logs when the configuration is
replaced or removed.

Beware: the kubelet starts after the network is ready, so an agent that runs
as pods of this very node would wait for a kubelet that waits for it; run
such an agent on the host, or start the kubelet without the sdn component.
"""

from __future__ import annotations

from typing import Any

from nodehost import Problem
from nodehost.cni import CNI_DIRS_SCHEMA, DEFAULT_BIN_DIRS, DEFAULT_CONF_DIR, CniNetwork
from nodehost.cni.conflist import first_network
from nodehost.component import ComponentPlan, PlanContext, ReportedProbe, TaskContext, TaskSpec
from nodehost.config.sections import SectionReader, section_schema
from nodehost.errors import RuntimeFailure
from nodehost.frozen import frozen

NAME = "external"
SECTION = "externalNetwork"
SUMMARY = "The pod network is managed by another agent; ready once its CNI configuration appears."
DEFAULT_TIMEOUT = "10m"

SCHEMA = section_schema(
    "The external network provider: another agent writes the CNI configuration.",
    {
        **CNI_DIRS_SCHEMA,
        "readyTimeout": {
            "type": "string",
            "default": DEFAULT_TIMEOUT,
            "description": "How long to wait for the configuration before saying so (Go duration).",
        },
    },
)

#: Seconds between looks at the configuration directory, and between status lines.
POLL_INTERVAL = 1.0
STATUS_INTERVAL = 15.0


@frozen
class ExternalSettings:
    conf_dir: str = DEFAULT_CONF_DIR
    bin_dirs: tuple[str, ...] = DEFAULT_BIN_DIRS
    timeout: float = 600.0


def read_settings(config: Any) -> tuple[ExternalSettings, list[Problem]]:
    reader = SectionReader(SECTION, config.extra.get(SECTION))
    settings = ExternalSettings(
        conf_dir=reader.absolute_path("cniConfDir", DEFAULT_CONF_DIR),
        bin_dirs=reader.absolute_paths("cniBinDirs", DEFAULT_BIN_DIRS),
        timeout=reader.duration("readyTimeout", DEFAULT_TIMEOUT),
    )
    reader.unknown_keys()
    return settings, reader.problems


class ExternalProvider:
    """Writes nothing; a task that is ready once a CNI configuration exists."""

    def problems(self, config: Any) -> list[Problem]:
        return read_settings(config)[1]

    def cni_network(self, context: PlanContext) -> CniNetwork:
        settings, _ = read_settings(context.config)
        return CniNetwork(
            provider=NAME, conf_dir=settings.conf_dir, bin_dirs=settings.bin_dirs, loopback=False
        )

    def plan(self, context: PlanContext) -> ComponentPlan:
        settings, _ = read_settings(context.config)
        watcher = ConfigurationWatcher(settings.conf_dir, settings.timeout)
        return ComponentPlan(
            run=TaskSpec(
                run=watcher,
                readiness=ReportedProbe(),
                stop_grace=1.0,
                description=f"wait for a CNI configuration in {settings.conf_dir}",
            ),
            notes=(f"nodehost writes no CNI configuration; timeout {settings.timeout:g}s",),
        )


@frozen
class ConfigurationWatcher:
    """The task: wait (with a deadline) for a configuration, report ready, keep watching."""

    conf_dir: str
    timeout: float
    poll_interval: float = POLL_INTERVAL
    status_interval: float = STATUS_INTERVAL

    async def __call__(self, task: TaskContext) -> None:
        path = await self.wait_for_configuration(task)
        task.ready()
        await self.watch(task, path)

    async def wait_for_configuration(self, task: TaskContext) -> str:
        """The path of the first valid configuration; ``RuntimeFailure`` past the timeout."""
        import asyncio  # the host's loop runs it; planning and validation need no asyncio

        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        next_status = loop.time()
        while (found := first_network(self.conf_dir)) is None:
            now = loop.time()
            if now >= deadline:
                raise RuntimeFailure(
                    f"no CNI configuration appeared in {self.conf_dir} within {self.timeout:g}s; "
                    "the agent that manages this node's network has not written one"
                )
            if now >= next_status:
                task.status(
                    f"waiting for a CNI configuration in {self.conf_dir} "
                    f"({deadline - now:.0f}s left)"
                )
                next_status = now + self.status_interval
            await asyncio.sleep(min(self.poll_interval, deadline - now))
        path, conflist = found
        task.log.info(
            "CNI configuration found", component=task.name, file=path, network=conflist["name"]
        )
        return path

    async def watch(self, task: TaskContext, path: str) -> None:
        """Log when the configuration in use is replaced or removed (until cancelled)."""
        import asyncio

        last: str | None = path
        while True:
            await asyncio.sleep(self.poll_interval)
            found = first_network(self.conf_dir)
            current = found[0] if found else None
            if current == last:
                continue
            if current is None:
                task.log.warning("CNI configuration removed", component=task.name, file=last)
                task.status(f"no CNI configuration in {self.conf_dir} any more")
            else:
                task.log.info("CNI configuration changed", component=task.name, file=current)
                task.status(f"using {current}")
            last = current
