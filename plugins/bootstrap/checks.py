"""The node identity's host checks (``nodehost_checks``), none of them in the preflight.

Every node has an identity -- its serving pair, its client certificate, the
API server its kubeconfig names -- whether it was bootstrapped or not, so
these run for every selection:

* ``bootstrap.certificates`` -- the serving pair (``servingInfo``) and the
  client certificate of ``masterKubeConfig``: their key matches, they are
  valid now, and how long they have left (under 10% of their lifetime, or
  expired, is an error unless certificate rotation runs: a warning);
* ``bootstrap.clock`` -- the kernel's clock is synchronised (``adjtimex``):
  certificates and CSR bootstrap depend on it;
* ``bootstrap.api-server`` -- the kubeconfig's API server answers
  ``/version`` over TLS with the configured trust, and its version against
  the kubelet's (a kubelet newer than its API server is refused by the
  version skew policy).
"""

from __future__ import annotations

import ctypes
import datetime
import os
from typing import Any

from nodehost.check import Check, CheckContext

NAME = "bootstrap"
#: ``adjtimex``'s answer and status bit for an unsynchronised clock.
TIME_ERROR = 5
STA_UNSYNC = 0x0040
API_TIMEOUT = 5.0


def bootstrap_checks(context: CheckContext) -> list[Check]:
    """The checks above, outside the preflight (the hook asks only then)."""
    config = context.config
    rotating = NAME in context.selected
    return [
        certificates_check(_pairs(config), rotating),
        clock_check(),
        api_server_check(config.master_kube_config, context.program("kubelet"), context),
    ]


def _pairs(config: Any) -> list[tuple[str, str, str]]:
    """``(what, certificate file, key file)`` of the serving pair and the client certificate."""
    from nodehost.pki.kubeconfig import kubeconfig_entries

    pairs = []
    serving = config.serving_info
    if serving.cert_file and serving.key_file:
        pairs.append(("serving", serving.cert_file, serving.key_file))
    if config.master_kube_config:
        _, user = kubeconfig_entries(config.master_kube_config)
        folder = os.path.dirname(config.master_kube_config)
        cert, key = user.get("client-certificate"), user.get("client-key")
        if isinstance(cert, str) and isinstance(key, str):
            pairs.append(("client", os.path.join(folder, cert), os.path.join(folder, key)))
    return pairs


def certificates_check(pairs: list[tuple[str, str, str]], rotating: bool) -> Check:
    name = f"{NAME}.certificates"
    if not pairs:
        return Check.skipped(name, "no certificate files in the config (inline credentials)")
    found, problems = [], []
    for what, cert_file, key_file in pairs:
        line, problem = _pair_state(what, cert_file, key_file)
        found.append(line)
        if problem:
            problems.append(problem)
    if not problems:
        return Check.ok(name, "; ".join(found))
    fix = "renew them (nodehost config create, or the bootstrap's CSR)"
    if rotating and all("expires" in problem for problem in problems):
        return Check.warning(name, "; ".join(found), "certificate rotation renews them")
    return Check.error(name, "; ".join(found), fix)


def _pair_state(what: str, cert_file: str, key_file: str) -> tuple[str, str | None]:
    """A line about one pair, and its problem (None: fine)."""
    from nodehost.errors import PKIError
    from nodehost.fileread import PEM_LIMIT, read_file
    from nodehost.pki.certs import decode_certificates
    from nodehost.pki.keys import decode_private_key, key_matches

    try:
        certificate = decode_certificates(read_file(cert_file, PEM_LIMIT), cert_file)[0]
        key = decode_private_key(read_file(key_file, PEM_LIMIT), key_file)
    except (OSError, PKIError) as error:
        return f"{what} {cert_file}: unreadable ({error})", "unreadable"
    if not key_matches(key, certificate.public_key()):
        return f"{what} {cert_file}: its key {key_file} does not match", "key mismatch"
    now = datetime.datetime.now(datetime.UTC)
    start, end = certificate.not_valid_before_utc, certificate.not_valid_after_utc
    left = end - now
    if now < start:
        return f"{what} {cert_file}: not valid before {start:%Y-%m-%d %H:%M} UTC", "not yet valid"
    if left.total_seconds() <= 0:
        return f"{what} {cert_file}: expired {end:%Y-%m-%d %H:%M} UTC", "expired"
    line = f"{what} {cert_file}: valid until {end:%Y-%m-%d} ({left.days} days)"
    if left < (end - start) * 0.1:
        return line, "expires soon"
    return line, None


class _Timex(ctypes.Structure):
    """The head of Linux's ``struct timex`` (``<sys/timex.h>``), padded to more than its size."""

    _fields_ = [
        ("modes", ctypes.c_uint),
        ("offset", ctypes.c_long),
        ("freq", ctypes.c_long),
        ("maxerror", ctypes.c_long),
        ("esterror", ctypes.c_long),
        ("status", ctypes.c_int),
        ("rest", ctypes.c_char * 256),
    ]


def clock_check() -> Check:
    """The kernel's own view (``adjtimex``): synchronised by NTP/PTP or not."""
    name = f"{NAME}.clock"
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        timex = _Timex()  # modes 0: only read
        state = libc.adjtimex(ctypes.byref(timex))
    except (OSError, AttributeError) as error:
        return Check.skipped(name, f"cannot ask the kernel (adjtimex): {error}")
    status = timex.status
    if state == -1:
        return Check.skipped(name, f"adjtimex failed: {os.strerror(ctypes.get_errno())}")
    if state == TIME_ERROR or status & STA_UNSYNC:
        return Check.warning(
            name,
            "the clock is not synchronised: certificates may look expired or not yet valid",
            "run a time service (systemd-timesyncd, chrony) and wait for it to synchronise",
        )
    return Check.ok(name, "the clock is synchronised")


def api_server_check(
    kubeconfig: str, kubelet: tuple[str, bool] | None, context: CheckContext | None = None
) -> Check:
    """``/version`` through the kubeconfig (TCP, TLS with its trust), against the kubelet's;
    skipped when the server is one of the node's own components (``--local-cluster``)."""
    import asyncio

    name = f"{NAME}.api-server"
    if not kubeconfig:
        return Check.skipped(name, "no masterKubeConfig")
    own = _own_server(kubeconfig, context)
    if own is not None:
        return Check.skipped(name, own)
    try:
        version = asyncio.run(_server_version(kubeconfig))
    except Exception as error:  # every way of not answering is the finding
        return Check.error(
            name,
            f"{kubeconfig}: {' '.join(str(error).split()) or type(error).__name__}",
            "check the server URL, the network and certificate-authority in the kubeconfig",
        )
    return _skew(name, str(version.get("gitVersion", "?")), kubelet)


def _own_server(kubeconfig: str, context: CheckContext | None) -> str | None:
    """Why the server is not asked: a component of this node serves it, started by ``start``."""
    from urllib.parse import urlsplit

    from nodehost.pki.kubeconfig import read_server

    try:
        where = urlsplit(read_server(kubeconfig))
        host, port = where.hostname or "", where.port or 443
    except (OSError, ValueError):
        return None
    component = context.component_serving(host, port) if context is not None else None
    if component is None:
        return None
    return f"the API server {host}:{port} is component {component}'s; start runs it first"


async def _server_version(kubeconfig: str) -> dict[str, Any]:
    import time

    from nodehost.api.client import ClusterClient

    client = ClusterClient(kubeconfig, timeout=API_TIMEOUT, deadline=time.monotonic())
    async with client:
        answer = await client.call("GET /version", lambda: client.request("GET", "/version"))
    return answer if isinstance(answer, dict) else {}


def _skew(name: str, server: str, kubelet: tuple[str, bool] | None) -> Check:
    from nodehost.check.programs import minor_version, program_version

    if kubelet is None:
        return Check.ok(name, f"API server {server}")
    try:
        kubelet_text = program_version(kubelet[0])
    except OSError as error:
        return Check.ok(name, f"API server {server}; kubelet version unknown: {error}")
    ours, theirs = minor_version(kubelet_text), minor_version(server)
    found = f"API server {server}, kubelet {kubelet_text}"
    if ours and theirs and ours > theirs:
        return Check.error(
            name,
            f"{found}: the kubelet must not be newer than its API server",
            "install a kubelet of the API server's minor version or older",
        )
    return Check.ok(name, found)
