"""When rotation renews a certificate: at a point drawn once between 70 % and 90 % of its life."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import pytest

from nodehost.cluster import rotation

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
    return rotation.Tracked("client", "kubelet-client", "signer", required=True)


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
