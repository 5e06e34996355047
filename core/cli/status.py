"""``nodehost status``: ask a running nodehost for its state (``GET /status``).

Exit codes: 0 when the node is ready, 1 when it is not -- or when nothing
answers at the address, or no whole answer comes within ``--timeout`` (one
``error:`` line saying so).

The document may come from another nodehost version: a missing field is shown
as ``?`` (a missing ``ready`` is not ready), an unknown one is ignored, and
every text from it is shown with control characters escaped.
"""

from __future__ import annotations

import json
from typing import Any

import click

from nodehost.cli.options import parse_address_flag
from nodehost.daemon.settings import DEFAULT_HEALTH_ADDRESS
from nodehost.errors import RuntimeFailure
from nodehost.table import format_table

#: The largest /status document read (a node's is a few KiB).
STATUS_LIMIT = 4 * 1024 * 1024


def fetch_status(host: str, port: int, timeout: float) -> dict[str, Any]:
    """``GET /status`` within ``timeout`` seconds overall (connecting, headers and body:
    a server that drips bytes does not hold it longer); RuntimeFailure with one line if
    nothing, or no nodehost, answers in time."""
    import threading

    where = f"{host}:{port}"
    answer: list[Any] = []

    def fetch() -> None:
        try:
            answer.append(_get_status(host, port, timeout))
        except BaseException as error:  # handed to the caller's thread
            answer.append(error)

    worker = threading.Thread(target=fetch, name="nodehost-status", daemon=True)
    worker.start()
    worker.join(timeout)
    if not answer:
        raise RuntimeFailure(f"no whole answer from {where} within {timeout:g}s (see --timeout)")
    if isinstance(answer[0], BaseException):
        raise answer[0]
    return answer[0]


def _get_status(host: str, port: int, timeout: float) -> dict[str, Any]:
    """``GET /status`` (``timeout`` per socket operation): the document, or RuntimeFailure."""
    import http.client

    where = f"{host}:{port}"
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request("GET", "/status")
        response = connection.getresponse()
        body = response.read(STATUS_LIMIT + 1)
    except OSError as error:
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        raise RuntimeFailure(
            f"no nodehost answers at {where} ({reason}); is it running? (see --address)"
        ) from None
    except http.client.HTTPException as error:
        raise RuntimeFailure(f"{where} does not speak HTTP: {error!r}") from None
    finally:
        connection.close()
    from nodehost.config.jsonsafe import parse_json

    try:
        document = parse_json(body, STATUS_LIMIT)
    except ValueError:
        document = None
    if not isinstance(document, dict) or not isinstance(document.get("components"), list):
        raise RuntimeFailure(
            f"{where} answered /status with HTTP {response.status}, not nodehost's status"
        )
    return document


def shown(value: object, missing: str = "?") -> str:
    """``value`` as one line of text: ``missing`` for None, control characters escaped."""
    if value is None:
        return missing
    text = str(value)
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else ascii(char)[1:-1] for char in text)


def _number(value: object, suffix: str = "") -> str:
    """A number from the document, rounded (``?`` if it is not one)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:.0f}{suffix}"
    return "?"


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _items(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _last_exit(component: dict[str, Any]) -> str:
    last = _mapping(component.get("last_exit"))
    if not last:
        return "-"
    return f"{shown(last.get('description'))} ({_number(last.get('seconds_ago'), 's')} ago)"


def is_ready(document: dict[str, Any]) -> bool:
    """Whether the document says the node is ready (a missing or odd ``ready``: not)."""
    return document.get("ready") is True


def render_table(document: dict[str, Any]) -> str:
    """The human view of a status document (any version's: see the module docstring)."""
    verdict = "ready" if is_ready(document) else f"not ready ({shown(document.get('state'))})"
    uptime = _number(document.get("uptime_seconds"), "s")
    lines = [f"node: {verdict}; nodehost pid {shown(document.get('pid'))}, up {uptime}"]
    header = ("COMPONENT", "STATE", "READY", "PID", "RESTARTS", "LAST EXIT", "DETAIL")
    components = [_mapping(component) for component in document["components"]]
    rows = [header]
    for component in components:
        looping = " (crash loop)" if component.get("crash_looping") is True else ""
        rows.append(
            (
                shown(component.get("name")),
                shown(component.get("state")) + looping,
                "yes" if component.get("ready") is True else "no",
                shown(component.get("pid") or None, "-"),
                shown(component.get("restarts")),
                _last_exit(component),
                shown(component.get("reason"), ""),
            )
        )
    details = _detail_lines(components)
    failures = [
        f"plugin failure: {shown(failure.get('line'))}"
        for failure in map(_mapping, _items(document.get("plugin_failures")))
    ]
    return "\n".join(
        [
            *lines,
            *_node_ip_lines(document),
            format_table(rows),
            *details,
            *_config_lines(document),
            *failures,
        ]
    )


def _node_ip_lines(document: dict[str, Any]) -> list[str]:
    """``node IP: A (how chosen)`` and the problem, if any; nothing from an older host."""
    node_ip = _mapping(document.get("node_ip"))
    if not node_ip:
        return []
    addresses = ",".join(shown(address) for address in _items(node_ip.get("addresses")))
    line = f"node IP: {addresses or '?'} ({shown(node_ip.get('chosen_by'))})"
    problem = node_ip.get("problem")
    return [line + (f"; UNAVAILABLE: {shown(problem)}" if problem else "")]


def _detail_lines(components: list[dict[str, Any]]) -> list[str]:
    """One line per certificate a component reports (``details.certificates``), then the
    lines it reports for people (``details.lines``, each after the component's name)."""
    lines = []
    for component in components:
        owner = shown(component.get("name"))
        for line in _items(_mapping(component.get("details")).get("lines")):
            lines.append(f"{owner}: {shown(line)}")
        certificates = _items(_mapping(component.get("details")).get("certificates"))
        for certificate in map(_mapping, certificates):
            name, owner = shown(certificate.get("name")), shown(component.get("name"))
            where = f"certificate {name} ({owner})"
            if not certificate.get("present"):
                lines.append(f"{where}: missing ({shown(certificate.get('file'))})")
                continue
            remaining = certificate.get("remaining_seconds")
            if not isinstance(remaining, (int, float)):
                left = "?"
            else:
                left = "EXPIRED" if remaining <= 0 else f"in {_duration_text(remaining)}"
            lines.append(f"{where}: expires {shown(certificate.get('not_after'))} ({left})")
    return lines


def _config_lines(document: dict[str, Any]) -> list[str]:
    """The configuration's file and generation, then the last apply and its problems.

    Tolerant as the rest of the view: a missing field is ``?``, text is escaped.
    """
    configuration = _mapping(document.get("configuration"))
    if not configuration.get("reload"):
        return []  # a host that cannot take a new configuration has none to show
    file, generation = shown(configuration.get("file")), shown(configuration.get("generation"))
    lines = [f"config: {file} (generation {generation})"]
    last = _mapping(configuration.get("last_apply"))
    if last:
        seconds = last.get("seconds_ago")
        ago = _duration_text(seconds) if isinstance(seconds, (int, float)) else "?"
        restarted = ", ".join(shown(name) for name in _items(last.get("restarted")))
        lines.append(
            f"config {shown(last.get('result'))} {ago} ago (generation "
            f"{shown(last.get('generation'))}, from {shown(last.get('origin'))})"
            + (f"; restarted {restarted}" if restarted else "")
        )
        lines.extend(f"  {shown(problem)}" for problem in _items(last.get("problems")))
    return lines


def _duration_text(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.0f}s"


@click.command()
@click.option(
    "--address",
    default=DEFAULT_HEALTH_ADDRESS,
    show_default=True,
    envvar="NODEHOST_HEALTH_ADDRESS",
    metavar="HOST:PORT",
    help="Where the running nodehost serves /status (env NODEHOST_HEALTH_ADDRESS).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the status document as JSON.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True, max=3600),
    default=5.0,
    show_default=True,
    help="Seconds to wait for an answer.",
)
def status(address: str, as_json: bool, timeout: float) -> None:
    """Show the state of a running nodehost; exit 0 if the node is ready, 1 if not."""
    host, port = parse_address_flag(address, "--address")
    document = fetch_status(host, port, timeout)
    try:
        text = json.dumps(document, indent=2) if as_json else render_table(document)
    except RecursionError:  # a document that parsed but nests too deeply to print
        raise RuntimeFailure(
            f"{host}:{port} answered /status with a document nested too deeply, "
            "not nodehost's status"
        ) from None
    click.echo(text)
    raise click.exceptions.Exit(0 if is_ready(document) else 1)


if __name__ == "__main__":
    from nodehost.cli import main

    main(["status", *__import__("sys").argv[1:]])
