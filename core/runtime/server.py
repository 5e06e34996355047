"""A small HTTP/1.1 server on asyncio streams for the health, metrics and status endpoints.

Deliberately minimal and robust: GET (and HEAD) only, one request per
connection, the request head bounded to :data:`MAX_REQUEST_BYTES` and read
within :data:`REQUEST_TIMEOUT` seconds, every answer closes the connection.
Routes map a path to a function of the query string that returns a
:class:`Response` (or a coroutine of one); an exception in a route is a 500,
never a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

MAX_REQUEST_BYTES = 8192
REQUEST_TIMEOUT = 5.0

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


@dataclass(frozen=True)
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


class HttpServer:
    """Serves ``routes`` on ``host:port`` (port 0 picks a free one: see :attr:`address`)."""

    def __init__(self, routes: Mapping[str, Route], log: Any) -> None:
        self.routes = dict(routes)
        self.log = log
        self.server: asyncio.base_events.Server | None = None

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
        try:
            method, response = await self._answer(reader)
            self._write(writer, response, head_only=method == "HEAD")
            await asyncio.wait_for(writer.drain(), REQUEST_TIMEOUT)
        except (OSError, TimeoutError):
            pass
        finally:
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[str, Response]:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), REQUEST_TIMEOUT)
        except TimeoutError:
            return "GET", text(408, "request timeout\n")
        except asyncio.LimitOverrunError:
            return "GET", text(431, "request too large\n")
        except asyncio.IncompleteReadError:
            return "GET", text(400, "incomplete request\n")
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
