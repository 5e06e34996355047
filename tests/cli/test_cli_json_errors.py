"""Every ``--json`` output is JSON, errors included: a script that asks for JSON can parse
whatever a command prints on stdout, and finds the exit code in it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from nodehost.testing.ports import free_port

FAILING = [
    (lambda: ["status", "--json", "--address", f"127.0.0.1:{free_port()}"], 1),
    (lambda: ["status", "--json", "--timeout", "-1"], 2),
    (lambda: ["start", "--dry-run", "--json", "--config", "/nonexistent/node-config.yaml"], 255),
    (lambda: ["start", "--json", "--components", "kubelet proxy"], 2),
    (lambda: ["components", "--json", "--no-such-flag"], 2),
    (lambda: ["plugins", "--json", "--no-such-flag"], 2),
    (lambda: ["network", "providers", "--json", "--no-such-flag"], 2),
    (lambda: ["config", "validate", "--json", "/nonexistent/node-config.yaml"], 255),
    (lambda: ["version", "--json", "--no-such-flag"], 2),
]


@pytest.mark.parametrize(
    ("args", "code"), FAILING, ids=lambda v: " ".join(v()) if callable(v) else str(v)
)
def test_an_error_asked_for_as_json_is_json_on_stdout(
    nodehost: Callable[..., Any], args: Callable[[], list[str]], code: int
) -> None:
    result = nodehost(*args())
    assert result.code == code, (result.out, result.err)
    document = json.loads(result.out)
    assert isinstance(document, dict), result.out
    if "exit_code" in document:  # every command's error; config validate has its own report
        assert document["exit_code"] == code
        assert document["error"] and not document["error"].startswith("error:")
    assert "Traceback" not in result.err
    assert result.err.strip() == "", result.err


def test_without_json_the_error_stays_a_line_on_stderr(nodehost: Callable[..., Any]) -> None:
    result = nodehost("status", "--address", f"127.0.0.1:{free_port()}")
    assert result.code == 1
    assert result.out == ""
    assert result.err.startswith("error: no nodehost answers at 127.0.0.1:")
