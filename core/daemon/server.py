"""A small HTTP/1.1 server on asyncio streams for the health, metrics and status endpoints.

Deliberately minimal and robust: GET (and HEAD) only, one request per
connection, the request head bounded to :data:`MAX_REQUEST_BYTES` and read
within :data:`REQUEST_TIMEOUT` seconds (a connection idle, or dripping its
request, longer is answered 408 and closed), every answer closes the
connection.  At most :data:`MAX_CONNECTIONS` connections are open at once:
a new one past that takes the place of the oldest still waiting for its
request (none being answered is cut), so idle or slow clients, however many,
neither lock a probe out nor exhaust the host's descriptors; the first time
the limit is reached it is logged, once.
Routes map a path to a function of the query string that returns a
:class:`Response` (or a coroutine of one); an exception in a route is a 500,
never a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nodehost.frozen import frozen

MAX_REQUEST_BYTES = 8192
REQUEST_TIMEOUT = 5.0
#: Connections open at once (see the module docstring).
MAX_CONNECTIONS = 128

REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


@frozen
class Response:
    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"


#: A route answers a parsed query string, directly or as a coroutine.
Route = Callable[[Mapping[str, str]], Response | Awaitable[Response]]


def text(status: int, body: str) -> Response:
    return Response(status, body.encode())


def parse_query(query: str) -> dict[str, str]:
    """``a=1&verbose`` -> ``{"a": "1", "verbose": ""}`` (percent-decoded); a repeated
    key's values are joined with commas (``exclude=a&exclude=b`` -> ``"a,b"``)."""
    from urllib.parse import unquote_plus

    parsed: dict[str, str] = {}
    for part in query.split("&"):
        if part:
            key, _, value = (unquote_plus(piece) for piece in part.partition("="))
            parsed[key] = f"{parsed[key]},{value}" if key in parsed else value
    return parsed


@dataclass(eq=False)
class _Connection:
    """One open connection: when it was accepted, whether its request is being answered."""

    writer: asyncio.StreamWriter
    opened: float = field(default_factory=time.monotonic)
    answering: bool = False
    evicted: bool = False


class HttpServer:
    """Serves ``routes`` on ``host:port`` (port 0 picks a free one: see :attr:`address`);
    at most ``max_connections`` connections at once (see the module docstring)."""

    def __init__(
        self, routes: Mapping[str, Route], log: Any, max_connections: int = MAX_CONNECTIONS
    ) -> None:
        self.routes = dict(routes)
        self.log = log
        self.max_connections = max_connections
        self.server: asyncio.base_events.Server | None = None
        self._connections: set[_Connection] = set()
        self._limit_logged = False

    async def start(self, host: str, port: int) -> tuple[str, int]:
        """Listen; raise OSError if the address cannot be bound.  Returns the bound address."""
        self.server = await asyncio.start_server(
            self._handle, host, port, limit=MAX_REQUEST_BYTES, reuse_address=True
        )
        return self.address

    @property
    def address(self) -> tuple[str, int]:
        assert self.server is not None
        sockname = self.server.sockets[0].getsockname()
        return sockname[0], sockname[1]

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 1.0)
            self.server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = _Connection(writer)
        if not self._make_room():
            writer.transport.abort()
            return
        self._connections.add(connection)
        try:
            method, response = await self._answer(reader, connection)
            if connection.evicted:
                return
            self._write(writer, response, head_only=method == "HEAD")
            await asyncio.wait_for(writer.drain(), REQUEST_TIMEOUT)
        except (OSError, TimeoutError):
            pass
        finally:
            self._connections.discard(connection)
            writer.close()

    def _make_room(self) -> bool:
        """True when a new connection may be served: below the limit, or after closing the
        oldest connection still waiting for its request; False when every one is being
        answered."""
        if len(self._connections) < self.max_connections:
            return True
        if not self._limit_logged:
            self._limit_logged = True
            self.log.warning(
                "health server: connection limit reached; the oldest idle connections are "
                "closed to make room (logged once)",
                limit=self.max_connections,
            )
        waiting = [connection for connection in self._connections if not connection.answering]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda connection: connection.opened)
        oldest.evicted = True
        self._connections.discard(oldest)
        oldest.writer.transport.abort()
        return True

    async def _answer(
        self, reader: asyncio.StreamReader, connection: _Connection
    ) -> tuple[str, Response]:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), REQUEST_TIMEOUT)
        except TimeoutError:
            return "GET", text(408, "request timeout\n")
        except asyncio.LimitOverrunError:
            return "GET", text(431, "request too large\n")
        except (asyncio.IncompleteReadError, OSError):
            return "GET", text(400, "incomplete request\n")
        connection.answering = True
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = request_line.split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            return "GET", text(400, "bad request\n")
        method, target, _ = parts
        if method not in ("GET", "HEAD"):
            return method, text(405, "only GET and HEAD\n")
        path, _, query = target.partition("?")
        route = self.routes.get(path)
        if route is None:
            return method, text(404, f"not found: {path}\n")
        try:
            answer = route(parse_query(query))
            if inspect.isawaitable(answer):
                answer = await answer
            return method, answer
        except Exception as error:
            self.log.error("health server route failed", path=path, error=repr(error))
            return method, text(500, "internal error\n")

    @staticmethod
    def _write(writer: asyncio.StreamWriter, response: Response, head_only: bool) -> None:
        reason = REASONS.get(response.status, "")
        headers = (
            f"HTTP/1.1 {response.status} {reason}\r\n"
            f"Content-Type: {response.content_type}\r\n"
            f"Content-Length: {len(response.body)}\r\n"
            "Cache-Control: no-store\r\n"
            "Connection: close\r\n\r\n"
        )
        writer.write(headers.encode("latin-1") + (b"" if head_only else response.body))
