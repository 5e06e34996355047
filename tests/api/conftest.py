"""Fixtures for the API client and the test API server: a running server with one config map."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nodehost.testing.apiserver import TestApiServer

#: ``openshift-node/node-config``: what the client tests read back.
NODE_CONFIG = "apiVersion: v1\nkind: NodeConfig\nnodeName: node1.example.com\n"


@pytest.fixture
def api(tmp_path: Path) -> Iterator[TestApiServer]:
    """A running test API server holding config map ``openshift-node/node-config``."""
    server = TestApiServer(tmp_path / "api")
    server.put_config_map("openshift-node", "node-config", {"node-config.yaml": NODE_CONFIG})
    server.come_up()
    yield server
    server.go_down()
