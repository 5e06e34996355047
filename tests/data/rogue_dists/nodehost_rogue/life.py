"""Observes the node badly: raises when a component becomes ready."""

from nodehost import hookimpl


@hookimpl
def nodehost_component_ready(name, seconds):
    raise ValueError(f"rogue cannot stand {name} being ready")
