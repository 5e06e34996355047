"""Certificate rotation while the node runs (the ``bootstrap`` component's task).

The client certificate (``kubelet-client-current.pem``, named by
``node.kubeconfig``) and the serving certificate (``kubelet-server-current.pem``)
are renewed through new CSRs -- a new key each time, made on the node -- at a
random point between 70 % and 90 % of their lifetime (drawn once per
certificate, as the kubelet does), and swapped atomically
(:func:`nodehost.plugins.bootstrap.certstore.store_pair`).  A serving certificate that
was never issued (no approver) is asked for again until one is.  After each
swap the task tells the host (``context.files_changed``), which restarts or
signals the components that read the file (their ``reload_files``).

Every check publishes each certificate's expiry (``/status`` details and
``nodehost_certificate_*`` metrics) and, as problems that make the component
(and so ``/readyz``) not ready: an expired or missing client certificate, or
one with less than 10 % of its lifetime left.  A failed renewal is logged and
retried with backoff; it never stops the node.
"""

from __future__ import annotations

import asyncio
import datetime
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodehost.backoff import Backoff
from nodehost.frozen import frozen
from nodehost.plugins.bootstrap.certstore import (
    CLIENT_PREFIX,
    SERVING_PREFIX,
    StoredPair,
    certificate_status,
    current_path,
    read_pair,
)

RENEW_WINDOW = (0.7, 0.9)
SOON_FRACTION = 0.1
CHECK_INTERVAL = 10.0
ATTEMPT_TIMEOUT = 120.0
#: After a failed renewal: 2s, 4s, ... at most 256s, each +-50% (at the cap 128-256s):
#: renewals that failed together (the API server was down) must not retry together.
RENEWAL_BACKOFF = Backoff(initial=2.0, maximum=256.0, jitter=0.5)


@frozen
class RotationSettings:
    """What rotation needs: where the files are and what to ask for."""

    node_kubeconfig: Path
    cert_dir: Path
    node_name: str
    hostnames: tuple[str, ...]
    bootstrap_kubeconfig: Path | None = None
    check_interval: float = CHECK_INTERVAL
    attempt_timeout: float = ATTEMPT_TIMEOUT

    def kubeconfig_for(self, tracked: Tracked, pair: StoredPair | None) -> Path:
        """The node's kubeconfig; the bootstrap one for a client certificate that is no
        longer valid (as the kubelet falls back when its certificate expired) or that the
        API server refused."""
        from nodehost.plugins.bootstrap.certstore import valid_pair

        if (
            tracked.name == "client"
            and self.bootstrap_kubeconfig is not None
            and (pair is None or valid_pair(pair.path) is None or tracked.refused)
        ):
            return self.bootstrap_kubeconfig
        return self.node_kubeconfig


@dataclass
class Tracked:
    """One certificate under rotation: its files, its renewal point, its retry state."""

    name: str
    prefix: str
    required: bool
    fraction: float = field(default_factory=lambda: random.uniform(*RENEW_WINDOW))
    fraction_for: datetime.datetime | None = None
    retry_at: float = 0.0
    failures: int = 0
    last_error: str = ""
    #: Why the API server no longer accepts the node's identity ("" while it does).
    refused: str = ""

    def renew_at(self, pair: StoredPair | None) -> datetime.datetime | None:
        """When to renew ``pair`` (None: now, there is no pair)."""
        if pair is None:
            return None
        if self.fraction_for != pair.not_after:
            self.fraction = random.uniform(*RENEW_WINDOW)
            self.fraction_for = pair.not_after
        return pair.not_before + datetime.timedelta(seconds=pair.lifetime_seconds() * self.fraction)


class CertificateRotation:
    """Keeps the node's certificates fresh; ``run(context)`` is a TaskSpec coroutine."""

    def __init__(self, settings: RotationSettings) -> None:
        self.settings = settings
        self.tracked = [
            Tracked("client", CLIENT_PREFIX, required=True),
            Tracked("serving", SERVING_PREFIX, required=False),
        ]
        self.rotations = 0

    async def run(self, context: Any) -> None:
        """Report, then keep each certificate fresh in its own task, reporting every interval."""
        self.report(context)
        context.ready()
        workers = {asyncio.create_task(self._keep(t, context)) for t in self.tracked}
        try:
            while True:
                done, _ = await asyncio.wait(
                    workers, timeout=self.settings.check_interval, return_when="FIRST_COMPLETED"
                )
                for worker in done:
                    worker.result()  # a worker only ends by raising: let the host see it
                self.report(context)
        finally:
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    async def _keep(self, tracked: Tracked, context: Any) -> None:
        while True:
            if self._due(tracked):
                await self._renew(tracked, context)
                self.report(context)
            await asyncio.sleep(self._sleep_seconds(tracked))

    def pair(self, tracked: Tracked) -> StoredPair | None:
        return read_pair(current_path(self.settings.cert_dir, tracked.prefix))

    def _due(self, tracked: Tracked) -> bool:
        if time.monotonic() < tracked.retry_at:
            return False
        if tracked.refused:
            return True
        renew_at = tracked.renew_at(self.pair(tracked))
        return renew_at is None or renew_at <= datetime.datetime.now(datetime.UTC)

    def _sleep_seconds(self, tracked: Tracked) -> float:
        """Until the renewal point or the retry time, at most one check interval."""
        waits = [self.settings.check_interval, tracked.retry_at - time.monotonic()]
        renew_at = tracked.renew_at(self.pair(tracked))
        if renew_at is not None:
            waits.append((renew_at - datetime.datetime.now(datetime.UTC)).total_seconds())
        positive = [w for w in waits if w > 0]
        return max(0.05, min(positive)) if positive else 0.05

    async def _renew(self, tracked: Tracked, context: Any) -> None:
        from nodehost.api.client import ClusterError

        context.log.info("renewing certificate", component=context.name, certificate=tracked.name)
        try:
            path = await asyncio.wait_for(self._request(tracked), self.settings.attempt_timeout)
        except (ClusterError, OSError, TimeoutError) as error:
            self._note_refusal(error, context)
            tracked.failures += 1
            delay = RENEWAL_BACKOFF.delay(tracked.failures)
            tracked.retry_at = time.monotonic() + delay
            tracked.last_error = str(error) or "no certificate issued in time"
            context.log.warning(
                "certificate renewal failed; retrying",
                component=context.name,
                certificate=tracked.name,
                error=tracked.last_error,
                retry_in=delay,
            )
            return
        tracked.failures, tracked.retry_at, tracked.last_error = 0, 0.0, ""
        if tracked.refused:
            await self._rejoined(tracked.refused, context)
            tracked.refused = ""
        self.rotations += 1
        context.log.info(
            "certificate rotated", component=context.name, certificate=tracked.name, file=str(path)
        )
        context.files_changed([str(path)])

    def _note_refusal(self, error: BaseException, context: Any) -> None:
        """A 401, or a server certificate the node's CA does not verify, for a request made as
        the node: its identity is lost; the client certificate is renewed with the bootstrap
        credentials next (where there are some), at once."""
        from nodehost.api.client import ClusterRefused, ClusterTLSError

        client = self.tracked[0]
        refused = isinstance(error, ClusterRefused) and error.code == 401
        if client.refused or not (refused or isinstance(error, ClusterTLSError)):
            return
        if self.settings.kubeconfig_for(client, self.pair(client)) != self.settings.node_kubeconfig:
            return  # already asking with the bootstrap credentials
        if self.settings.bootstrap_kubeconfig is None:
            return
        client.refused = (
            "the API server refused its client certificate: 401" if refused else str(error)
        )
        client.retry_at = 0.0
        context.log.warning(
            f"node {self.settings.node_name} lost its identity ({client.refused}); joining again "
            "through a new certificate request with the bootstrap credentials in "
            f"{self.settings.bootstrap_kubeconfig}",
            component=context.name,
        )

    async def _rejoined(self, lost: str, context: Any) -> None:
        """After a rejoin: ``node.kubeconfig`` trusts the bootstrap kubeconfig's CA (it may be
        the rotated one), and the ``NodeRejoined`` Warning event is posted (best effort)."""
        from nodehost.api.events import post_node_event
        from nodehost.plugins.bootstrap.events import rejoined_event
        from nodehost.plugins.bootstrap.join import bootstrap_cluster, write_node_kubeconfig

        settings = self.settings
        assert settings.bootstrap_kubeconfig is not None
        current = current_path(settings.cert_dir, CLIENT_PREFIX)
        cluster = bootstrap_cluster(settings.bootstrap_kubeconfig)
        write_node_kubeconfig(settings.node_kubeconfig, cluster, current)
        context.files_changed([str(settings.node_kubeconfig)])
        event = rejoined_event(settings.node_name, lost)
        await post_node_event(str(settings.node_kubeconfig), event, context.log)

    async def _request(self, tracked: Tracked) -> Path:
        """One renewal: a new key, a CSR as the node, the pair stored; the ``-current`` path."""
        from nodehost.api.client import ClusterClient
        from nodehost.plugins.bootstrap.csr import (
            client_request,
            obtain_with_pending_key,
            serving_request,
        )

        settings = self.settings
        request = (
            client_request(settings.node_name)
            if tracked.name == "client"
            else serving_request(settings.node_name, settings.hostnames)
        )
        deadline = time.monotonic() + settings.attempt_timeout
        kubeconfig = settings.kubeconfig_for(tracked, self.pair(self.tracked[0]))
        async with ClusterClient(str(kubeconfig), deadline=deadline) as client:
            return await obtain_with_pending_key(
                client, settings.cert_dir, tracked.prefix, request, lambda _message: None
            )

    def report(self, context: Any) -> None:
        """Publish every certificate's status, and the problems that make the node unready."""
        statuses, problems = [], []
        for tracked in self.tracked:
            path = current_path(self.settings.cert_dir, tracked.prefix)
            pair = self.pair(tracked)
            status = certificate_status(tracked.name, pair, path)
            renew_at = tracked.renew_at(pair)
            if renew_at is not None:
                status["renew_at"] = renew_at.isoformat()
            if tracked.last_error:
                status["last_error"] = tracked.last_error
            retry_in = tracked.retry_at - time.monotonic()
            if retry_in > 0:
                retry = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=retry_in)
                status["retry_at"] = retry.isoformat()
            statuses.append(status)
            problem = _problem(tracked, pair)
            if problem:
                problems.append(problem)
        details = {"certificates": statuses, "rotations": self.rotations}
        report = getattr(context, "report", None)
        if report is not None:
            report(details, problems)


def _problem(tracked: Tracked, pair: StoredPair | None) -> str:
    """Why this certificate makes the node unready ("" if it does not)."""
    if pair is None:
        return f"{tracked.name} certificate missing" if tracked.required else ""
    remaining = pair.remaining_seconds()
    if remaining <= 0:
        return f"{tracked.name} certificate expired at {pair.not_after.isoformat()}"
    if remaining < SOON_FRACTION * pair.lifetime_seconds():
        return f"{tracked.name} certificate expires in {remaining:.0f}s (renewal has not succeeded)"
    return ""
