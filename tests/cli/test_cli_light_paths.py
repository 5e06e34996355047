"""``config validate`` and ``start --dry-run`` import only what judging a file needs.

Both commands load every plugin, validate and plan; neither runs anything.  So
neither may import the code that runs a node (asyncio, structlog, the host,
the DNS server, API clients) or the code of a path the file does not take (a
network provider's host links, did-you-mean suggestions).  Each check runs the
command in a fresh interpreter, with the built-in plugins only (``--no-plugins``:
an installed third-party plugin imports what it likes), and lists what it
imported: no timing involved.

What they do need stays out of these lists: the plugin manager (plugins load
through it) and the component API (a plan is made of its values).  The DNS
plan builds its ``kubernetes`` record source, but the source's translation to
the DNS model (and the model) is imported only when it runs.

A node started with some of its components skips the checks of the others,
and its teardown the network's code when there was no network.  Neither a plan
nor a node imports ``shutil`` and its compressors.

A running node's DNS server imports dnspython without running
``importlib.metadata`` (``nodehost.plugins.dns.features``).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from nodehost.testing.ports import free_port

#: Modules that running a node needs and judging a file does not.
RUNNING = (
    "asyncio",
    "structlog",
    "cryptography",
    "lightkube",
    "httpx2",
    "h2",
    "dns",  # dnspython
    "importlib.metadata",
    "email",
    "nodehost.daemon.host",
    "nodehost.daemon.supervisor",
    "nodehost.daemon.run",
    "nodehost.api.client",
    "nodehost.plugins.dns.server",
    "nodehost.plugins.dns.wire",
    "nodehost.plugins.dns.records",  # the DNS model: what a running server answers from
    "nodehost.plugins.dns.sources.kubeobjects",  # API objects to that model
    "nodehost.generate",
    "nodehost.pki.nodefolder",
    # Finding, moving and ending processes: a plan only writes the launcher script that
    # names their variables (nodehost.daemon.variables).
    "nodehost.daemon.proc",
    "nodehost.daemon.pidfiles",
    "nodehost.daemon.cgroups",
    "ctypes",
    "subprocess",
    "random",  # a retry's jitter (nodehost.backoff draws it on the first delay)
    # Writing a memory profile and the threads' debug page (start checks NODEHOST_PROFILE only).
    "nodehost.pki.atomic",
    "traceback",
)

#: Modules of paths a valid file without a network provider or plugin flags does not take.
UNTAKEN = (
    "nodehost.cni.provider",
    "nodehost.cni.hostnet",
    "nodehost.cni.ledger",
    "nodehost.suggest",
    "difflib",
    "nodehost.hostaddr",
    "nodehost.plugins.localcluster.options",
    "nodehost.plugins.localcluster.layout",
    "nodehost.plugins.dns.sources.file",  # no dnsServerConfig.recordsFile
    "pathlib",  # a plan's paths are strings; Path is for the code that touches the files
    "hashlib",  # digests: of registry hosts (none configured) and of image archives (run time)
    "logging",  # set up with the first event; a valid file without plugin failures logs none
    # The tasks of components inactive in this file: the API load balancer (one API server)
    # and the registry mirrors' rewriting proxy (no rewrite).
    "nodehost.plugins.apilb.task",
    "nodehost.plugins.runtime.mirrorproxy",
)

#: What no command that plans or runs a node needs: ``shutil`` (programs are found by
#: ``nodehost.binaries.which``) and the compressors it imports as it loads (0.4 MiB of the
#: default node's peak RSS).
COMPRESSORS = ("shutil", "bz2", "lzma", "zlib")

SCRIPT = """\
import re, sys
started = set(sys.modules)
from nodehost.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit_:
    code = exit_.code
print("EXIT", code)
print("LOADED", " ".join(sorted(set(sys.modules) - started)))
cached = [*getattr(re, "_cache", {}), *getattr(re, "_cache2", {})]
print("PATTERNS", ascii(sorted({key[1] for key in cached if isinstance(key[1], str)})))
"""

#: Patterns for text a valid, all-ASCII file does not hold; compiled when such text comes
#: (the lone surrogate's class alone costs about 2 M instructions to compile).
UNCOMPILED = ("[\ud800-\udfff]",)


def run_light(args: list[str], cwd: Path) -> dict[str, str]:
    """``SCRIPT``'s lines (``EXIT``, ``LOADED``, ``PATTERNS``) for ``nodehost ARGS`` in a fresh
    interpreter; it must exit 0."""
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *args], capture_output=True, text=True, cwd=cwd, timeout=60
    )
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert lines.get("EXIT") == "0", done.stdout + done.stderr
    return lines


def loaded_by(args: list[str], cwd: Path) -> set[str]:
    """The modules ``nodehost ARGS`` imported in a fresh interpreter (it must exit 0); not
    those the interpreter's start-up loaded (an editable install's finder imports pathlib)."""
    return set(run_light(args, cwd)["LOADED"].split())


def compiled_by(args: list[str], cwd: Path) -> set[str]:
    """The regular expressions (text patterns) in ``re``'s cache after ``nodehost ARGS``."""
    return set(ast.literal_eval(run_light(args, cwd)["PATTERNS"]))


@pytest.fixture
def dns_config(write_config, node_dir: Path) -> Path:
    """The CLI tests' valid node config with the DNS server on (its plan builds its sources)."""
    text = (node_dir / "node-config.yaml").read_text()
    return write_config(text + f"dnsBindAddress: 127.0.0.1:{free_port()}\n", "dns-config.yaml")


def present(loaded: set[str], names: tuple[str, ...]) -> list[str]:
    return [name for name in names if name in loaded]


def test_config_validate_imports_nothing_for_running_or_untaken_paths(dns_config: Path) -> None:
    args = ["config", "validate", "--no-plugins", str(dns_config)]
    loaded = loaded_by(args, dns_config.parent)
    assert present(loaded, RUNNING + UNTAKEN + COMPRESSORS) == []
    assert "nodehost.plugins.dns.sources.kubernetes" in loaded  # the DNS plan built its source


def test_dry_run_imports_nothing_for_running_or_untaken_paths(
    dns_config: Path, tmp_path: Path
) -> None:
    args = ["start", "--config", str(dns_config), "--dry-run", "--standins=always", "--no-plugins"]
    args += ["--binary=containerd=/bin/true"]  # planned on a machine without containerd too
    loaded = loaded_by([*args, "--state-dir", str(tmp_path / "state")], dns_config.parent)
    assert present(loaded, RUNNING + UNTAKEN + COMPRESSORS) == []
    assert "nodehost.plugins.dns.sources.kubernetes" in loaded  # the DNS plan built its source


@pytest.mark.parametrize("command", ["validate", "dry-run"])
def test_judging_an_ascii_file_compiles_no_pattern_for_other_text(
    command: str, dns_config: Path, tmp_path: Path
) -> None:
    args = ["config", "validate", "--no-plugins", str(dns_config)]
    if command == "dry-run":
        args = ["start", "--config", str(dns_config), "--dry-run", "--standins=always"]
        args += ["--no-plugins", "--binary=containerd=/bin/true"]
        args += ["--state-dir", str(tmp_path / "state")]
    compiled = compiled_by(args, dns_config.parent)
    assert compiled  # the cache is read: the file's own patterns are in it
    assert [pattern for pattern in UNCOMPILED if pattern in compiled] == []


def test_loading_a_network_provider_plugin_loads_no_digests() -> None:
    """A provider plugin (contrib's ptp, macvlan) imports ``nodehost.cni.provider`` as it loads,
    on every command; the conflist's digest (``hashlib``, OpenSSL's) is taken only in its plan."""
    probe = "import sys, nodehost.cni.provider; print(sorted({'hashlib', '_hashlib'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


#: What a node running only the kubelet and kube-proxy never needs: the checks of plugins whose
#: components are not selected (or, ``bootstrap``'s, not in the preflight) and, with no network
#: set up, the code that tears a network down.
NOT_STARTED = (
    "nodehost.plugins.runtime.checks",
    "nodehost.plugins.dns.checks",
    "nodehost.plugins.sdn.checks",
    "nodehost.plugins.bootstrap.checks",
    "nodehost.cni.attachments",
    "nodehost.cni.ledger",
)


def test_exit_on_ready_imports_no_checks_of_unselected_plugins_nor_network_teardown(
    node_dir: Path, tmp_path: Path
) -> None:
    config = node_dir / "node-config.yaml"
    text = config.read_text()  # its last section is kubeletArguments
    text += (
        f'  healthz-port: ["{free_port()}"]\nproxyArguments:\n  healthz-port: ["{free_port()}"]\n'
    )
    config.write_text(text)
    args = ["start", "--config", str(config), "--components=kubelet,proxy", "--standins=always"]
    args += ["--state-dir", str(tmp_path / "state"), "--health-address=none", "--no-plugins"]
    loaded = loaded_by([*args, "--exit-on-ready"], node_dir)
    assert present(loaded, NOT_STARTED + COMPRESSORS) == []
    # The selected components' checks ran, and the teardown did.
    assert {"nodehost.plugins.kubelet.checks", "nodehost.daemon.teardown"} <= loaded


#: What running ``importlib.metadata``'s code imports (2.8 MiB of a running node).
METADATA_CODE = ("importlib.metadata._meta", "email", "zipfile", "csv")


def test_the_dns_server_imports_dnspython_without_running_importlib_metadata() -> None:
    """dnspython asks ``importlib.metadata`` whether ``idna`` is installed as ``dns.name``
    imports; the DNS server answers it from the distribution's files
    (``nodehost.plugins.dns.features``), with the answer dnspython finds alone."""
    probe = (
        "import sys, {first}, dns.name; "
        f"print(dns.name.have_idna_2008, sorted(set({METADATA_CODE}) & set(sys.modules)))"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", probe.format(first=first)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        for first in ("nodehost.plugins.dns.server", "dns")
    ]
    server, alone = (run.stdout.split(" ", 1) for run in runs)
    assert server[1].strip() == "[]", runs[0].stdout + runs[0].stderr
    assert server[0] == alone[0]


#: ``SCRIPT``, counting the YAML documents parsed on the way.
PARSES_SCRIPT = """\
import sys
from nodehost.config import yamlsafe
parsed = []
parse = yamlsafe.parse_yaml
def counted(text, *args):
    parsed.append(text)
    return parse(text, *args)
yamlsafe.parse_yaml = counted
from nodehost.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit_:
    code = exit_.code
print("EXIT", code)
print("PARSED", len(parsed), len(set(parsed)))
"""


@pytest.mark.parametrize("command", ["validate", "dry-run"])
def test_judging_a_file_parses_each_yaml_document_once(
    command: str, dns_config: Path, tmp_path: Path
) -> None:
    """The node config and its ``masterKubeConfig``: validation, the kubelet's plan and the
    API route each read the kubeconfig, and its bytes are parsed once."""
    args = ["config", "validate", "--no-plugins", str(dns_config)]
    if command == "dry-run":
        args = ["start", "--config", str(dns_config), "--dry-run", "--standins=always"]
        args += ["--no-plugins", "--binary=containerd=/bin/true"]
        args += ["--state-dir", str(tmp_path / "state")]
    done = subprocess.run(
        [sys.executable, "-c", PARSES_SCRIPT, *args],
        capture_output=True,
        text=True,
        cwd=dns_config.parent,
        timeout=60,
    )
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert lines.get("EXIT") == "0", done.stdout + done.stderr
    assert lines["PARSED"] == "2 2"


#: ``SCRIPT``, listing the classes the stdlib's ``dataclasses`` decorator makes on the way.
DATACLASS_SCRIPT = """\
import dataclasses, sys
made = []
process = dataclasses._process_class
def listed(cls, *args, **kwargs):
    made.append(f"{cls.__module__}.{cls.__qualname__}")
    return process(cls, *args, **kwargs)
dataclasses._process_class = listed
from nodehost.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit_:
    code = exit_.code
print("EXIT", code)
print("MADE", " ".join(name for name in made if name.startswith("nodehost.")))
"""

#: The stdlib's dataclasses compile each class's methods with ``exec`` (about 0.5 ms
#: each); ``@frozen`` records compile none, and the plugin host, whose loading sets its
#: own fields, is a plain class.  (``nodehost.frozen``'s own: one template class, no
#: methods.)
STDLIB_DATACLASSES = {"nodehost.frozen._Template"}


@pytest.mark.parametrize("command", ["validate", "dry-run"])
def test_judging_a_file_compiles_no_dataclass_methods(
    command: str, dns_config: Path, tmp_path: Path
) -> None:
    args = ["config", "validate", "--no-plugins", str(dns_config)]
    if command == "dry-run":
        args = ["start", "--config", str(dns_config), "--dry-run", "--standins=always"]
        args += ["--no-plugins", "--binary=containerd=/bin/true"]
        args += ["--state-dir", str(tmp_path / "state")]
    done = subprocess.run(
        [sys.executable, "-c", DATACLASS_SCRIPT, *args],
        capture_output=True,
        text=True,
        cwd=dns_config.parent,
        timeout=60,
    )
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert lines.get("EXIT") == "0", done.stdout + done.stderr
    assert set(lines.get("MADE", "").split()) <= STDLIB_DATACLASSES


#: ``SCRIPT`` for the host alone (``nodehost.testing.planhost``, what ``bench/supervisor.py``
#: runs): the modules a plan of plain processes imported.
PLANHOST_SCRIPT = """\
import sys
started = set(sys.modules)
from nodehost.testing.planhost import main
try:
    main(sys.argv[1:])
except SystemExit as exit_:
    code = exit_.code
print("EXIT", code)
print("LOADED", " ".join(sorted(set(sys.modules) - started)))
"""

#: What running a plan of plain processes does not use: the node IP's code (no node IP to
#: follow), the plugins' records and selection (a plan is made already) and the command
#: line's option defaults (``nodehost.pki``, whose atomic writer keeps the state, holds none).
NOT_FOR_PLAIN_PROCESSES = (
    "nodehost.nodeip",
    "nodehost.pluginhost.records",
    "nodehost.pluginhost.selection",
    "nodehost.options",
)


def test_running_a_plan_of_plain_processes_imports_no_planning_nor_node_ip_code(
    tmp_path: Path,
) -> None:
    plan = tmp_path / "plan.json"
    component = {"name": "sleeper", "argv": ["sleep", "60"]}
    plan.write_text(json.dumps({"state_dir": str(tmp_path / "state"), "components": [component]}))
    done = subprocess.run(
        [sys.executable, "-c", PLANHOST_SCRIPT, str(plan), "--exit-on-ready", "--no-notify"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert lines.get("EXIT") == "0", done.stdout + done.stderr
    loaded = set(lines["LOADED"].split())
    assert "nodehost.daemon.nodeipwatch" in loaded  # the host ran, with its follower
    assert present(loaded, NOT_FOR_PLAIN_PROCESSES) == []


def test_a_node_without_a_local_cluster_does_not_load_its_code_when_ready() -> None:
    """The local cluster plugin prints how to reach the clusters this process started
    when the node is ready; a process that started none does not import their code."""
    probe = (
        "import sys; from nodehost.plugins import localcluster; "
        "localcluster.nodehost_node_ready(status_address=None, keeps_running=True); "
        "print(sorted(m for m in sys.modules if m.startswith('nodehost.plugins.localcluster.')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
