"""The ``kubernetes`` record source: Services and EndpointSlices from the cluster's API server.

It follows the API server of ``masterKubeConfig``, as Origin's node DNS used
the node's own API connection; an empty ``masterKubeConfig`` (the
network-only selection without ``--kubeconfig``) means the in-cluster service
account, and planning fails with one line when there is none.  It reads Services
(``core/v1``) and EndpointSlices (``discovery.k8s.io/v1``) in every namespace
through :mod:`nodehost.api.client` (imported only when the source runs) and keeps
the DNS records in step:

* per resource: list (in pages of :data:`LIST_PAGE`, each page turned into
  the DNS model at once, so a large cluster neither holds the event loop nor
  keeps its API objects in memory), then watch from the list's ``resourceVersion``;
* a watch request asks the server to end it after a random 5 to 10 minutes
  (the API client's ``timeoutSeconds``; ``watch_seconds`` fixes it), and the
  client ends it itself 30 s later if the server does not; the next one
  resumes from the last version seen (as client-go's reflector does);
* a watch that fails -- dropped connection, an unreachable server, an error
  answer, a stream ended at once without an event, a stream silent past the
  client's idle limit -- is resumed from the last version seen after a backoff
  delay (with jitter, so a fleet of nodes does not reconnect in step), without
  listing again; only ``410 Gone`` (the server no longer has that version's
  history) means a resync: list again (after a backoff delay too) and write
  only the differences;
* an object of the wrong shape (:mod:`nodehost.api.objects`) is ignored with
  one log line, the records keep what they had; EndpointSlice addresses that
  are not IPs of the slice's family are left out, one log line per slice;
* each watch event is one upsert or delete of one service or of one service's
  endpoints, so the DNS cache drops exactly the answers that depend on it;
* ``sink.synced()`` once both first lists are written (the DNS component is
  not ready before that).

A Service's cluster IPs are ``spec.clusterIPs`` (both families of a
dual-stack service), else ``spec.clusterIP``.  EndpointSlices become the DNS
model's :class:`Endpoints`: the slices that
carry the label ``kubernetes.io/service-name: <svc>`` make up the endpoints
of service ``<svc>`` (one subset per slice, slices in name order), with the
ready endpoints only (``conditions.ready`` missing counts as ready, as the API
defines), their hostnames and the slice's named ports.  FQDN slices carry no
IPs and are skipped, as CoreDNS does.

Failures never end the source: an unreachable API server is retried with
backoff (the first failure of a streak and the recovery are logged) while the
records already written keep being served; 401 or 403, an untrusted server
certificate or an unusable kubeconfig are logged once, naming the kubeconfig,
and retried every :data:`REFUSED_RETRY` seconds (credentials get rotated).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from nodehost.plugins.dns.sources import SourceContext

if TYPE_CHECKING:  # pragma: no cover
    import asyncio

    from nodehost.plugins.dns.sources import RecordSink
    from nodehost.plugins.dns.sources.kubeobjects import Kind, Mirror

# The translation to the DNS model (:mod:`.kubeobjects`, with the model itself) is imported
# when the source runs: planning it, as ``config validate`` and ``--dry-run`` do, needs neither.

NAME = "kubernetes"
LIST_PAGE = 500
REFUSED_RETRY = 30.0
HEALTHY_WATCH = 10.0  # a watch that lasted this long resets the backoff


def source_factory(context: SourceContext) -> KubernetesSource:
    """The ``kubernetes`` source for ``masterKubeConfig``'s API server.

    An empty ``masterKubeConfig`` means the in-cluster service account
    (:mod:`nodehost.api.incluster`); ``ValueError`` when there is none either.
    """
    path = context.config.master_kube_config
    if not path:
        from nodehost.api import incluster

        problem = incluster.unavailable()
        if problem is not None:
            raise ValueError(problem)
    return KubernetesSource(path)


# --- running ----------------------------------------------------------------------------------


class _Progress:
    """The last ``resourceVersion`` a resource's list or watch delivered ("" : list again)."""

    __slots__ = ("version",)

    def __init__(self) -> None:
        self.version = ""


def _object_name(obj: Any) -> str:
    """``namespace/name`` of an object for a log line, whatever its shape."""
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(metadata, dict):
        return "?"
    return f"{metadata.get('namespace') or ''}/{metadata.get('name') or '?'}"[:200]


class _WatchFailed(Exception):
    """A watch ended in a way that calls for a resync; ``gone`` for 410 (no delay)."""

    def __init__(
        self, reason: str, gone: bool = False, refused: bool = False, unreachable: bool = False
    ) -> None:
        super().__init__(reason)
        self.gone = gone
        self.refused = refused
        self.unreachable = unreachable


class KubernetesSource:
    """Follows the API server named by ``kubeconfig``; see the module docstring."""

    name = NAME

    def __init__(
        self,
        kubeconfig: str,
        *,
        log: Any = None,
        watch_seconds: int | None = None,
        refused_retry: float = REFUSED_RETRY,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.log = log
        self.watch_seconds = watch_seconds
        self.refused_retry = refused_retry
        self._trouble: str | None = None

    def __eq__(self, other: object) -> bool:
        """Equal when built alike (same kubeconfig and timings): see ``RecordSource``."""
        return isinstance(other, KubernetesSource) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[Any, ...]:
        return (self.kubeconfig, self.watch_seconds, self.refused_retry)

    async def run(self, sink: RecordSink) -> None:
        """Connect, list and watch both resources; ``sink.synced()`` after both first lists."""
        import asyncio

        from nodehost.plugins.dns.sources.kubeobjects import KINDS, Mirror

        client = await self._connect()
        mirror = Mirror(sink)
        listed = [asyncio.Event() for _ in KINDS]
        followers = [
            asyncio.ensure_future(self._follow(client, kind, mirror, done))
            for kind, done in zip(KINDS, listed, strict=True)
        ]
        waiting = asyncio.ensure_future(asyncio.gather(*(event.wait() for event in listed)))
        try:
            pending: list[asyncio.Future[Any]] = [waiting, *followers]
            await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            if waiting.done():
                sink.synced()
                self._log(
                    "info",
                    "DNS records listed from the API server",
                    services=len(mirror.services),
                    endpointslices=len(mirror.slices),
                )
            await asyncio.gather(*followers)
        finally:
            waiting.cancel()
            for task in followers:
                task.cancel()
            await asyncio.gather(waiting, *followers, return_exceptions=True)
            await client.close()

    # connecting ----------------------------------------------------------------------------

    async def _connect(self) -> Any:
        """A ClusterClient for the kubeconfig; retried (one log line) until it loads."""
        import asyncio

        from nodehost.api.client import ClusterClient, ClusterError

        while True:
            try:
                return await asyncio.to_thread(
                    ClusterClient, self.kubeconfig, on_retry=self._on_retry
                )
            except ClusterError as error:
                self._refused(str(error))
            await asyncio.sleep(self.refused_retry)

    # one resource: list, watch, resync -------------------------------------------------------

    async def _follow(self, client: Any, kind: Kind, mirror: Mirror, listed: asyncio.Event) -> None:
        """List then watch ``kind`` forever: a failed watch resumes from the last version seen,
        a ``410 Gone`` lists again."""
        import asyncio

        failures = 0
        progress = _Progress()
        while True:
            if not progress.version:
                progress.version = await self._list(client, kind, mirror)
                listed.set()
            started = time.monotonic()
            try:
                await self._watch(client, kind, mirror, progress)
            except _WatchFailed as failure:
                healthy = time.monotonic() - started > HEALTHY_WATCH
                failures = 1 if healthy else failures + 1
                if failure.gone:  # list again, after a delay: a server that says 410 to
                    delay = client.backoff.delay(failures)  # every watch is not relisted at once
                    self._log("info", "API watch history expired; listing again",
                              resource=kind.label, reason=str(failure),
                              retry_in=round(delay, 2))  # fmt: skip
                    progress.version = ""
                    await asyncio.sleep(delay)
                    continue
                if failure.refused:
                    self._refused(str(failure))
                    await asyncio.sleep(self.refused_retry)
                    continue
                delay = client.backoff.delay(failures)
                self._watch_failed(kind, failure, progress.version, delay)
                await asyncio.sleep(delay)

    async def _list(self, client: Any, kind: Kind, mirror: Mirror) -> str:
        """List every object of ``kind`` (retrying) into the mirror; the list's version."""
        import asyncio

        from nodehost.api.client import ClusterError

        async def read() -> tuple[list[Any], str]:
            items: list[Any] = []
            version = ""
            async for page, listed in client.pages(kind.kind, limit=LIST_PAGE):
                for obj in page:
                    item = self._convert(kind, obj, "list")
                    if item is not None:
                        items.append(item)
                version = listed
            return items, version

        while True:
            try:
                items, version = await client.call(f"list {kind.label}", read)
                break
            except ClusterError as error:  # refused (401, 403, 404) or an untrusted certificate
                self._refused(str(error))
                await asyncio.sleep(self.refused_retry)
        kind.replace(mirror, items)
        self._recovered()
        return version

    async def _watch(self, client: Any, kind: Kind, mirror: Mirror, progress: _Progress) -> None:
        """Apply the events of ``kind`` after ``progress.version`` (kept up to date); raises
        :class:`_WatchFailed`."""

        from nodehost.api.client import ClusterTLSError, WatchEnded
        from nodehost.api.objects import version_of

        while True:  # one round per server-side timeout; each resumes from the last version
            stream = client.watch(kind.kind, version=progress.version,
                                  server_timeout=self.watch_seconds)  # fmt: skip
            try:
                async for event, obj in stream:
                    self._recovered()
                    progress.version = version_of(obj, progress.version)
                    if event in ("ADDED", "MODIFIED", "DELETED"):
                        item = self._convert(kind, obj, event)
                        if item is not None:
                            kind.apply(mirror, event, item)
            except WatchEnded as ended:  # an error answer, an ERROR event, a lost connection
                code = ended.code
                raise _WatchFailed(ended.reason, gone=code == 410, refused=code in (401, 403),
                                   unreachable=code == 0) from None  # fmt: skip
            except ClusterTLSError as error:
                raise _WatchFailed(str(error), refused=True) from None
            finally:
                await stream.aclose()

    def _convert(self, kind: Kind, obj: Any, event: str) -> Any:
        """``obj`` in the DNS model, or None (one log line) when it is malformed; its
        invalid addresses, left out, are one log line too."""
        from nodehost.api.objects import MalformedObject

        try:
            item = kind.convert(obj)
        except MalformedObject as error:
            self._log("warning", "API object ignored: not the shape of its kind; the records "
                      "keep what they had", resource=kind.label, watch_event=event,
                      object=_object_name(obj), problem=str(error))  # fmt: skip
            return None
        if getattr(item, "invalid", ()):
            self._log("warning", "EndpointSlice addresses that are not IPs of its family left "
                      "out", object=_object_name(obj), addresses=list(item.invalid))  # fmt: skip
        return item

    # logging ---------------------------------------------------------------------------------

    def _watch_failed(self, kind: Kind, failure: _WatchFailed, version: str, delay: float) -> None:
        """A watch ended: a lost connection is one warning per streak, anything else info."""
        if failure.unreachable:
            self._on_retry(f"watch {kind.label}: {failure}")
        self._log("info", "API watch ended; resuming", resource=kind.label, reason=str(failure),
                  version=version, retry_in=round(delay, 2))  # fmt: skip

    def _on_retry(self, message: str) -> None:
        """ClusterClient's retry notice: log the first of a streak of failures."""
        if self._trouble != "unreachable":
            self._trouble = "unreachable"
            event = "API server not answering; serving the records it has and retrying"
            self._log("warning", event, detail=message)

    def _refused(self, message: str) -> None:
        """A failure retrying cannot fix soon: one error line naming the kubeconfig."""
        if self._trouble != "refused":
            self._trouble = "refused"
            self._log(
                "error",
                f"DNS record source cannot read the API with {self._credentials()}: "
                f"{message}; retrying every {self.refused_retry:g}s",
            )

    def _credentials(self) -> str:
        if not self.kubeconfig:
            return "the in-cluster service account"
        return f"kubeconfig {self.kubeconfig}"

    def _recovered(self) -> None:
        if self._trouble is not None:
            self._trouble = None
            self._log("info", "API server reachable again")

    def _log(self, level: str, event: str, **fields: Any) -> None:
        if self.log is None:
            from nodehost.log import get_logger

            self.log = get_logger("nodehost", component="dns", source=NAME)
        getattr(self.log, level)(event, **fields)
