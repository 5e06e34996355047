"""Go's time.ParseDuration: same accepted strings, same values, same error messages."""

from __future__ import annotations

import pytest

from nodehost.config.goduration import go_quote, parse_go_duration, parse_go_duration_ns


@pytest.mark.parametrize(
    ("text", "nanoseconds"),
    [
        ("0", 0),
        ("+0", 0),
        ("-0", 0),
        ("5s", 5_000_000_000),
        ("30s", 30_000_000_000),
        ("5m", 300_000_000_000),
        ("2h22m", (2 * 3600 + 22 * 60) * 1_000_000_000),
        ("1h2m3s4ms5us6ns", 3_723_004_005_006),
        ("-1.5h", -5_400_000_000_000),
        (".5s", 500_000_000),
        ("1.s", 1_000_000_000),
        ("0.000000001s", 1),
        ("1\u00b5s", 1_000),
        ("1\u03bcs", 1_000),
        ("100ms", 100_000_000),
        ("9223372036854775807ns", 9_223_372_036_854_775_807),
        ("-9223372036854775808ns", -9_223_372_036_854_775_808),
        ("2562047h", 2562047 * 3_600_000_000_000),
    ],
)
def test_valid_durations(text: str, nanoseconds: int) -> None:
    assert parse_go_duration_ns(text) == nanoseconds


def test_seconds_as_float() -> None:
    assert parse_go_duration("1m30s") == 90.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("5", 'time: missing unit in duration "5"'),
        ("-5", 'time: missing unit in duration "-5"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        ("3x", 'time: unknown unit "x" in duration "3x"'),
        ("s", 'time: invalid duration "s"'),
        (".", 'time: invalid duration "."'),
        (".s", 'time: invalid duration ".s"'),
        ("1h-2m", 'time: unknown unit "h-" in duration "1h-2m"'),
        ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
        ("2562048h", 'time: invalid duration "2562048h"'),
        ("99999999999999999999s", 'time: invalid duration "99999999999999999999s"'),
        ("5 s", 'time: unknown unit " s" in duration "5 s"'),
        ("1\u00e9", 'time: unknown unit "\\xc3\\xa9" in duration "1\\xc3\\xa9"'),
    ],
)
def test_invalid_durations_have_gos_message(text: str, message: str) -> None:
    with pytest.raises(ValueError) as error:
        parse_go_duration_ns(text)
    assert str(error.value) == message


def test_quote_escapes_quotes_backslashes_and_controls_like_go() -> None:
    assert go_quote('a"b\\c\x01') == '"a\\"b\\\\c\\x01"'
