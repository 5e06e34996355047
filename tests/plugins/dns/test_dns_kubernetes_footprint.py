"""What following the API server costs the process: the DNS record source's imports and memory.

The ``kubernetes`` source (and with it :mod:`nodehost.api.client`) runs in the
node's own process, so every module it imports stays in the node's resident
set: lightkube with httpx, httpcore, anyio, h2 and msgspec cost about 9 MiB there.
A fresh interpreter lists a few hundred services through the source and says
which modules that loaded and how far its peak resident set rose.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from nodehost.testing import apiserver

from .dnskube import service_body

#: Third-party packages the API client and the source may load besides the fixed ones
#: (PyYAML, pluggy: loaded before the count starts).
ALLOWED = {"h11"}
#: Peak growth allowed (KiB) for importing the source and its client, listing SERVICES
#: services and watching them: 7.2 MiB with h11 (the DNS model's modules are 1.5 of it),
#: 18 MiB with lightkube (CPython 3.11).
PEAK_GROWTH_KIB = 12 * 1024
SERVICES = 300

CHILD = textwrap.dedent(
    """
    import asyncio, json, sys
    import nodehost, pluggy, yaml  # fixed dependencies: not counted

    def status(key):
        with open("/proc/self/status") as lines:
            return next(int(line.split()[1]) for line in lines if line.startswith(key))

    before, start = set(sys.modules), status("VmRSS:")
    from nodehost.plugins.dns.records import ClusterRecords
    from nodehost.plugins.dns.sources.kubernetes import KubernetesSource

    class Silent:
        def __getattr__(self, name):
            return lambda *args, **fields: None

    async def follow():
        store = ClusterRecords()
        sink = store.sink("kubernetes")
        synced = asyncio.Event()
        sink.on_synced = synced.set
        running = asyncio.ensure_future(KubernetesSource(sys.argv[1], log=Silent()).run(sink))
        await asyncio.wait_for(synced.wait(), 60)
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        return len(store.services)

    services = asyncio.run(follow())
    print(json.dumps({"services": services, "modules": sorted(set(sys.modules) - before),
                      "growth_kib": status("VmHWM:") - start}))
    """
)


def follow_in_a_fresh_process(kubeconfig: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(kubeconfig)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_following_the_api_server_loads_no_http_stack_and_little_memory(tmp_path: Path) -> None:
    server = apiserver.TestApiServer(tmp_path / "api")
    for index in range(SERVICES):
        server.store.put("services", service_body(f"s{index}", "default", "172.30.0.1"))
    server.come_up()
    try:
        seen = follow_in_a_fresh_process(server.admin_kubeconfig)
    finally:
        server.go_down()
    assert seen["services"] == SERVICES
    packages = {name.split(".")[0] for name in seen["modules"]}
    third_party = packages - set(sys.stdlib_module_names) - {"nodehost"}
    assert third_party <= ALLOWED, f"the API client loads {sorted(third_party - ALLOWED)}"
    assert seen["growth_kib"] < PEAK_GROWTH_KIB, seen["growth_kib"]
