"""Registers a component named like a built-in one (``kubelet``) next to one of its own."""

from nodehost import ComponentRecord, hookimpl
from nodehost.component import ComponentPlan


class Nothing:
    def plan(self, context):
        return ComponentPlan()


@hookimpl
def nodehost_components():
    return [
        ComponentRecord(name="kubelet", summary="An impostor.", component=Nothing()),
        ComponentRecord(name="sidecar", summary="Innocent.", component=Nothing(), default=False),
    ]
