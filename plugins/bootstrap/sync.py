"""Config sync: a bootstrapped node follows its config map while it runs.

Origin 3.10/3.11 ran a ``sync`` DaemonSet beside every node: a shell loop that
every 180 s extracted ``openshift-node/<BOOTSTRAP_CONFIG_NAME>``, compared an
md5sum, replaced ``node-config.yaml``, checked it, relabelled the Node from
``kubeletArguments.node-labels``, ``pkill``-ed the kubelet and annotated the
Node with ``node.openshift.io/md5sum``.  Here the ``bootstrap`` component does
it, as the node (``node.kubeconfig``), through the configuration's
``masterKubeConfig`` as every component reaches the API server (the routed
kubeconfig when a load balancer routes them: ``nodehost_api_route``):

* it **watches** the config map (one watch from its resourceVersion, resumed
  from the last version seen after a drop; no polling).  After a few failures
  in a row it makes a new client -- rotation may have renewed the node's
  client certificate -- and goes on from the same version.  Every retry, here
  and when patching the Node, waits the API client's backoff
  (``nodehost.api.client.RETRY_BACKOFF``: 0.5 s doubling to 8 s, +-50 %);
* each version's ``node-config.yaml`` gets the same CLI and bootstrap
  overrides as at start (:func:`~nodehost.plugins.bootstrap.join.rewrite_node_config`)
  and goes to the host (``TaskContext.apply_config``), which validates it as
  ``start`` does, writes it, restarts only the components whose plan changed
  and rolls it back if they are not ready in time
  (:mod:`nodehost.daemon.reconfigure`).  The content is parsed by the one
  bounded loader, in a worker thread (:func:`nodehost.config.jsonsafe.off_loop`);
  content that it refuses (an alias bomb, deep nesting, a duplicate key, a
  lone surrogate, more than 4 MiB) is handed over as it is, so the host
  rejects it with the loader's message, line and column, as it would the same
  bytes in the file or by SIGHUP, and the node runs on.
  Versions that arrive during an apply are coalesced: the latest one is next;
* the Node gets an **event** for each apply (``NodeConfigApplied``, or
  ``NodeConfigRejected`` / ``NodeConfigRolledBack`` / ``NodeConfigRollbackFailed``
  with the problems, as warnings);
* once a configuration runs (applied, or already running), the Node gets the
  **labels** of its ``kubeletArguments.node-labels`` (added or changed, never
  removed -- Origin did not remove them either) and the **annotations**
  ``node.openshift.io/md5sum`` (the md5 of the config map's
  ``node-config.yaml``, Origin's key) and ``nodehost.io/config-generation``
  (the host's configuration generation).  A Node that is not registered yet
  is patched once it is.

Only ``node-config.yaml`` is followed (as Origin's loop); the config map's
other keys are written at start.  A new configuration that changes the
``bootstrap`` component's own plan (``masterKubeConfig``,
``servingInfo.bindAddress``) restarts this task too: the apply goes on, the
new task labels and annotates the Node, but that apply's event is not posted
(the log and ``/status`` have it).  The sync is off when the node runs from a
``--config`` file other than the bootstrap's ``<config-dir>/node-config.yaml``
(the config map would not be what runs).
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import TYPE_CHECKING, Any

from nodehost.frozen import frozen
from nodehost.plugins.bootstrap.join import (
    NODE_CONFIG,
    BootstrapSettings,
    certstore_current_if_valid,
    rewrite_node_config,
    settings_from_options,
)

if TYPE_CHECKING:  # pragma: no cover
    from nodehost.api.client import ClusterClient
    from nodehost.component import TaskContext
    from nodehost.daemon.reconfigure import ApplyResult
    from nodehost.options import StartOptions

MD5_ANNOTATION = "node.openshift.io/md5sum"
GENERATION_ANNOTATION = "nodehost.io/config-generation"
#: Watch failures in a row after which the client is made anew (fresh credentials).
WATCH_FAILURES = 5
EVENTS = {
    "applied": ("Normal", "NodeConfigApplied"),
    "rejected": ("Warning", "NodeConfigRejected"),
    "rolled back": ("Warning", "NodeConfigRolledBack"),
    "rollback failed": ("Warning", "NodeConfigRollbackFailed"),
}


@frozen
class SyncSettings:
    """What the sync is planned with: the start options (a value, stable across plans)
    and the kubeconfig it reaches the API server through (``masterKubeConfig``; "": the
    bootstrap's ``node.kubeconfig``).

    The bootstrap's settings (config map, overrides, node name) are derived
    from them when the sync runs: they name local addresses, which may change.
    """

    options: StartOptions
    kubeconfig: str = ""

    def client_kubeconfig(self, bootstrap: BootstrapSettings) -> str:
        return self.kubeconfig or str(bootstrap.node_kubeconfig)

    @property
    def where(self) -> str:
        return f"{self.options.bootstrap_config_namespace}/{self.options.bootstrap_config_name}"

    def bootstrap(self) -> BootstrapSettings:
        return settings_from_options(self.options)


class Latest:
    """The newest config map version not yet handled (older ones are dropped)."""

    def __init__(self) -> None:
        self.value: dict[str, Any] | None = None
        self.arrived = asyncio.Event()

    def put(self, value: dict[str, Any]) -> None:
        self.value = value
        self.arrived.set()

    async def take(self) -> dict[str, Any]:
        await self.arrived.wait()
        self.arrived.clear()
        value, self.value = self.value, None
        assert value is not None
        return value


class ConfigSync:
    """Runs the sync of the module docstring for one task run."""

    def __init__(self, settings: SyncSettings, context: TaskContext) -> None:
        self.settings = settings
        self.bootstrap = settings.bootstrap()
        self.where = settings.where
        self.context = context
        self.log = context.log
        self.labelling: asyncio.Task[None] | None = None
        self.last_patch: dict[str, Any] | None = None
        self.events: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        """Follow the config map and apply each new version, until cancelled."""
        latest = Latest()
        follower = asyncio.create_task(self.follow(latest))
        try:
            while True:
                taking = asyncio.create_task(latest.take())
                await asyncio.wait({taking, follower}, return_when=asyncio.FIRST_COMPLETED)
                if follower.done():
                    taking.cancel()
                    follower.result()  # it only ends by raising: let the host see it
                await self.sync(taking.result())
        finally:
            for task in (follower, self.labelling, *self.events):
                if task is not None:
                    task.cancel()

    # --- following --------------------------------------------------------------------

    async def follow(self, latest: Latest) -> None:
        """Put every version of the config map into ``latest``, resuming as the docstring says."""
        from nodehost.api.client import RETRY_BACKOFF, ClusterClient, ClusterError
        from nodehost.api.objects import version_of

        version: str | None = None
        failures = 0
        while True:
            try:
                kubeconfig = self.settings.client_kubeconfig(self.bootstrap)
                async with ClusterClient(kubeconfig, on_retry=self._retrying) as client:
                    async for config_map in client.follow(
                        "ConfigMap",
                        self.bootstrap.config_map,
                        self.bootstrap.namespace,
                        since=version,
                        give_up_after=WATCH_FAILURES,
                    ):
                        failures = 0
                        version = version_of(config_map, version or "") or None
                        latest.put(config_map)
            except ClusterError as error:
                failures += 1
                delay = RETRY_BACKOFF.delay(failures)
                self.log.warning(
                    "config sync: cannot follow the config map; retrying",
                    config_map=self.where,
                    error=str(error),
                    retry_in=round(delay, 1),
                )
                await asyncio.sleep(delay)

    def _retrying(self, message: str) -> None:
        self.log.info("config sync", config_map=self.where, status=message)

    # --- one version --------------------------------------------------------------------

    async def sync(self, config_map: dict[str, Any]) -> None:
        """Apply one version's ``node-config.yaml``; an event, then labels if it runs.  A
        version of the wrong shape (no ``metadata`` or another name, ``data`` a list, the
        key not a string) is ignored with one log line: the running config stays."""
        from nodehost.api.objects import MalformedObject, mapping, name_of, text, version_of
        from nodehost.config.jsonsafe import off_loop

        try:
            name = name_of(config_map)
            if name != self.bootstrap.config_map:
                raise MalformedObject(f"metadata.name is {name!r}, not the config map followed")
            raw = mapping(config_map.get("data"), "data").get(NODE_CONFIG)
            raw = None if raw is None else text(raw, f"data.{NODE_CONFIG}")
        except MalformedObject as error:
            self.log.warning(
                "config sync: config map ignored: not the shape of a ConfigMap; the running "
                "config stays",
                config_map=self.where,
                problem=str(error),
            )
            return
        if raw is None:
            self.log.warning(
                f"config sync: config map has no {NODE_CONFIG}; nothing to apply",
                config_map=self.where,
            )
            return
        data = raw.encode("utf-8", "surrogatepass")  # the loader refuses a lone one, placed
        md5 = hashlib.md5(data, usedforsecurity=False).hexdigest()
        version = version_of(config_map, "?")
        origin = f"config map {self.where} (resourceVersion {version}, md5 {md5})"
        content = await off_loop(self.node_config, data)
        result = await self.context.apply_config(content, origin)
        if result.result in EVENTS:
            self.start_node_update(event=self.event(result))
        if result.result in ("applied", "unchanged"):
            patch = await off_loop(node_patch, content, md5, result.generation)
            self.start_node_update(patch=patch)

    def node_config(self, data: bytes) -> bytes:
        """``data`` with the start's overrides (as it is if it cannot be loaded: the host
        then rejects it with the loader's own message, line and column)."""
        serving = certstore_current_if_valid(self.bootstrap)
        return rewrite_node_config(data, self.bootstrap, serving)

    # --- the Node -----------------------------------------------------------------------

    def start_node_update(
        self, *, event: dict[str, Any] | None = None, patch: dict[str, Any] | None = None
    ) -> None:
        """Post ``event`` once, or (replacing an earlier one) patch the Node until it takes."""
        if event is not None:
            posting = asyncio.create_task(self._post_event(event))
            self.events.add(posting)
            posting.add_done_callback(self.events.discard)
        if patch is not None:
            self.last_patch = patch
            if self.labelling is not None:
                self.labelling.cancel()
            self.labelling = asyncio.create_task(self._patch_node(patch))

    def patch_again(self) -> None:
        """The Node was registered again (it had been deleted): give it the last patch."""
        if self.last_patch is not None:
            self.start_node_update(patch=self.last_patch)

    async def _post_event(self, event: dict[str, Any]) -> None:
        from nodehost.api.client import ClusterError

        try:
            async with self._client() as client:
                await client.create("Event", event)
        except ClusterError as error:
            self.log.warning("config sync: cannot post the Node event", error=str(error))

    async def _patch_node(self, patch: dict[str, Any]) -> None:
        """Merge ``patch`` into the Node, retrying (a Node not registered yet included)."""
        from nodehost.api.client import RETRY_BACKOFF, ClusterError, ClusterRefused

        node = self.bootstrap.node_name
        attempt = 0
        while True:
            try:
                async with self._client() as client:
                    await client.merge_patch("Node", node, patch)
                self.log.info("config sync: Node labelled and annotated", node=node, patch=patch)
                return
            except ClusterError as error:
                attempt += 1
                unregistered = isinstance(error, ClusterRefused) and error.code == 404
                if attempt == 1 or not unregistered:
                    why = "the Node is not registered yet" if unregistered else str(error)
                    say = self.log.info if unregistered else self.log.warning
                    say(
                        "config sync: Node not patched yet; retrying",
                        node=node,
                        error=why,
                    )
                await asyncio.sleep(RETRY_BACKOFF.delay(attempt))

    def _client(self) -> ClusterClient:
        from nodehost.api.client import ClusterClient

        return ClusterClient(self.settings.client_kubeconfig(self.bootstrap))

    def event(self, result: ApplyResult) -> dict[str, Any]:
        """The Node event that reports ``result`` (as the kubelet's own node events look)."""
        from nodehost.api.events import node_event

        kind, reason = EVENTS[result.result]
        message = f"config {result.result} (generation {result.generation}) from {result.origin}"
        if result.problems:
            message += ": " + "; ".join(result.problems)
        return node_event(self.bootstrap.node_name, reason, message, kind)


def node_patch(content: bytes, md5: str, generation: int) -> dict[str, Any]:
    """The merge patch for the Node: the config's node labels and the two annotations."""
    return {
        "metadata": {
            "labels": node_labels(content),
            "annotations": {MD5_ANNOTATION: md5, GENERATION_ANNOTATION: str(generation)},
        }
    }


def node_labels(content: bytes) -> dict[str, str]:
    """``kubeletArguments.node-labels`` of a node config (``k=v,k2=v2`` values; later wins)."""
    from nodehost.config.yamlsafe import YAMLFileError, parse_yaml_bytes

    try:
        document = parse_yaml_bytes(content).data
    except YAMLFileError:
        return {}
    arguments = document.get("kubeletArguments") if isinstance(document, dict) else None
    values = arguments.get("node-labels") if isinstance(arguments, dict) else None
    labels: dict[str, str] = {}
    for value in values if isinstance(values, list) else []:
        for pair in str(value).split(","):
            key, equals, label = pair.strip().partition("=")
            if equals and key:
                labels[key] = label
    return labels
