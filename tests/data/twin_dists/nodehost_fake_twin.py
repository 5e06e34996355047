"""Another distribution's plugin registering a component named like nodehost-fake's."""

from nodehost import ComponentRecord, hookimpl
from nodehost.component import ComponentPlan


class Twin:
    def plan(self, context):
        return ComponentPlan()


@hookimpl
def nodehost_components():
    return [ComponentRecord(name="echo", summary="Clashes with nodehost-fake.", component=Twin())]
