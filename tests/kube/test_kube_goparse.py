"""Go's text parsers: what each accepts and Go's exact error text."""

from __future__ import annotations

import pytest

from nodehost.kube.goparse import (
    FlagError,
    parse_bool,
    parse_float,
    parse_int,
    parse_ip_sloppy,
    read_csv_line,
)


@pytest.mark.parametrize("text", ["1", "t", "T", "TRUE", "true", "True"])
def test_parse_bool_accepts_go_true_spellings(text: str) -> None:
    assert parse_bool(text) is True


@pytest.mark.parametrize("text", ["0", "f", "F", "FALSE", "false", "False"])
def test_parse_bool_accepts_go_false_spellings(text: str) -> None:
    assert parse_bool(text) is False


@pytest.mark.parametrize("text", ["yes", "tRUE", "", " true", "2"])
def test_parse_bool_rejects_other_text_with_go_message(text: str) -> None:
    with pytest.raises(FlagError) as caught:
        parse_bool(text)
    assert str(caught.value) == f'strconv.ParseBool: parsing "{text}": invalid syntax'


def test_parse_int_decimal_base_refuses_prefixes() -> None:
    with pytest.raises(FlagError):
        parse_int("0x10", 64, base=10)


@pytest.mark.parametrize(
    ("text", "expected"), [("5", 5.0), ("2.5", 2.5), ("-1e3", -1000.0), ("0x1p3", 8.0), (".5", 0.5)]
)
def test_float_parses_go_float_literals(text: str, expected: float) -> None:
    assert parse_float(text) == expected


def test_parse_ip_sloppy_reads_leading_zeros_as_decimal() -> None:
    assert parse_ip_sloppy("010.0.0.1") == "10.0.0.1"


def test_read_csv_line_unescapes_doubled_quotes() -> None:
    assert read_csv_line('"a""b",c') == ['a"b', "c"]
