"""A third-party plugin with a small component graph, each component a real stand-in process.

    g-root ──▶ g-left  ──▶ g-join
          └──▶ g-right ──┘
    g-solo (independent)

Every component serves /healthz on a free loopback port and is ready when it answers.
"""

import os
import socket
import sys

from nodehost import ComponentRecord, ValidationScope, hookimpl
from nodehost.component import ComponentPlan, HttpProbe, ProcessSpec

GRAPH = {
    "g-root": (),
    "g-left": ("g-root",),
    "g-right": ("g-root",),
    "g-join": ("g-left", "g-right"),
    "g-solo": (),
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class StandinComponent:
    def __init__(self, name: str) -> None:
        self.name = name

    def plan(self, context):
        port = free_port()
        program = os.path.join(os.path.dirname(sys.executable), "nodehost-standin")
        argv = (program, "--program", self.name, "--healthz", f"127.0.0.1:{port}")
        probe = HttpProbe(url=f"http://127.0.0.1:{port}/healthz", interval=0.05)
        return ComponentPlan(run=ProcessSpec(argv=argv, readiness=probe, stop_grace=5.0))


@hookimpl
def nodehost_components():
    return [
        ComponentRecord(
            name=name,
            summary=f"test component {name}",
            component=StandinComponent(name),
            default=False,
            after=after,
            validation_scope=ValidationScope.NETWORK,
        )
        for name, after in GRAPH.items()
    ]
