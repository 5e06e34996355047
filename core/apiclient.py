"""A Kubernetes API client for the node: kubeconfig, TLS, timeouts, retries, resuming watches.

Built on ``lightkube`` (async, small, typed; its kubeconfig loader handles
client certificates, bearer tokens and CA data or files).  TLS is always
verified, against the kubeconfig's CA, unless the kubeconfig itself says
``insecure-skip-tls-verify: true`` for a cluster without a CA.

Every call has a timeout (:attr:`ClusterClient.timeout`, per request) and is
retried with exponential backoff and jitter on connection errors, 429 (after
the server's ``Retry-After``) and 5xx, until the client's deadline.  Other
answers are final and raise :class:`ClusterRefused` (carrying the HTTP code,
the API's reason and message).  A certificate the client cannot verify raises
:class:`ClusterTLSError` at once: retrying cannot fix a wrong CA.

Objects go in and out as plain mappings in the API's JSON shape.
:meth:`ClusterClient.follow` yields every version of one object from one
watch, resumed from the last version seen after a dropped connection.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from nodehost.backoff import Backoff
from nodehost.errors import RuntimeFailure

T = TypeVar("T")

#: HTTP codes that are worth retrying (besides connection errors).
RETRIABLE = frozenset({429, 500, 502, 503, 504})


class ClusterError(RuntimeFailure):
    """Talking to the API server failed (exit 1, one line)."""


class ClusterUnreachable(ClusterError):
    """No answer (or only retriable ones) from the API server before the deadline."""


class ClusterTLSError(ClusterError):
    """The API server's certificate is not trusted (wrong CA, wrong name)."""


class WaitTimeout(ClusterError):
    """An object did not reach the wanted state before the client's deadline."""

    def __init__(self, message: str, kind: str, name: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.name = name


class ClusterRefused(ClusterError):
    """The API server answered with a final error status."""

    def __init__(self, message: str, code: int, reason: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason


#: The client's retry schedule: 0.5s doubling to 8s, each +-50% (at the cap: 4-8s).  A
#: fleet loses the server at the same instant; +-25% left its retries bunched after
#: a 30 s outage (29 % of the nodes in the busiest second of the first retry after
#: the server returned, against 12.5 % if spread evenly over the 8 s window); +-50%
#: brings that to 17 % (``tests/apiclient/test_retry_spread.py``).
RETRY_BACKOFF = Backoff(initial=0.5, maximum=8.0, jitter=0.5)


def _load_config(kubeconfig: str) -> Any:
    """The lightkube configuration of ``kubeconfig`` ("" : the in-cluster service account)."""
    from lightkube import KubeConfig

    if not kubeconfig:
        from nodehost import incluster

        return incluster.kubeconfig().get()
    return KubeConfig.from_dict(_read_kubeconfig(kubeconfig), fname=kubeconfig).get()


def _resource(kind: str) -> Any:
    """The lightkube resource class for a kind this client uses."""
    from lightkube.resources.certificates_v1 import CertificateSigningRequest
    from lightkube.resources.core_v1 import ConfigMap, Event, Node

    return {
        "CertificateSigningRequest": CertificateSigningRequest,
        "ConfigMap": ConfigMap,
        "Event": Event,
        "Node": Node,
    }[kind]


class ClusterClient:
    """An async client for one kubeconfig; see the module docstring.

    An empty ``kubeconfig`` means the in-cluster service account
    (:mod:`nodehost.incluster`), as Origin's ``GetKubeConfigOrInClusterConfig``.
    ``deadline`` is the monotonic time after which retries stop (None: retry
    forever); ``on_retry(message)`` hears about each retry (``STATUS=`` lines).
    """

    def __init__(
        self,
        kubeconfig: str,
        *,
        timeout: float = 10.0,
        deadline: float | None = None,
        backoff: Backoff | None = None,
        on_retry: Callable[[str], None] | None = None,
    ) -> None:
        from lightkube import AsyncClient
        from lightkube.core.exceptions import ConfigError as LightkubeConfigError

        self.kubeconfig = kubeconfig
        self.timeout = timeout
        self.deadline = deadline
        self.backoff = backoff or RETRY_BACKOFF
        self.on_retry = on_retry or (lambda _message: None)
        import yaml

        try:
            config = _load_config(kubeconfig)
        except (
            OSError,
            ValueError,
            LightkubeConfigError,
            KeyError,
            TypeError,
            yaml.YAMLError,
        ) as error:
            where = f"kubeconfig {kubeconfig}" if kubeconfig else "the in-cluster service account"
            raise ClusterError(f"cannot load {where}: {_describe(error)}") from None
        if config is None:
            raise ClusterError(f"cannot load kubeconfig {kubeconfig}: it has no current context")
        self.server = config.cluster.server
        try:
            import httpx2

            self._client = AsyncClient(config, timeout=httpx2.Timeout(timeout), trust_env=False)
        except (OSError, ssl.SSLError, LightkubeConfigError, ValueError) as error:
            raise ClusterError(
                f"kubeconfig {kubeconfig}: cannot use its credentials: {_describe(error)}"
            ) from None

    @property
    def lightkube(self) -> Any:
        """The ``lightkube.AsyncClient`` inside, for list/watch calls this wrapper lacks.

        Wrap its calls in :meth:`call` to keep the retry policy.
        """
        return self._client

    async def close(self) -> None:
        await self._client.close()

    async def __aenter__(self) -> ClusterClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- calls ---------------------------------------------------------------

    async def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        resource = _resource(kind)
        found = await self.call(
            f"get {kind} {name}", lambda: self._client.get(resource, name, namespace=namespace)
        )
        return found.to_dict()

    async def create(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        resource = _resource(kind)
        obj = resource.from_dict(body)
        created = await self.call(f"create {kind}", lambda: self._client.create(obj))
        return created.to_dict()

    async def merge_patch(
        self, kind: str, name: str, patch: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        """Apply a JSON merge patch (RFC 7386) to object ``name``; the object as patched."""
        from lightkube.types import PatchType

        resource = _resource(kind)
        patched = await self.call(
            f"patch {kind} {name}",
            lambda: self._client.patch(
                resource, name, patch, namespace=namespace, patch_type=PatchType.MERGE
            ),
        )
        return patched.to_dict()

    async def call(self, what: str, operation: Callable[[], Awaitable[T]]) -> T:
        """Run ``operation`` with retries; raise :class:`ClusterError` subclasses."""
        attempt = 0
        while True:
            try:
                return await operation()
            except Exception as error:  # classified below; unknown errors re-raised
                delay, reason = self._retry_after(what, error)
            attempt += 1
            delay = delay if delay is not None else self.backoff.delay(attempt)
            if self.deadline is not None and time.monotonic() + delay > self.deadline:
                raise ClusterUnreachable(
                    f"API server {self.server}: {what}: {reason}; gave up after {attempt} "
                    "attempt(s)"
                ) from None
            self.on_retry(f"API server {self.server}: {reason}; retrying in {delay:.1f}s")
            await asyncio.sleep(delay)

    def _retry_after(self, what: str, error: Exception) -> tuple[float | None, str]:
        """``(server's delay or None, reason)`` for a retriable error; raise a final one."""
        import httpx2
        from lightkube import ApiError

        if isinstance(error, ApiError):
            code = error.status.code or error.response.status_code
            message = error.status.message or str(error)
            if code not in RETRIABLE:
                raise ClusterRefused(
                    f"API server {self.server}: {what}: {message} ({code} {error.status.reason})",
                    code,
                    error.status.reason or "",
                ) from None
            retry_after = error.response.headers.get("Retry-After", "")
            delay = float(retry_after) if retry_after.replace(".", "", 1).isdigit() else None
            return delay, f"{code} {error.status.reason}: {message}"
        if isinstance(error, httpx2.HTTPStatusError):
            code = error.response.status_code
            if code not in RETRIABLE:
                raise ClusterRefused(
                    f"API server {self.server}: {what}: HTTP {code}", code, ""
                ) from None
            return None, f"HTTP {code}"
        if isinstance(error, httpx2.TransportError):
            verify = _certificate_error(error)
            if verify is not None:
                raise ClusterTLSError(
                    f"API server {self.server}: its certificate is not trusted ({verify}); check "
                    f"the certificate authority in {self.kubeconfig or 'the service account'}"
                ) from None
            return None, _describe(error)
        raise error

    # --- watching ------------------------------------------------------------

    async def wait_for(
        self,
        kind: str,
        name: str,
        done: Callable[[dict[str, Any]], bool],
        namespace: str | None = None,
    ) -> dict[str, Any]:
        """Watch object ``name`` until ``done(obj)``; resumes after dropped connections.

        Each round reads the object (with retries), then watches from its
        ``resourceVersion``; a dropped or failed watch starts the next round
        after a backoff delay.  Runs until ``done`` or the deadline
        (:class:`ClusterUnreachable`); ``asyncio.timeout`` around it works too.
        """
        remaining = None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
        try:
            async with asyncio.timeout(remaining):
                return await self._watch_until(kind, name, done, namespace)
        except TimeoutError:
            raise WaitTimeout(
                f"{kind} {name} was not done before the deadline", kind, name
            ) from None

    async def _watch_until(
        self,
        kind: str,
        name: str,
        done: Callable[[dict[str, Any]], bool],
        namespace: str | None,
    ) -> dict[str, Any]:
        import httpx2
        from lightkube import ApiError

        resource = _resource(kind)
        attempt = 0
        while True:
            obj = await self.get(kind, name, namespace)
            if done(obj):
                return obj
            version = obj.get("metadata", {}).get("resourceVersion")
            try:
                async for _event, item in self._client.watch(
                    resource,
                    namespace=namespace,
                    fields={"metadata.name": name},
                    resource_version=version,
                ):
                    attempt = 0
                    current = item.to_dict()
                    if done(current):
                        return current
            except (httpx2.HTTPError, ApiError) as error:
                attempt += 1
                delay = self.backoff.delay(attempt)
                if self.deadline is not None and time.monotonic() + delay > self.deadline:
                    raise ClusterUnreachable(
                        f"API server {self.server}: watch {kind} {name}: {_describe(error)}"
                    ) from None
                self.on_retry(
                    f"watch of {kind} {name} ended ({_describe(error)}); resuming in {delay:.1f}s"
                )
                await asyncio.sleep(delay)

    async def follow(
        self,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        since: str | None = None,
        give_up_after: int | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Every version of object ``name``, for ever: the current one, then each change.

        Without ``since`` one GET (with retries) yields the current version
        first; with it only the versions after resourceVersion ``since`` come.
        Then one watch: when the server ends it, or the connection drops, it
        is resumed from the last version seen (after a backoff delay if it
        failed); only when the server says that version is gone (410) is the
        object read (and yielded) again.  A deletion is not yielded.
        ``give_up_after`` failures in a row raise :class:`ClusterUnreachable`
        naming the last one (a caller may go on with new credentials ``since``
        the last version it saw); None retries for ever.  A missing object is
        :class:`ClusterRefused` (404) from a GET.
        """
        version = since
        if version is None:
            obj = await self.get(kind, name, namespace)
            version = obj.get("metadata", {}).get("resourceVersion")
            yield obj
        failures = 0
        while True:
            try:
                async for event, current in self._watch_object(kind, name, namespace, version):
                    failures = 0
                    version = current.get("metadata", {}).get("resourceVersion") or version
                    if event != "DELETED":
                        yield current
            except _WatchGone:
                obj = await self.get(kind, name, namespace)
                version = obj.get("metadata", {}).get("resourceVersion")
                yield obj
            except _WatchBroken as broken:
                failures += 1
                if give_up_after is not None and failures >= give_up_after:
                    raise ClusterUnreachable(
                        f"API server {self.server}: watch {kind} {name}: {broken}"
                    ) from None
                delay = self.backoff.delay(failures)
                self.on_retry(f"watch of {kind} {name} ended ({broken}); resuming in {delay:.1f}s")
                await asyncio.sleep(delay)

    async def _watch_object(
        self, kind: str, name: str, namespace: str | None, version: str | None
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """One watch of ``name`` from ``version`` as (event type, object) pairs.

        Raises :class:`_WatchGone` for a 410 and :class:`_WatchBroken` for any
        other failure (the connection, the server's answer); returns when the
        server ends the stream cleanly.
        """
        import httpx2
        from lightkube import ApiError

        watch = self._client.watch(
            _resource(kind),
            namespace=namespace,
            fields={"metadata.name": name},
            resource_version=version,
        )
        try:
            async for event, item in watch:
                yield event, item.to_dict()
        except ApiError as error:
            if (error.status.code or 0) == 410:
                raise _WatchGone() from None
            raise _WatchBroken(_describe(error)) from None
        except httpx2.HTTPError as error:
            raise _WatchBroken(_describe(error)) from None


class _WatchGone(Exception):
    """The version a watch started from is no longer kept (410 Gone)."""


class _WatchBroken(Exception):
    """A watch failed: a dropped connection or an error answer."""


def _certificate_error(error: BaseException) -> str | None:
    """The verification failure behind a transport error, if that is what it is."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return seen.verify_message or str(seen)
        if "CERTIFICATE_VERIFY_FAILED" in str(seen):
            return "certificate verify failed"
        seen = seen.__cause__ or seen.__context__
    return None


def _describe(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _read_kubeconfig(path: str) -> Any:
    """The parsed kubeconfig, read bounded, after checking the files it names the same way.

    lightkube hands certificate and key paths to OpenSSL, which would read a
    FIFO or a device without limit: each is checked first (``OSError`` if unusable).
    """
    from nodehost.fileread import KUBECONFIG_LIMIT, PEM_LIMIT, check_file, read_file
    from nodehost.pki.kubeconfig import load_document, referenced_files

    document = load_document(read_file(path, KUBECONFIG_LIMIT))
    if not isinstance(document, dict):
        raise ValueError("not a kubeconfig (not a YAML mapping)")
    for name in referenced_files(path):
        check_file(name, PEM_LIMIT)
    return document
