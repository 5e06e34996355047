"""The component graph: dependants wait for readiness, independents start together, stop reverses.

One plan of many process components::

    root ──▶ left ──┐
         └─▶ right ─┴─▶ leaf          free0 … free7 (no dependencies)
"""

from __future__ import annotations

import signal

import pytest
from hostrun import HostRun, healthz_component, marked_processes

FREE = [f"free{i}" for i in range(8)]


@pytest.fixture(scope="module")
def graph_run(tmp_path_factory):
    """One host run of the graph, shared by the tests (each checks one behaviour of it)."""
    slow = {"NODEHOST_STANDIN_READY_DELAY": "0.4"}
    components = [
        healthz_component("root", env=slow),
        healthz_component("left", after=["root"], env=slow),
        healthz_component("right", after=["root"], env=slow),
        healthz_component("leaf", after=["left", "right"]),
        *({"name": name, "argv": ["sleep", "600"]} for name in FREE),
    ]
    run = HostRun(tmp_path_factory.mktemp("graph"), components, [], None)
    try:
        run.wait_ready()
        run.signal(signal.SIGTERM)
        assert run.wait() == 0, run.stderr()
        yield run
    finally:
        run.cleanup()


def times(run, hook: str) -> dict[str, float]:
    return {e["name"]: e["time"] for e in run.hooks() if e["hook"] == hook}


def test_a_component_starts_only_after_what_it_names_is_ready(graph_run) -> None:
    started, ready = times(graph_run, "component_started"), times(graph_run, "component_ready")
    assert started["left"] >= ready["root"]
    assert started["right"] >= ready["root"]
    assert started["leaf"] >= max(ready["left"], ready["right"])


def test_independent_components_start_together(graph_run) -> None:
    started, ready = times(graph_run, "component_started"), times(graph_run, "component_ready")
    # every free component and the root started before the root was ready ...
    assert all(started[name] < ready["root"] for name in [*FREE, "root"])
    # ... and the two siblings both started before either of them was ready
    assert max(started["left"], started["right"]) < min(ready["left"], ready["right"])


def test_stop_runs_in_reverse_dependency_order(graph_run) -> None:
    stopped = graph_run.hook_names("component_stopped")
    assert sorted(stopped) == sorted(["root", "left", "right", "leaf", *FREE])
    position = {name: index for index, name in enumerate(stopped)}
    assert position["leaf"] < position["left"] < position["root"]
    assert position["leaf"] < position["right"] < position["root"]


def test_every_component_was_ready_once_and_nothing_is_left(graph_run) -> None:
    assert sorted(graph_run.hook_names("component_ready")) == sorted(
        ["root", "left", "right", "leaf", *FREE]
    )
    assert marked_processes(graph_run.state_dir) == []
