"""``nodehost status``: ask a running nodehost for its state (``GET /status``).

Exit codes: 0 when the node is ready, 1 when it is not -- or when nothing
answers at the address (one ``error:`` line saying so).
"""

from __future__ import annotations

import json
from typing import Any

import click

from nodehost.cli.options import parse_address_flag
from nodehost.errors import RuntimeFailure
from nodehost.runtime.settings import DEFAULT_HEALTH_ADDRESS
from nodehost.table import format_table

#: The largest /status document read (a node's is a few KiB).
STATUS_LIMIT = 4 * 1024 * 1024


def fetch_status(host: str, port: int, timeout: float) -> dict[str, Any]:
    """``GET /status``; RuntimeFailure with one line if nothing (or no nodehost) answers."""
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
    try:
        document = json.loads(body) if len(body) <= STATUS_LIMIT else None
    except ValueError:
        document = None
    if not isinstance(document, dict) or not isinstance(document.get("components"), list):
        raise RuntimeFailure(
            f"{where} answered /status with HTTP {response.status}, not nodehost's status"
        )
    return document


def _last_exit(component: dict[str, Any]) -> str:
    last = component.get("last_exit")
    if not last:
        return "-"
    return f"{last['description']} ({last['seconds_ago']:.0f}s ago)"


def render_table(document: dict[str, Any]) -> str:
    """The human view of a status document."""
    verdict = "ready" if document["ready"] else f"not ready ({document['state']})"
    lines = [
        f"node: {verdict}; nodehost pid {document['pid']}, up {document['uptime_seconds']:.0f}s"
    ]
    header = ("COMPONENT", "STATE", "READY", "PID", "RESTARTS", "LAST EXIT", "DETAIL")
    rows = [header]
    for component in document["components"]:
        rows.append(
            (
                component["name"],
                component["state"] + (" (crash loop)" if component["crash_looping"] else ""),
                "yes" if component["ready"] else "no",
                str(component["pid"] or "-"),
                str(component["restarts"]),
                _last_exit(component),
                component["reason"] or "",
            )
        )
    details = _detail_lines(document["components"])
    return "\n".join([*lines, format_table(rows), *details, *_config_lines(document)])


def _detail_lines(components: list[dict[str, Any]]) -> list[str]:
    """One line per certificate a component reports (``details.certificates``)."""
    lines = []
    for component in components:
        for certificate in (component.get("details") or {}).get("certificates") or []:
            where = f"certificate {certificate['name']} ({component['name']})"
            if not certificate.get("present"):
                lines.append(f"{where}: missing ({certificate.get('file', '?')})")
                continue
            remaining = certificate["remaining_seconds"]
            left = "EXPIRED" if remaining <= 0 else f"in {_duration_text(remaining)}"
            lines.append(f"{where}: expires {certificate['not_after']} ({left})")
    return lines


def _config_lines(document: dict[str, Any]) -> list[str]:
    """The configuration's file and generation, then the last apply and its problems."""
    configuration = document.get("configuration")
    if not isinstance(configuration, dict) or not configuration.get("reload"):
        return []  # a host that cannot take a new configuration has none to show
    lines = [f"config: {configuration['file']} (generation {configuration['generation']})"]
    last = configuration.get("last_apply")
    if last:
        ago = _duration_text(last["seconds_ago"])
        restarted = ", ".join(last["restarted"])
        lines.append(
            f"config {last['result']} {ago} ago (generation {last['generation']}, "
            f"from {last['origin']})" + (f"; restarted {restarted}" if restarted else "")
        )
        lines.extend(f"  {problem}" for problem in last["problems"])
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
    click.echo(json.dumps(document, indent=2) if as_json else render_table(document))
    raise click.exceptions.Exit(0 if document["ready"] else 1)


if __name__ == "__main__":
    from nodehost.cli import main

    main(["status", *__import__("sys").argv[1:]])
