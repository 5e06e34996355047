"""Kubernetes quantities, parsed exactly."""

from __future__ import annotations

import pytest

from nodehost.config.quantity import QUANTITY_FORMAT_ERROR, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("512Mi", 512 * 2**20),
        ("-1000Mi", -1000 * 2**20),
        ("1G", 10**9),
        ("1Ki", 1024),
        ("2Ei", 2 * 2**60),
        ("1.5Gi", 3 * 2**29),
        (".5Ki", 512),
        ("1e3", 1000),
        ("1E-2", 1),
        ("100m", 1),
        ("-1.5", -2),
        ("0", 0),
        ("+5k", 5000),
        (" 7 ", 7),
    ],
)
def test_values_in_bytes(text: str, value: int) -> None:
    assert parse_quantity(text).value == value


def test_original_text_is_kept() -> None:
    assert parse_quantity("512Mi").text == "512Mi"
    assert str(parse_quantity("1G")) == "1G"


@pytest.mark.parametrize("text", ["", "abc", "1Zi", ".", "1e", "1..2", "--1", "1 Gi", "Mi"])
def test_malformed_quantities_use_kubernetes_message(text: str) -> None:
    with pytest.raises(ValueError) as error:
        parse_quantity(text)
    assert str(error.value) == QUANTITY_FORMAT_ERROR


def test_huge_exponent_is_refused_quickly() -> None:
    with pytest.raises(ValueError):
        parse_quantity("1e999999")
    with pytest.raises(ValueError, match="out of range"):
        parse_quantity("1e5000")
