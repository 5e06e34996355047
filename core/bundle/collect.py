"""Gathering a debug bundle's entries, and writing the tar.gz.

Every step is best effort: what cannot be collected (no node running, no
config, a program missing) becomes a line of ``README.txt`` saying why, never
a failure of the whole bundle.  Every entry is redacted
(:mod:`nodehost.bundle.redact`) as it is added.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodehost.bundle.redact import redact_data, redact_document, redact_text
from nodehost.frozen import frozen

#: The most read from one HTTP answer or one program's output.
ANSWER_LIMIT = 16 * 1024 * 1024
#: How long one HTTP request or one program may take.
STEP_TIMEOUT = 30.0
#: ``nodehost check`` may probe the network and the API server.
CHECK_TIMEOUT = 120.0
_CHAINS = ("CNI-", "KUBE-")


@frozen
class BundleSources:
    """Where the node is: its config (if known), state directory, health server address."""

    config_path: str | None
    state_dir: str
    health: tuple[str, int] | None
    plugin_flags: dict[str, Any] = field(default_factory=dict)


@dataclass
class Bundle:
    """Entries (archive name -> redacted content) and notes on what is missing and why."""

    entries: dict[str, bytes] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add_text(self, name: str, text: str) -> None:
        self.entries[name] = redact_text(text).encode()

    def add_json(self, name: str, data: Any) -> None:
        self.entries[name] = (json.dumps(redact_data(data), indent=2) + "\n").encode()

    def attempt(self, what: str, step: Callable[[], None]) -> None:
        """Run ``step``; a failure becomes a note ``what: reason``."""
        try:
            step()
        except Exception as error:  # a bundle collects what it can
            self.notes.append(f"{what}: not collected ({_reason(error)})")


def _reason(error: BaseException) -> str:
    return redact_text(" ".join(str(error).split()) or type(error).__name__)


def collect(sources: BundleSources) -> Bundle:
    """Every entry the package docstring lists, in a fixed order."""
    bundle = Bundle()
    plan = _planned(sources, bundle)
    bundle.attempt("versions", lambda: _versions(bundle, sources, plan))
    bundle.attempt("nodehost check", lambda: _check(bundle, sources))
    bundle.attempt("status and logs", lambda: _node(bundle, sources))
    if plan is not None:
        bundle.attempt("plan", lambda: _plan(bundle, plan))
    bundle.attempt("network state", lambda: _network(bundle))
    bundle.attempt("cgroups", lambda: _cgroups(bundle, sources.state_dir))
    bundle.add_text("README.txt", _readme(bundle))
    return bundle


def _planned(sources: BundleSources, bundle: Bundle) -> Any:
    """(inventory, plan, config) as ``start`` would plan the config; None (noted) without one."""
    if sources.config_path is None:
        bundle.notes.append("config and plan: not collected (no --config or NODEHOST_CONFIG)")
        return None
    try:
        return _plan_config(sources)
    except Exception as error:  # an invalid config is worth a bundle too
        bundle.notes.append(f"config and plan of {sources.config_path}: {_reason(error)}")
        return None


def _plan_config(sources: BundleSources) -> Any:
    from nodehost.cli.options import load_inventory
    from nodehost.options import StartOptions
    from nodehost.plan import build_plan
    from nodehost.resolve import resolve_config, selection_for

    assert sources.config_path is not None
    inventory = load_inventory(**sources.plugin_flags)
    options = StartOptions(
        config=sources.config_path,
        config_dir=os.path.dirname(os.path.abspath(sources.config_path)),
        state_dir=sources.state_dir,
    )
    resolved = resolve_config(options, inventory, selection_for(options, inventory))
    plan = build_plan(
        inventory,
        resolved,
        options,
        state_dir=sources.state_dir,
        overrides={},
        resolve_programs=False,
        require_active=False,
        host_failures=[],
    )
    return inventory, plan, resolved.config


def _versions(bundle: Bundle, sources: BundleSources, planned: Any) -> None:
    from dataclasses import asdict

    from nodehost.versions import host_versions, plan_programs

    document: dict[str, Any] = dict(host_versions())
    if planned is not None:
        inventory, plan, _ = planned
        document["programs"] = [asdict(p) for p in plan_programs(plan, inventory, {}, "missing")]
    bundle.add_json("versions.json", document)


def _check(bundle: Bundle, sources: BundleSources) -> None:
    """``nodehost check --json`` run by this interpreter."""
    argv = [sys.executable, "-m", "nodehost", "check", "--json"]
    if sources.config_path is not None:
        argv += ["--config", sources.config_path]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=CHECK_TIMEOUT, stdin=subprocess.DEVNULL
    )
    bundle.add_text("check.json", done.stdout)
    if done.stderr.strip():
        bundle.add_text("check.stderr.txt", done.stderr)


def _node(bundle: Bundle, sources: BundleSources) -> None:
    """``/status``, ``/metrics`` and each component's ``/debug/logs/<name>``."""
    address = sources.health
    if address is None:
        raise RuntimeError("no health address (nodehost is not running, or serves none)")
    status = json.loads(_get(address, "/status"))
    bundle.add_json("status.json", status)
    _add_answer(bundle, address, "/metrics", "metrics.txt")
    for component in status.get("components", ()):
        name = str(component.get("name", ""))
        if name and "/" not in name:
            _add_answer(bundle, address, f"/debug/logs/{name}", f"logs/{name}.txt")


def _add_answer(bundle: Bundle, address: tuple[str, int], path: str, entry: str) -> None:
    bundle.attempt(f"GET {path}", lambda: bundle.add_text(entry, _get(address, path)))


def _get(address: tuple[str, int], path: str) -> str:
    import http.client

    connection = http.client.HTTPConnection(*address, timeout=STEP_TIMEOUT)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        body = response.read(ANSWER_LIMIT)
    finally:
        connection.close()
    if response.status != 200:
        raise RuntimeError(f"GET {path}: HTTP {response.status}")
    return body.decode(errors="replace")


def _plan(bundle: Bundle, planned: Any) -> None:
    """The effective config, the plan, the files the plan writes and the kubeconfig it names."""
    from nodehost.cli.start import plan_as_dict
    from nodehost.config.dump import dump_node_config

    _, plan, config = planned
    bundle.entries["config/node-config.yaml"] = redact_document(dump_node_config(config).encode())
    bundle.add_json("config/plan.json", plan_as_dict(plan))
    for component in plan.components:
        for spec in component.plan.files:
            bundle.entries[f"config/files{os.path.abspath(spec.path)}"] = redact_document(
                spec.content
            )
    kubeconfig = getattr(config, "master_kube_config", "")
    if kubeconfig and os.path.isfile(kubeconfig):
        from nodehost.fileread import TEXT_LIMIT, read_file

        bundle.entries[f"config/files{kubeconfig}"] = redact_document(
            read_file(kubeconfig, TEXT_LIMIT)
        )


def _network(bundle: Bundle) -> None:
    """Addresses, routes and links (``ip -j``), and the CNI and KUBE chains of iptables."""
    for name, argv in (
        ("addresses", ["ip", "-j", "address"]),
        ("routes", ["ip", "-j", "route", "show", "table", "all"]),
        ("links", ["ip", "-j", "-d", "link"]),
    ):
        _add_output(bundle, argv, f"network/{name}.json")
    for table in ("nat", "filter", "mangle"):
        _add_output(
            bundle, ["iptables-save", "-t", table], f"network/iptables-{table}.txt", _chains
        )


def _add_output(
    bundle: Bundle, argv: list[str], entry: str, keep: Callable[[str], str] = str
) -> None:
    bundle.attempt(" ".join(argv), lambda: bundle.add_text(entry, keep(_run(argv))))


def _chains(save: str) -> str:
    """The lines of an ``iptables-save`` that name a CNI or KUBE chain."""
    return "".join(f"{line}\n" for line in save.splitlines() if any(c in line for c in _CHAINS))


def _run(argv: list[str]) -> str:
    from nodehost.binaries import which

    search = os.pathsep.join(filter(None, [os.environ.get("PATH"), "/usr/sbin:/sbin"]))
    program = which(argv[0], path=search)
    if program is None:
        raise RuntimeError(f"{argv[0]} is not installed")
    done = subprocess.run(
        [program, *argv[1:]],
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip() or done.returncode}")
    return done.stdout[:ANSWER_LIMIT]


def _cgroups(bundle: Bundle, state_dir: str) -> None:
    """The node's cgroup tree: each cgroup, its process count and memory in use."""
    from nodehost.daemon import cgroups

    base = cgroups.recorded_base(state_dir)
    if base is None:
        raise RuntimeError(f"no cgroup recorded for {state_dir}")
    lines = []
    for folder, subfolders, _ in os.walk(base):
        subfolders.sort()
        path = Path(folder)
        procs = _read(path / "cgroup.procs").split()
        memory = _read(path / "memory.current").strip() or "?"
        lines.append(f"{path}  processes={len(procs)} memory.current={memory}")
    bundle.add_text("cgroups.txt", "\n".join(lines) + "\n")


def _read(path: Path) -> str:
    try:
        return path.read_text()[:ANSWER_LIMIT]
    except OSError:
        return ""


def _readme(bundle: Bundle) -> str:
    from nodehost import __version__

    lines = [
        f"nodehost {__version__} debug bundle.  Secrets (tokens, passwords, private keys,",
        "bootstrap credentials, registry auth) are replaced by <redacted>.",
        "",
        "Entries:",
        *(f"  {name}" for name in sorted(bundle.entries)),
    ]
    if bundle.notes:
        lines += ["", "Not collected:", *(f"  {note}" for note in bundle.notes)]
    return "\n".join(lines) + "\n"


def write_bundle(bundle: Bundle, path: str, top: str) -> None:
    """Write ``bundle`` as a tar.gz at ``path`` (mode 0600, atomically), entries under ``top/``."""
    import io
    import tarfile
    import time

    from nodehost.pki.atomic import write_atomic

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name in sorted(bundle.entries):
            data = bundle.entries[name]
            info = tarfile.TarInfo(f"{top}/{name.lstrip('/')}")
            info.size, info.mode, info.mtime = len(data), 0o600, int(time.time())
            archive.addfile(info, io.BytesIO(data))
    write_atomic(Path(path), buffer.getvalue(), 0o600)
