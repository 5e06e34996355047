"""Fixtures of the install/uninstall tests; the helpers live in ``servicerun``."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodehost.testing import parts

sys.path.insert(0, str(Path(__file__).parent))

from servicerun import ServiceRoot


@pytest.fixture
def service_root(tmp_path: Path) -> ServiceRoot:
    parts.require("mount-namespace", "nodehost-script")
    root = ServiceRoot(tmp_path / "etc-systemd-system", tmp_path / "etc-default")
    root.units.mkdir()
    root.defaults.mkdir()
    return root


@pytest.fixture(autouse=True)
def host_untouched() -> Iterator[None]:
    """The host's own unit and environment file are the same after the test as before."""
    paths = ("/etc/systemd/system/nodehost.service", "/etc/default/nodehost")
    before = {path: os.path.lexists(path) for path in paths}
    yield
    assert {path: os.path.lexists(path) for path in paths} == before
