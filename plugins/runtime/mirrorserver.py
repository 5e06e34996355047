"""The loopback pull-through proxy of the ``mirror-rewrite`` component (:mod:`.mirrorproxy`).

For each ``GET``/``HEAD`` of ``/HOST/v2/NAME/manifests/REF`` or
``/HOST/v2/NAME/blobs/DIGEST`` it tries the mirror endpoints of ``HOST`` in
order with ``NAME`` rewritten; an endpoint that cannot be reached, or answers
404 or 5xx, passes the request on to the next; the first other answer is
relayed (status, content type, length, digest), its body streamed through in
chunks, never held whole.  Each endpoint is asked as containerd would ask it:
its host's ``tls`` settings (verified unless ``insecure_skip_verify``; client
certificate), its host's ``auth`` sent as ``Basic``, and a ``Bearer``
challenge answered by the token flow (the realm asked for a token for the
challenge's scope -- the rewritten name -- with the same credentials).
Redirects (blob storage) are followed, up to :data:`MAX_REDIRECTS`, without
the credentials when they lead to another host.  ``/HOST/v2/`` answers 200.
One request per connection.  Each manifest request is one log line
(``mirror rewrite``: registry, names, the endpoint that answered and how);
credentials are never logged.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit

import h11

from nodehost.frozen import frozen
from nodehost.plugins.runtime.mirrorproxy import through_url
from nodehost.plugins.runtime.registries import (
    Registries,
    basic_credentials,
    endpoint_host,
    hosts_toml,
    hosts_toml_path,
    ssl_context,
)
from nodehost.plugins.runtime.rewrite import rewrite_repository

MAX_REDIRECTS = 5
#: Seconds to connect and get an answer's head; then for each chunk of a body.
TIMEOUT = 30.0
CHUNK = 64 * 1024
_ROUTE = re.compile(
    r"^/(?P<host>[^/]+)/v2/(?:(?P<name>.+)/(?P<kind>manifests|blobs)/(?P<ref>[^/]+))?$"
)
_RELAYED = (
    "content-type",
    "content-length",
    "docker-content-digest",
    "etag",
    "docker-distribution-api-version",
)
_CHALLENGE = re.compile(r'(\w+)="([^"]*)"')


@frozen
class MirrorProxy:
    """The proxy for the rewritten registries of ``registries``; ``runtime_dir`` holds
    containerd's registry hosts folder."""

    registries: Registries
    runtime_dir: str

    async def run(self, context: Any) -> None:
        """Listen, write the rewritten registries' ``hosts.toml``, report ready, serve."""
        from pathlib import Path

        from nodehost.pki.atomic import write_atomic

        server = await asyncio.start_server(lambda r, w: self.serve(context, r, w), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        for host, _ in self.registries.rewrites:
            path = hosts_toml_path(self.registries, self.runtime_dir, host)
            content = hosts_toml(self.registries, host, through_url(port, host))
            await asyncio.to_thread(os.makedirs, os.path.dirname(path), 0o755, True)
            await asyncio.to_thread(write_atomic, Path(path), content, 0o644)
        hosts = [host for host, _ in self.registries.rewrites]
        context.report({"listen": f"http://127.0.0.1:{port}", "registries": hosts}, [])
        context.status(f"rewriting mirror pulls of {', '.join(hosts)} on 127.0.0.1:{port}")
        context.ready()
        async with server:
            await server.serve_forever()

    async def serve(
        self, context: Any, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Answer one request (module docstring); the connection is closed after it."""
        client = h11.Connection(h11.SERVER)
        try:
            request = await _next(client, reader)
            if isinstance(request, h11.Request):
                await self.answer(context, client, request, writer)
        except (OSError, TimeoutError, h11.ProtocolError) as error:
            context.log.debug(
                "mirror rewrite request ended", error=str(error) or type(error).__name__
            )
        finally:
            writer.close()

    async def answer(
        self, context: Any, client: h11.Connection, request: h11.Request, writer: Any
    ) -> None:
        method = request.method.decode()
        target = request.target.decode().split("?", 1)[0]
        route = _ROUTE.match(target)
        rules = dict(self.registries.rewrites).get(route.group("host")) if route else None
        if route is None or rules is None or method not in ("GET", "HEAD"):
            await _reply(client, writer, 404 if route is None or rules is None else 405)
            return
        if route.group("name") is None:
            await _reply(client, writer, 200, b"{}")
            return
        host, name = route.group("host"), route.group("name")
        rewritten = rewrite_repository(rules, name)
        path = f"/v2/{rewritten}/{route.group('kind')}/{route.group('ref')}"
        accept = b", ".join(value for key, value in request.headers if key == b"accept")
        tried = []
        for endpoint in dict(self.registries.mirrors).get(host, ()):
            answer = await self.fetch(method, endpoint + path, accept, endpoint_host(endpoint))
            if isinstance(answer, str) or _passes_on(answer.status):
                tried.append(f"{endpoint}: {answer if isinstance(answer, str) else answer.status}")
                if not isinstance(answer, str):
                    answer.close()
                continue
            if route.group("kind") == "manifests":
                context.log.info(
                    "mirror rewrite",
                    registry=host,
                    name=name,
                    rewritten=rewritten,
                    endpoint=endpoint,
                    status=answer.status,
                )
            await answer.relay(client, writer)
            return
        context.log.info(
            "mirror rewrite found nothing",
            registry=host,
            name=name,
            rewritten=rewritten,
            tried=tried,
        )
        await _reply(client, writer, 404 if any(t.endswith("404") for t in tried) else 502)

    async def fetch(
        self, method: str, url: str, accept: bytes, credentials_host: str
    ) -> Upstream | str:
        """``method`` of ``url`` with the endpoint's TLS and credentials, redirects followed,
        a Bearer challenge answered; the answer (head read, body not yet) or why none came."""
        auth = dict(self.registries.auth).get(credentials_host)
        basic = basic_credentials(auth)
        authorization = f"Basic {basic}" if basic else None
        for _ in range(MAX_REDIRECTS + 1):
            host = endpoint_host(url)
            try:
                answer = await self.request(method, url, accept, authorization)
                if answer.status == 401 and (token := await self.token(answer, basic)):
                    answer.close()
                    authorization = f"Bearer {token}"
                    answer = await self.request(method, url, accept, authorization)
            except (OSError, TimeoutError, h11.ProtocolError, ValueError) as error:
                return f"{type(error).__name__}: {error}"
            location = answer.header(b"location")
            if answer.status not in (301, 302, 303, 307, 308) or not location:
                return answer
            answer.close()
            url = urljoin(url, location)
            if endpoint_host(url) != host:
                authorization = None
        return f"more than {MAX_REDIRECTS} redirects"

    async def request(
        self, method: str, url: str, accept: bytes, authorization: str | None
    ) -> Upstream:
        parts = urlsplit(url)
        secure = parts.scheme == "https"
        tls = ssl_context(dict(self.registries.tls).get(parts.netloc)) if secure else None
        port = parts.port or (443 if secure else 80)
        async with asyncio.timeout(TIMEOUT):
            reader, writer = await asyncio.open_connection(
                parts.hostname, port, ssl=tls, server_hostname=parts.hostname if tls else None
            )
        headers = [("Host", parts.netloc), ("User-Agent", "nodehost-mirror-rewrite")]
        if accept:
            headers.append(("Accept", accept.decode()))
        if authorization:
            headers.append(("Authorization", authorization))
        upstream = Upstream(h11.Connection(h11.CLIENT), reader, writer, method == "HEAD")
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        await upstream.send(h11.Request(method=method, target=target, headers=headers))
        return upstream

    async def token(self, answer: Upstream, basic: str | None) -> str | None:
        """A token for a ``Bearer`` challenge of ``answer`` (realm, service, scope), asked
        with the Basic credentials when there are some; None when there is no such
        challenge or no token came."""
        challenge = answer.header(b"www-authenticate") or ""
        if not challenge.lower().startswith("bearer "):
            return None
        fields = dict(_CHALLENGE.findall(challenge))
        if "realm" not in fields:
            return None
        query = urlencode({k: v for k, v in fields.items() if k in ("service", "scope")})
        url = fields["realm"] + ("&" if "?" in fields["realm"] else "?") + query
        reply = await self.request("GET", url, b"", f"Basic {basic}" if basic else None)
        body = await reply.read_all(64 * 1024)
        if reply.status != 200:
            return None
        data = json.loads(body or b"{}")
        return data.get("token") or data.get("access_token")


def _passes_on(status: int) -> bool:
    """Whether an endpoint's answer sends the request on to the next endpoint."""
    return status == 404 or status >= 500


class Upstream:
    """One request to an endpoint: its connection, and the answer's head once read."""

    def __init__(
        self, connection: h11.Connection, reader: Any, writer: Any, head_only: bool
    ) -> None:
        self.connection, self.reader, self.writer = connection, reader, writer
        self.head_only = head_only
        self.response: h11.Response | None = None

    @property
    def status(self) -> int:
        return self.response.status_code if self.response else 0

    def header(self, name: bytes) -> str | None:
        assert self.response is not None
        found = [value for key, value in self.response.headers if key == name]
        return found[-1].decode(errors="replace") if found else None

    async def send(self, request: h11.Request) -> None:
        data = self.connection.send(request) or b""
        data += self.connection.send(h11.EndOfMessage()) or b""
        self.writer.write(data)
        async with asyncio.timeout(TIMEOUT):
            await self.writer.drain()
            event = await _next(self.connection, self.reader)
        if not isinstance(event, h11.Response):
            raise h11.RemoteProtocolError("the endpoint sent no answer")
        self.response = event

    async def chunks(self) -> Any:
        """The body, chunk by chunk (each read bounded by :data:`TIMEOUT`)."""
        while True:
            async with asyncio.timeout(TIMEOUT):
                event = await _next(self.connection, self.reader)
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            else:
                return

    async def read_all(self, limit: int) -> bytes:
        body = b""
        async for chunk in self.chunks():
            body += chunk
            if len(body) > limit:
                raise ValueError(f"answer larger than {limit} bytes")
        self.close()
        return body

    async def relay(self, client: h11.Connection, writer: Any) -> None:
        """Send this answer to the client: its status and relayed headers, then its body
        as it comes (no whole body in memory)."""
        assert self.response is not None
        headers = [(k, v) for k, v in self.response.headers if k.decode() in _RELAYED]
        headers.append((b"connection", b"close"))
        writer.write(client.send(h11.Response(status_code=self.status, headers=headers)) or b"")
        try:
            if not self.head_only:
                async for chunk in self.chunks():
                    writer.write(client.send(h11.Data(data=chunk)) or b"")
                    await writer.drain()
            writer.write(client.send(h11.EndOfMessage()) or b"")
            await writer.drain()
        finally:
            self.close()

    def close(self) -> None:
        self.writer.close()


async def _next(connection: h11.Connection, reader: asyncio.StreamReader) -> Any:
    """The next h11 event of ``connection``, reading from ``reader`` as needed."""
    while True:
        event = connection.next_event()
        if event is not h11.NEED_DATA:
            return event
        data = await reader.read(CHUNK)
        connection.receive_data(data)


async def _reply(client: h11.Connection, writer: Any, status: int, body: bytes = b"") -> None:
    headers = [
        ("content-type", "application/json"),
        ("content-length", str(len(body))),
        ("docker-distribution-api-version", "registry/2.0"),
        ("connection", "close"),
    ]
    data = client.send(h11.Response(status_code=status, headers=headers)) or b""
    if body:
        data += client.send(h11.Data(data=body)) or b""
    writer.write(data + (client.send(h11.EndOfMessage()) or b""))
    await writer.drain()
