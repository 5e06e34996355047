"""One format per stream: a node's stderr under ``--log-format=auto`` (not a terminal) is
JSON throughout -- its events, the config warnings before them, the error that ends it."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="module")
def node_config(
    tmp_path_factory: pytest.TempPathFactory, make_real_node_folder: Callable[[Path], Path]
) -> Path:
    node = make_real_node_folder(tmp_path_factory.mktemp("stream"))
    config = node / "node-config.yaml"
    text = config.read_text().replace("0.0.0.0:10250", "127.0.0.1:0")
    config.write_text(text + "noSuchKey: 1\n")  # a warning before the node's first event
    return config


def start(nodehost_exe: Callable[..., Any], config: Path, state: Path, *args: str) -> Any:
    return nodehost_exe(
        "start", f"--config={config}", "--components=kubelet", "--standins=always",
        f"--state-dir={state}", "--exit-on-ready", *args,
    )  # fmt: skip


def json_lines(stderr: str) -> list[dict[str, Any]]:
    """Every line of ``stderr`` as a JSON object (fails naming the first that is not)."""
    records = []
    for line in stderr.splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            pytest.fail(f"a plain line among JSON events: {line!r}\n{stderr}")
    return records


def test_a_running_node_writes_its_warnings_as_json_among_its_events(
    nodehost_exe: Callable[..., Any], node_config: Path, tmp_path: Path
) -> None:
    done = start(nodehost_exe, node_config, tmp_path / "state", "--health-address=127.0.0.1:0")
    assert done.code == 0, done.err
    events = [record["event"] for record in json_lines(done.err)]
    assert [event for event in events if "noSuchKey" in event and event.startswith("warning:")]
    assert "node ready" in events


def test_the_error_that_ends_a_node_is_json_too_and_names_the_flag(
    nodehost_exe: Callable[..., Any], node_config: Path, tmp_path: Path
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = start(
            nodehost_exe, node_config, tmp_path / "state", f"--health-address=127.0.0.1:{port}"
        )
    assert done.code == 1
    errors = [record for record in json_lines(done.err) if record.get("level") == "error"]
    assert len(errors) == 1, done.err
    assert f"cannot serve health and status on 127.0.0.1:{port}" in errors[0]["event"]
    assert "choose another --health-address" in errors[0]["event"]


def test_a_terminal_free_run_asked_for_console_is_plain_throughout(
    nodehost_exe: Callable[..., Any], node_config: Path, tmp_path: Path
) -> None:
    done = start(
        nodehost_exe, node_config, tmp_path / "state", "--health-address=127.0.0.1:0",
        "--log-format=console",
    )  # fmt: skip
    assert done.code == 0, done.err
    assert [line for line in done.err.splitlines() if line.startswith("warning: ")]
    for line in done.err.splitlines():
        assert not line.startswith("{"), line


def test_messages_after_an_event_take_its_format(
    nodehost: Callable[..., Any], fake_dists: Path, write_config: Callable[..., Path]
) -> None:
    """The fake distribution's broken plugins log their failure (an event, JSON off a
    terminal) before the command's own problems: those are JSON too."""
    config = write_config("apiVersion: v1\nkind: NodeConfig\nnodeName: 12345\n")
    result = nodehost("config", "validate", str(config))
    assert result.code == 255
    records = json_lines(result.err)
    assert [r for r in records if r.get("event", "").startswith("plugin ")], result.err
    assert [r for r in records if r["event"] == f"Invalid NodeConfig {config}"], result.err


def test_messages_without_an_event_stay_plain(
    nodehost: Callable[..., Any], write_config: Callable[..., Path]
) -> None:
    config = write_config("apiVersion: v1\nkind: NodeConfig\nnodeName: 12345\n")
    result = nodehost("config", "validate", str(config), "--no-plugins")
    assert result.code == 255
    assert result.err.splitlines()[0] == f"Invalid NodeConfig {config}"
