"""When rotation renews a certificate: at a point drawn once between 70 % and 90 % of its life."""

from __future__ import annotations

import asyncio
import datetime
from dataclasses import dataclass

import pytest

from nodehost.plugins.bootstrap import rotation

START = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC)


@dataclass
class Pair:
    not_before: datetime.datetime
    not_after: datetime.datetime

    def lifetime_seconds(self) -> float:
        return (self.not_after - self.not_before).total_seconds()


def pair(days: int = 100) -> Pair:
    return Pair(START, START + datetime.timedelta(days=days))


def tracked() -> rotation.Tracked:
    return rotation.Tracked("client", "kubelet-client", required=True)


@pytest.mark.parametrize(("end", "days"), [(0, 70), (1, 90)])
def test_the_window_runs_from_70_to_90_percent_of_the_lifetime(monkeypatch, end, days) -> None:
    """The draw's lowest and highest values land on the window's edges."""
    monkeypatch.setattr(rotation.random, "uniform", lambda low, high: (low, high)[end])
    assert tracked().renew_at(pair(100)) == START + datetime.timedelta(days=days)


def test_every_draw_falls_inside_the_window() -> None:
    for _ in range(200):
        at = tracked().renew_at(pair(100))
        assert START + datetime.timedelta(days=70) <= at <= START + datetime.timedelta(days=90)


def test_the_point_is_drawn_once_per_certificate(monkeypatch) -> None:
    draws = iter([0.75, 0.85, 0.8])
    monkeypatch.setattr(rotation.random, "uniform", lambda low, high: next(draws))
    one = tracked()
    first = one.renew_at(pair(100))
    assert one.renew_at(pair(100)) == first  # the same certificate: the same point
    renewed = Pair(START, START + datetime.timedelta(days=200))
    assert one.renew_at(renewed) == START + datetime.timedelta(days=200 * 0.8)


def test_no_certificate_means_renew_now() -> None:
    assert tracked().renew_at(None) is None


# --- the loop's decisions, with stand-in certificates and context ------------------------------


@dataclass
class AgedPair(Pair):
    """A pair whose remaining life is given (``remaining_seconds`` ignores the clock)."""

    remaining: float = 0.0

    def remaining_seconds(self) -> float:
        return self.remaining


def settings(tmp_path) -> rotation.RotationSettings:
    return rotation.RotationSettings(
        tmp_path / "node.kubeconfig", tmp_path / "certificates", "node1", ("node1",),
        check_interval=10.0, attempt_timeout=5.0,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("required", "remaining", "problem"),
    [
        (True, None, "client certificate missing"),
        (False, None, ""),
        (True, 0.0, "client certificate expired at 2030-04-11T00:00:00+00:00"),
        (True, 863999.0, "client certificate expires in 863999s (renewal has not succeeded)"),
        (True, 864000.0, ""),
    ],
)
def test_what_makes_the_node_unready(required, remaining, problem) -> None:
    """Missing (if required), expired, or under 10 % of its 100 days left."""
    tracked = rotation.Tracked("client", "p", required=required)
    pair = (
        None
        if remaining is None
        else AgedPair(START, START + datetime.timedelta(days=100), remaining)
    )
    assert rotation._problem(tracked, pair) == problem


class Context:
    def __init__(self) -> None:
        self.logged: list[tuple[str, str, dict]] = []
        self.changed: list[list[str]] = []
        self.reports: list[tuple[dict, list[str]]] = []
        self.name = "bootstrap"
        self.log = self

    def info(self, event: str, **fields) -> None:
        self.logged.append(("info", event, fields))

    def warning(self, event: str, **fields) -> None:
        self.logged.append(("warning", event, fields))

    def files_changed(self, paths: list[str]) -> None:
        self.changed.append(paths)

    def report(self, details: dict, problems: list[str]) -> None:
        self.reports.append((details, problems))


def test_a_failed_renewal_backs_off_doubling_up_to_five_minutes(tmp_path, monkeypatch) -> None:
    from nodehost.api.client import ClusterError

    rotator = rotation.CertificateRotation(settings(tmp_path))
    client = rotator.tracked[0]

    async def refuse(tracked):
        raise ClusterError("denied")

    monkeypatch.setattr(rotator, "_request", refuse)
    monkeypatch.setattr(rotation.time, "monotonic", lambda: 1000.0)
    context = Context()
    delays = []
    for _ in range(10):
        asyncio.run(rotator._renew(client, context))
        delays.append(client.retry_at - 1000.0)
    doubling = [2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 256.0, 256.0]
    assert all(
        d / 2 <= delay <= min(1.5 * d, 256.0) for d, delay in zip(doubling, delays, strict=True)
    )
    assert (client.failures, client.last_error, rotator.rotations) == (10, "denied", 0)
    assert context.logged[-1][:2] == ("warning", "certificate renewal failed; retrying")
    assert context.changed == []


def test_a_long_failure_streak_waits_at_most_five_minutes(tmp_path, monkeypatch) -> None:
    rotator = rotation.CertificateRotation(settings(tmp_path))
    client = rotator.tracked[0]
    client.failures = 20

    async def time_out(tracked):
        raise TimeoutError

    monkeypatch.setattr(rotator, "_request", time_out)
    monkeypatch.setattr(rotation.time, "monotonic", lambda: 0.0)
    asyncio.run(rotator._renew(client, Context()))
    assert 128.0 <= client.retry_at <= 256.0
    assert client.last_error == "no certificate issued in time"
    monkeypatch.setattr(rotation.random, "random", lambda: 0.5)  # no jitter: the cap itself
    asyncio.run(rotator._renew(client, Context()))
    assert client.retry_at == 256.0


def test_renewals_that_failed_together_retry_apart(tmp_path, monkeypatch) -> None:
    """A fleet whose renewals all failed at one instant (the server was down) must not come
    back in step: each failure streak's retries are spread around the doubling delay."""
    from nodehost.api.client import ClusterError

    async def unreachable(tracked):
        raise ClusterError("API server not answering")

    monkeypatch.setattr(rotation.time, "monotonic", lambda: 0.0)
    retry_at: dict[int, list[float]] = {1: [], 4: []}
    for _ in range(200):
        rotator = rotation.CertificateRotation(settings(tmp_path))
        monkeypatch.setattr(rotator, "_request", unreachable)
        client = rotator.tracked[0]
        for failures in range(1, 5):
            asyncio.run(rotator._renew(client, Context()))
            if failures in retry_at:
                retry_at[failures].append(client.retry_at)
    for failures, times in retry_at.items():
        delay = rotation.RENEWAL_BACKOFF.initial * 2 ** (failures - 1)
        assert min(times) < 0.6 * delay and max(times) > 1.4 * delay  # spread both ways
        assert len({round(t, 3) for t in times}) > 150


def test_a_successful_renewal_resets_the_retry_state_and_tells_the_host(
    tmp_path, monkeypatch
) -> None:
    rotator = rotation.CertificateRotation(settings(tmp_path))
    serving = rotator.tracked[1]
    serving.failures, serving.retry_at, serving.last_error = 3, 99.0, "old"

    async def issue(tracked):
        return tmp_path / "kubelet-server-current.pem"

    monkeypatch.setattr(rotator, "_request", issue)
    context = Context()
    asyncio.run(rotator._renew(serving, context))
    assert (serving.failures, serving.retry_at, serving.last_error) == (0, 0.0, "")
    assert rotator.rotations == 1
    assert context.changed == [[str(tmp_path / "kubelet-server-current.pem")]]
    assert context.logged[-1][:2] == ("info", "certificate rotated")


def test_due_when_missing_or_past_the_point_and_not_while_backing_off(
    tmp_path, monkeypatch
) -> None:
    rotator = rotation.CertificateRotation(settings(tmp_path))
    client = rotator.tracked[0]
    monkeypatch.setattr(rotation.time, "monotonic", lambda: 50.0)
    monkeypatch.setattr(rotator, "pair", lambda tracked: None)
    assert rotator._due(client)  # no certificate: renew now
    client.retry_at = 60.0
    assert not rotator._due(client)  # still backing off
    client.retry_at = 50.0
    now = datetime.datetime.now(datetime.UTC)
    fresh = Pair(now - datetime.timedelta(days=1), now + datetime.timedelta(days=99))
    old = Pair(now - datetime.timedelta(days=99), now + datetime.timedelta(days=1))
    monkeypatch.setattr(rotator, "pair", lambda tracked: fresh)
    assert not rotator._due(client)
    monkeypatch.setattr(rotator, "pair", lambda tracked: old)
    assert rotator._due(client)


def test_sleeps_until_the_nearest_of_interval_retry_and_renewal(tmp_path, monkeypatch) -> None:
    rotator = rotation.CertificateRotation(settings(tmp_path))
    client = rotator.tracked[0]
    monkeypatch.setattr(rotation.time, "monotonic", lambda: 100.0)
    monkeypatch.setattr(rotator, "pair", lambda tracked: None)
    assert rotator._sleep_seconds(client) == 10.0  # the check interval
    client.retry_at = 103.0
    assert rotator._sleep_seconds(client) == 3.0  # the retry comes first
    client.retry_at = 0.0
    now = datetime.datetime.now(datetime.UTC)
    soon = Pair(now - datetime.timedelta(seconds=69), now + datetime.timedelta(seconds=31))
    client.fraction, client.fraction_for = 0.7, soon.not_after
    monkeypatch.setattr(rotator, "pair", lambda tracked: soon)
    assert 0.5 < rotator._sleep_seconds(client) <= 1.0  # renewal due in about a second
    overdue = Pair(now - datetime.timedelta(days=9), now + datetime.timedelta(days=1))
    client.fraction, client.fraction_for = 0.7, overdue.not_after
    monkeypatch.setattr(rotator, "pair", lambda tracked: overdue)
    assert rotator._sleep_seconds(client) == 10.0  # overdue: the past is not a wait
    client.retry_at = 100.0
    assert rotator._sleep_seconds(client) == 10.0  # nor is the present
    client.retry_at = 100.01
    assert rotator._sleep_seconds(client) == 0.05  # never less than 50 ms


def test_the_report_lists_both_certificates_and_the_problems(tmp_path, monkeypatch) -> None:
    rotator = rotation.CertificateRotation(settings(tmp_path))
    rotator.tracked[1].last_error = "no approver"
    monkeypatch.setattr(rotator, "pair", lambda tracked: None)
    context = Context()
    rotator.report(context)
    [(details, problems)] = context.reports
    assert [s["name"] for s in details["certificates"]] == ["client", "serving"]
    assert details["certificates"][1]["last_error"] == "no approver"
    assert "last_error" not in details["certificates"][0]
    assert "renew_at" not in details["certificates"][0]
    assert details["rotations"] == 0
    assert problems == ["client certificate missing"]


# --- the settings and the starting state ---------------------------------------------------------


def test_settings_check_every_ten_seconds_and_give_an_attempt_two_minutes(tmp_path) -> None:
    given = rotation.RotationSettings(tmp_path / "k", tmp_path / "c", "node1", ("node1",))
    assert (given.check_interval, given.attempt_timeout) == (10.0, 120.0)
    assert given.bootstrap_kubeconfig is None


def test_settings_are_a_value_that_cannot_change(tmp_path) -> None:
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        settings(tmp_path).check_interval = 1.0  # type: ignore[misc]


def test_a_new_certificate_starts_with_no_point_drawn_and_no_retry_state() -> None:
    fresh = tracked()
    assert (
        fresh.fraction_for,
        fresh.retry_at,
        fresh.failures,
        fresh.last_error,
        fresh.refused,
    ) == (None, 0.0, 0, "", "")


@dataclass
class StoredAt:
    """A stored pair as kubeconfig_for sees it: only its path."""

    path: str


@pytest.fixture
def valid_paths(monkeypatch) -> set[str]:
    """The pair paths ``certstore.valid_pair`` calls valid (others: expired or unreadable)."""
    from nodehost.plugins.bootstrap import certstore

    valid: set[str] = set()
    monkeypatch.setattr(certstore, "valid_pair", lambda path: object() if path in valid else None)
    return valid


@pytest.mark.parametrize(
    ("name", "bootstrap", "pair", "expected"),
    [
        ("client", True, None, "bootstrap"),  # no client certificate at all
        ("client", True, "expired.pem", "bootstrap"),  # one that is no longer valid
        ("client", True, "valid.pem", "node"),  # a valid one: the node's own identity
        ("client", False, None, "node"),  # nothing to fall back to
        ("serving", True, None, "node"),  # the serving certificate is asked for as the node
    ],
)
def test_only_a_client_without_a_valid_certificate_falls_back_to_the_bootstrap_kubeconfig(
    tmp_path, valid_paths, name, bootstrap, pair, expected
) -> None:
    valid_paths.add("valid.pem")
    given = rotation.RotationSettings(
        tmp_path / "node.kubeconfig", tmp_path / "certificates", "node1", ("node1",),
        bootstrap_kubeconfig=tmp_path / "bootstrap.kubeconfig" if bootstrap else None,
    )  # fmt: skip
    which = given.kubeconfig_for(
        rotation.Tracked(name, "p", required=True), None if pair is None else StoredAt(pair)
    )
    assert which == tmp_path / f"{expected}.kubeconfig"


# --- the task: the loop, one renewal's request, the report -----------------------------------


class RunContext(Context):
    """A task context that counts readiness and stops the task after ``reports`` reports."""

    def __init__(self, reports: int) -> None:
        super().__init__()
        self.readied = 0
        self.stop_after = reports

    def ready(self) -> None:
        self.readied += 1

    def report(self, details: dict, problems: list[str]) -> None:
        super().report(details, problems)
        if len(self.reports) >= self.stop_after:
            raise asyncio.CancelledError


def test_the_task_renews_each_missing_certificate_and_keeps_reporting(
    tmp_path, monkeypatch
) -> None:
    rotator = rotation.CertificateRotation(
        rotation.RotationSettings(
            tmp_path / "k", tmp_path / "c", "node1", ("node1",), check_interval=0.01
        )
    )
    monkeypatch.setattr(rotator, "pair", lambda tracked: None)  # never stored: always due
    asked: list[str] = []

    async def issue(tracked):
        asked.append(tracked.name)
        return tmp_path / f"{tracked.prefix}-current.pem"

    monkeypatch.setattr(rotator, "_request", issue)
    context = RunContext(reports=12)
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(rotator.run(context))
    assert context.readied == 1 and context.reports[0][0]["rotations"] == 0
    assert {"client", "serving"} <= set(asked) and rotator.rotations == len(asked) >= 2
    assert context.reports[-1][0]["rotations"] >= 1
    assert (
        "info",
        "renewing certificate",
        {"component": "bootstrap", "certificate": "client"},
    ) in (context.logged)


def test_a_worker_that_fails_ends_the_task_with_its_error(tmp_path, monkeypatch) -> None:
    rotator = rotation.CertificateRotation(settings(tmp_path))
    monkeypatch.setattr(rotator, "pair", lambda tracked: None)

    async def broken(tracked):
        raise RuntimeError("a bug in the renewal")

    monkeypatch.setattr(rotator, "_request", broken)
    with pytest.raises(RuntimeError, match="a bug in the renewal"):
        asyncio.run(asyncio.wait_for(rotator.run(RunContext(reports=1000)), 30))


def test_a_renewal_asks_as_the_node_with_a_deadline_and_a_new_key(tmp_path, monkeypatch) -> None:
    from nodehost.api import client as apiclient
    from nodehost.plugins.bootstrap import csr

    made: list[tuple] = []

    class Client:
        def __init__(self, kubeconfig: str, deadline: float) -> None:
            made.append(("client", kubeconfig, deadline))

        async def __aenter__(self):
            return self

        async def __aexit__(self, *exc) -> None:
            return None

    async def obtain(client, cert_dir, prefix, request, progress):
        made.append(("obtain", cert_dir, prefix, request, progress("waiting")))
        return cert_dir / f"{prefix}-current.pem"

    monkeypatch.setattr(apiclient, "ClusterClient", Client)
    monkeypatch.setattr(csr, "client_request", lambda node: ("client-request", node))
    monkeypatch.setattr(
        csr, "serving_request", lambda node, names: ("serving-request", node, names)
    )
    monkeypatch.setattr(csr, "obtain_with_pending_key", obtain)
    monkeypatch.setattr(rotation.time, "monotonic", lambda: 500.0)
    given = rotation.RotationSettings(
        tmp_path / "node.kubeconfig", tmp_path / "c", "node1", ("node1", "10.0.0.2"),
        bootstrap_kubeconfig=tmp_path / "bootstrap.kubeconfig", attempt_timeout=7.0,
    )  # fmt: skip
    rotator = rotation.CertificateRotation(given)
    seen: list[str] = []
    monkeypatch.setattr(rotator, "pair", lambda tracked: seen.append(tracked.name))  # none stored
    client, serving = rotator.tracked
    assert asyncio.run(rotator._request(client)) == tmp_path / "c" / "kubelet-client-current.pem"
    assert asyncio.run(rotator._request(serving)) == tmp_path / "c" / "kubelet-server-current.pem"
    assert seen == ["client", "client"]  # the fallback is decided by the client certificate
    bootstrap, node = str(tmp_path / "bootstrap.kubeconfig"), str(tmp_path / "node.kubeconfig")
    assert made == [
        ("client", bootstrap, 507.0),
        ("obtain", tmp_path / "c", "kubelet-client", ("client-request", "node1"), None),
        ("client", node, 507.0),
        ("obtain", tmp_path / "c", "kubelet-server",
         ("serving-request", "node1", ("node1", "10.0.0.2")), None),
    ]  # fmt: skip


def test_the_report_gives_each_certificates_renewal_point(tmp_path, monkeypatch) -> None:
    from nodehost.plugins.bootstrap import certstore

    rotator = rotation.CertificateRotation(settings(tmp_path))
    stored = AgedPair(START, START + datetime.timedelta(days=100), 50 * 86400.0)
    monkeypatch.setattr(rotator, "pair", lambda tracked: stored)
    calls: list[tuple] = []

    def status(name, found, path):
        calls.append((name, found, path))
        return {"name": name}

    monkeypatch.setattr(rotation, "certificate_status", status)
    for tracked in rotator.tracked:
        tracked.fraction, tracked.fraction_for = 0.75, stored.not_after
    context = Context()
    rotator.report(context)
    [(details, _)] = context.reports
    at = (START + datetime.timedelta(days=75)).isoformat()
    assert details["certificates"] == [
        {"name": "client", "renew_at": at},
        {"name": "serving", "renew_at": at},
    ]
    assert calls == [
        ("client", stored, certstore.current_path(tmp_path / "certificates", "kubelet-client")),
        ("serving", stored, certstore.current_path(tmp_path / "certificates", "kubelet-server")),
    ]


def test_a_certificate_with_under_a_second_left_is_not_yet_expired() -> None:
    tracked = rotation.Tracked("client", "p", required=True)
    aged = AgedPair(START, START + datetime.timedelta(days=100), 0.5)
    assert rotation._problem(tracked, aged) == (
        "client certificate expires in 0s (renewal has not succeeded)"
    )


def test_due_at_the_renewal_point_itself(tmp_path, monkeypatch) -> None:
    class Frozen(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return START + datetime.timedelta(days=80)

    monkeypatch.setattr(rotation.datetime, "datetime", Frozen)
    rotator = rotation.CertificateRotation(settings(tmp_path))
    client = rotator.tracked[0]
    stored = pair(100)
    client.fraction, client.fraction_for = 0.8, stored.not_after
    monkeypatch.setattr(rotator, "pair", lambda tracked: stored)
    assert rotator._due(client)


def test_with_no_wait_left_it_polls_every_50_ms(tmp_path, monkeypatch) -> None:
    given = rotation.RotationSettings(
        tmp_path / "k", tmp_path / "c", "node1", ("node1",), check_interval=0.0
    )
    rotator = rotation.CertificateRotation(given)
    monkeypatch.setattr(rotator, "pair", lambda tracked: None)
    assert rotator._sleep_seconds(rotator.tracked[0]) == 0.05


def test_when_the_task_ends_no_renewal_is_left_running(tmp_path, monkeypatch) -> None:
    """The workers are cancelled and awaited to their end, one slow to stop included."""
    rotator = rotation.CertificateRotation(
        rotation.RotationSettings(
            tmp_path / "k", tmp_path / "c", "node1", ("node1",), check_interval=0.01
        )
    )
    monkeypatch.setattr(rotator, "pair", lambda tracked: None)
    stopped: list[str] = []

    async def hang(tracked):
        try:
            await asyncio.Event().wait()
        finally:
            if tracked.name == "serving":  # its clean-up takes a few turns of the loop
                for _ in range(5):
                    await asyncio.sleep(0)
            stopped.append(tracked.name)

    monkeypatch.setattr(rotator, "_request", hang)

    async def main() -> list[str]:
        with pytest.raises(asyncio.CancelledError):
            await rotator.run(RunContext(reports=2))
        return sorted(stopped)  # as the task ended, before the loop closes

    assert asyncio.run(main()) == ["client", "serving"]


# --- a lost identity: the node joins again with its bootstrap credentials ------------------------


def rejoining(tmp_path, bootstrap: bool = True) -> rotation.CertificateRotation:
    return rotation.CertificateRotation(
        rotation.RotationSettings(
            tmp_path / "node.kubeconfig", tmp_path / "certificates", "node1", ("node1",),
            bootstrap_kubeconfig=tmp_path / "bootstrap.kubeconfig" if bootstrap else None,
        )
    )  # fmt: skip


def fail_with(rotator, monkeypatch, error: Exception) -> None:
    async def request(tracked):
        raise error

    monkeypatch.setattr(rotator, "_request", request)


def lost_identity(context: Context) -> list[str]:
    return [event for level, event, _ in context.logged if "lost its identity" in event]


def test_a_401_as_the_node_renews_the_client_certificate_at_once_as_bootstrap(
    tmp_path, monkeypatch, valid_paths
) -> None:
    """The serving renewal is refused (401): the client certificate, backing off until now, is
    due at once, and asked for with the bootstrap credentials; the operator is told why."""
    from nodehost.api.client import ClusterRefused

    valid_paths.add("valid.pem")
    rotator = rejoining(tmp_path)
    client, serving = rotator.tracked
    monkeypatch.setattr(rotator, "pair", lambda tracked: StoredAt("valid.pem"))
    monkeypatch.setattr(rotation.time, "monotonic", lambda: 0.5)
    client.retry_at = 60.0
    fail_with(rotator, monkeypatch, ClusterRefused("Unauthorized", 401, "Unauthorized"))
    context = Context()
    asyncio.run(rotator._renew(serving, context))
    assert client.refused == "the API server refused its client certificate: 401"
    assert serving.refused == ""
    assert client.retry_at == 0.0 and rotator._due(client)
    assert rotator.settings.kubeconfig_for(client, StoredAt("valid.pem")) == (
        tmp_path / "bootstrap.kubeconfig"
    )
    assert ("warning", lost_identity(context)[0], {"component": "bootstrap"}) in context.logged
    assert lost_identity(context) == [
        "node node1 lost its identity (the API server refused its client certificate: 401); "
        "joining again through a new certificate request with the bootstrap credentials in "
        f"{tmp_path / 'bootstrap.kubeconfig'}"
    ]
    assert serving.last_error == "Unauthorized" and serving.retry_at > 0.5  # it backs off


def test_an_untrusted_api_server_certificate_is_a_lost_identity_too(
    tmp_path, monkeypatch, valid_paths
) -> None:
    from nodehost.api.client import ClusterTLSError

    valid_paths.add("valid.pem")
    rotator = rejoining(tmp_path)
    client = rotator.tracked[0]
    monkeypatch.setattr(rotator, "pair", lambda tracked: StoredAt("valid.pem"))
    fail_with(rotator, monkeypatch, ClusterTLSError("certificate verify failed"))
    context = Context()
    asyncio.run(rotator._renew(client, context))
    assert client.refused == "certificate verify failed"
    assert lost_identity(context) == [
        "node node1 lost its identity (certificate verify failed); joining again through a new "
        "certificate request with the bootstrap credentials in "
        f"{tmp_path / 'bootstrap.kubeconfig'}"
    ]


@pytest.mark.parametrize(
    "error",
    [
        ("refused", 403),  # refused, but not as an unknown identity
        ("refused", 500),
        ("unreachable", 0),  # no answer says nothing about the identity
    ],
)
def test_other_failures_keep_the_node_identity(tmp_path, monkeypatch, valid_paths, error) -> None:
    from nodehost.api.client import ClusterError, ClusterRefused

    valid_paths.add("valid.pem")
    rotator = rejoining(tmp_path)
    client = rotator.tracked[0]
    monkeypatch.setattr(rotator, "pair", lambda tracked: StoredAt("valid.pem"))
    kind, code = error
    failure = ClusterRefused("no", code, "Forbidden") if kind == "refused" else ClusterError("down")
    fail_with(rotator, monkeypatch, failure)
    context = Context()
    asyncio.run(rotator._renew(client, context))
    assert client.refused == "" and lost_identity(context) == []
    assert rotator.settings.kubeconfig_for(client, StoredAt("valid.pem")) == (
        tmp_path / "node.kubeconfig"
    )


@pytest.mark.parametrize(
    ("bootstrap", "pair", "refused"),
    [
        (False, "valid.pem", ""),  # no bootstrap credentials to join with
        (True, None, ""),  # already asking with them: no client certificate
        (True, "expired.pem", ""),  # already asking with them: an expired one
        (True, "valid.pem", "lost before"),  # already joining again
    ],
)
def test_a_401_changes_nothing_when_there_is_no_other_way_to_ask(
    tmp_path, monkeypatch, valid_paths, bootstrap, pair, refused
) -> None:
    from nodehost.api.client import ClusterRefused

    valid_paths.add("valid.pem")
    rotator = rejoining(tmp_path, bootstrap)
    client, serving = rotator.tracked
    client.refused, client.retry_at = refused, 60.0
    monkeypatch.setattr(rotator, "pair", lambda tracked: pair and StoredAt(pair))
    fail_with(rotator, monkeypatch, ClusterRefused("Unauthorized", 401, "Unauthorized"))
    context = Context()
    asyncio.run(rotator._renew(serving, context))
    assert (client.refused, client.retry_at, lost_identity(context)) == (refused, 60.0, [])


def test_a_refused_client_certificate_is_due_though_it_is_fresh(tmp_path, monkeypatch) -> None:
    rotator = rejoining(tmp_path)
    client = rotator.tracked[0]
    now = datetime.datetime.now(datetime.UTC)
    fresh = Pair(now - datetime.timedelta(days=1), now + datetime.timedelta(days=99))
    monkeypatch.setattr(rotator, "pair", lambda tracked: fresh)
    assert not rotator._due(client)
    client.refused = "the API server refused its client certificate: 401"
    assert rotator._due(client)


def test_after_joining_again_the_node_kubeconfig_trusts_the_bootstrap_ca_and_an_event_is_posted(
    tmp_path, monkeypatch
) -> None:
    from nodehost.api import events
    from nodehost.plugins.bootstrap import join

    rotator = rejoining(tmp_path)
    client = rotator.tracked[0]
    client.refused = "the API server refused its client certificate: 401"
    client.failures, client.retry_at = 2, 0.0
    done: list[tuple] = []
    cluster = {"server": "https://api:6443", "certificate-authority-data": "Q0E="}

    def bootstrap_cluster(path):
        done.append(("read", path))
        return cluster

    async def post(kubeconfig, event, log):
        done.append(("event", kubeconfig, event["reason"], event["type"], event["message"]))
        return True

    monkeypatch.setattr(join, "bootstrap_cluster", bootstrap_cluster)
    monkeypatch.setattr(
        join, "write_node_kubeconfig", lambda *given: done.append(("write", *given))
    )
    monkeypatch.setattr(events, "post_node_event", post)
    issued = tmp_path / "certificates" / "kubelet-client-current.pem"

    async def issue(tracked):
        return issued

    monkeypatch.setattr(rotator, "_request", issue)
    context = Context()
    asyncio.run(rotator._renew(client, context))
    node = tmp_path / "node.kubeconfig"
    assert done == [
        ("read", tmp_path / "bootstrap.kubeconfig"),
        ("write", node, cluster, issued),
        ("event", str(node), "NodeRejoined", "Warning",
         "node node1 lost its identity (the API server refused its client certificate: 401) and "
         "joined again through a new certificate request with its bootstrap credentials"),
    ]  # fmt: skip
    assert context.changed == [[str(node)], [str(issued)]]
    assert (client.refused, client.failures, rotator.rotations) == ("", 0, 1)
    monkeypatch.setattr(rotator, "pair", lambda tracked: pair(100))  # a fresh one now
    assert not rotator._due(client)  # joined: no renewal until the next renewal point


def test_after_a_failed_renewal_the_report_says_when_the_next_attempt_is(
    tmp_path, monkeypatch
) -> None:
    """``retry_at`` (an operator's "when does it try again"), only while one is pending."""
    from nodehost.api.client import ClusterError

    rotator = rotation.CertificateRotation(settings(tmp_path))
    client = rotator.tracked[0]

    async def refuse(tracked):
        raise ClusterError("denied")

    monkeypatch.setattr(rotator, "_request", refuse)
    monkeypatch.setattr(rotation.time, "monotonic", lambda: 1000.0)
    context = Context()
    asyncio.run(rotator._renew(client, context))
    before = datetime.datetime.now(datetime.UTC)
    rotator.report(context)
    after = datetime.datetime.now(datetime.UTC)
    [client_status, serving_status] = context.reports[-1][0]["certificates"]
    retry_in = datetime.timedelta(seconds=client.retry_at - 1000.0)
    assert retry_in.total_seconds() > 0
    retry_at = datetime.datetime.fromisoformat(client_status["retry_at"])
    assert before + retry_in <= retry_at <= after + retry_in
    assert "retry_at" not in serving_status
    monkeypatch.setattr(rotation.time, "monotonic", lambda: client.retry_at)
    rotator.report(context)
    assert "retry_at" not in context.reports[-1][0]["certificates"][0]  # due now: none pending
