"""Logging: Python ``logging`` records become structlog events in nodehost's format."""

from __future__ import annotations

import json
import logging

import pytest

from nodehost import log


@pytest.fixture
def json_logs():
    log.configure_logging(0, "json")
    yield
    logging.getLogger().handlers = [
        h for h in logging.getLogger().handlers if type(h).__name__ != "_StructlogHandler"
    ]
    log.configure_logging(0, "auto")


def test_a_library_warning_is_a_json_event_naming_its_logger(json_logs, capsys) -> None:
    log.get_logger()
    logging.getLogger("httpx").warning("connection to %s failed", "api")
    logging.getLogger("lightkube").info("not shown at the default verbosity")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    event = json.loads(lines[0])
    assert (event["event"], event["logger"], event["level"]) == (
        "connection to api failed",
        "httpx",
        "warning",
    )


def test_a_message_for_a_person_is_json_in_json_mode(json_logs, capsys) -> None:
    log.print_message("Invalid NodeConfig x.yaml\n  nodeName: Required value", "error", code=255)
    (line,) = capsys.readouterr().err.splitlines()
    record = json.loads(line)
    assert record["event"] == "Invalid NodeConfig x.yaml"
    assert record["lines"] == ["  nodeName: Required value"]
    assert (record["level"], record["code"]) == ("error", 255)


@pytest.mark.parametrize("no_color, coloured", [(None, True), ("", True), ("1", False)])
def test_console_lines_are_coloured_unless_no_color_is_set_and_not_empty(
    no_color: str | None, coloured: bool, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """``NO_COLOR`` as no-color.org has it: present and not an empty string."""
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    log.configure_logging(0, "console")
    try:
        log.get_logger().warning("a warning")
    finally:
        log.configure_logging(0, "auto")
    assert ("\x1b[" in capsys.readouterr().err) is coloured
